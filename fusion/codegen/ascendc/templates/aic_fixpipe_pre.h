            // the pre-activation (fp16) to the tile's slot (co1, thw, C0); the AIV finishes it
            FixpipeParamsV220 fp;
            fp.nSize = cbo * C0;
            fp.mSize = thw;
            fp.srcStride = thwAl;
            fp.dstStride = thw * PB;
            fp.reluEn = false;
            fp.quantPre = QuantMode_t::F322F16;
            Fixpipe<T, float, CFG_NZ>(preGm[PreSlot() + o0 * thw * C0], c, fp);
