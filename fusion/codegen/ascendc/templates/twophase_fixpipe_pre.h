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
            // tile i is in the workspace: signal the AIVs of this group (phase 3), having first had
            // their answer to tile i - LAG (at most LAG flags outstanding; the counters stop at 15)
            if (i >= @EPI_LAG@) CrossCoreWaitFlag(@FLAG_EPI_FREE@);
            CrossCoreSetFlag<2, PIPE_FIX>(@FLAG_EPI_PRE@);
