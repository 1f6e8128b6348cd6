            {   // y straight from L0C (bias added by the Mmad, act2 on the fly): one Fixpipe per image run
                const uint32_t ohw = tl.oh * tl.ow;
                FixpipeParamsV220 fp;
                fp.nSize = cbo * C0;
                fp.srcStride = rows;
                fp.dstStride = ohw * PB;
                fp.reluEn = @RELU@;
                fp.quantPre = QuantMode_t::F322F16;
                for (uint32_t r = m0; r < mEnd;) {
                    const uint32_t img = r / ohw, end = (img + 1) * ohw < mEnd ? (img + 1) * ohw : mEnd;
                    fp.mSize = end - r;
                    Fixpipe<T, float, CFG_NZ>(yGm[((img * tl.co1 + o0) * ohw + r - img * ohw) * C0], c[(r - m0) * C0], fp);
                    r = end;
                }
            }
