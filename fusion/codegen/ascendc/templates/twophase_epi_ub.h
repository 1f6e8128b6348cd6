            {   // 310P: L0C -> UB one output block at a time, then bias, act2, [+res], cast, y out
@TP_RES_IN@                LocalTensor<float> acc = yAccBuf.Get<float>();
                DataCopyParams p;
                p.blockCount = 1;
                p.blockLen = static_cast<uint16_t>(rows / 16);  // 16x16 fp32 fractals of one output block
                p.srcGap = 0;
                p.dstGap = 0;
                DataCopyEnhancedParams e;
                e.blockMode = BlockMode::BLOCK_MODE_MATRIX;
                for (uint32_t j = 0; j < cbo; ++j) DataCopy(acc[j * rows * C0], c[j * rows * C0], p, e);
                thw = rows;  // EpilogueBlock works on thw pixels: the GEMM tile's rows (phase 1 is over)
                LocalTensor<T> yT = yQue.AllocTensor<T>();
                for (uint32_t j = 0; j < cbo; ++j) EpilogueBlock(acc[j * rows * C0], o0 + j, @TP_RES_ARG@yT[j * rows * C0]);
                yQue.EnQue(yT);
@TP_RES_FREE@                yT = yQue.DeQue<T>();
                CopyRows(yT, yGm, true);
                yQue.FreeTensor(yT);
            }
