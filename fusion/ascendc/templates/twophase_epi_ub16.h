            {   // 310P, fp16 epilogue (plan.epi_post16): L0C -> UB one output block at a time, cast to the
                // storage dtype on the way; then bias (per block), act2 and [+res] in the storage dtype, y out
@TP_RES_IN@                LocalTensor<T> yT = yQue.AllocTensor<T>();
                DataCopyParams p;
                p.blockCount = 1;
                p.blockLen = static_cast<uint16_t>(rows / 16);  // 16x16 fractals of one output block
                p.srcGap = 0;
                p.dstGap = 0;
                DataCopyEnhancedParams e;
                e.blockMode = BlockMode::BLOCK_MODE_MATRIX;
                e.isRelu = @MOVE_RELU@;   // (plan.bias_in_cube: act2's max(., 0) on the way)
                for (uint32_t j = 0; j < cbo; ++j) DataCopy(yT[j * rows * C0], c[j * rows * C0], p, e);
@EPI16_OPS@                yQue.EnQue(yT);
@TP_RES_FREE@                yT = yQue.DeQue<T>();
                CopyRows(yT, yGm, true);
                yQue.FreeTensor(yT);
            }
