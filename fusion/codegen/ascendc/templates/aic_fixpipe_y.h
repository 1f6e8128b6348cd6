            // y straight from L0C: act2 on the fly, fp32 -> fp16. L0C's NZ is NC1HWC0: 16-channel
            // column blocks, oh*ow pixels (32 B each) apart in GM; one valid tile row per Fixpipe
            FixpipeParamsV220 fp;
            fp.nSize = cbo * C0;
            fp.srcStride = thwAl;
            fp.dstStride = tl.oh * tl.ow * PB;
            fp.reluEn = @RELU@;
            fp.quantPre = QuantMode_t::F322F16;
            if (tl.tw == tl.ow) {  // full-width tiles: the valid rows are contiguous in L0C and GM
                fp.mSize = ohv * tl.ow;
                Fixpipe<T, float, CFG_NZ>(yGm[OutOffset(o0)], c, fp);
            } else {
                fp.mSize = owv;
                for (uint32_t r = 0; r < ohv; ++r)
                    Fixpipe<T, float, CFG_NZ>(yGm[OutOffset(o0) + r * tl.ow * C0], c[r * tl.tw * C0], fp);
            }
