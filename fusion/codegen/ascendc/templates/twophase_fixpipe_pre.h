            {   // the fp16 pre-activation of the tile -> its workspace rows (co1, M padded, C0); phase 3 finishes it
                FixpipeParamsV220 fp;
                fp.nSize = cbo * C0;
                fp.mSize = rows;
                fp.srcStride = rows;
                fp.dstStride = tl.mAl * PB;
                fp.reluEn = false;
                fp.quantPre = QuantMode_t::F322F16;
                Fixpipe<T, float, CFG_NZ>(preGm[(o0 * tl.mAl + m0) * C0], c, fp);
            }
