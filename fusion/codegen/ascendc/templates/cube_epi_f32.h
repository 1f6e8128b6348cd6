    // L0C -> UB one output block at a time into dw_acc (free until the next tile's DW), then
    // bias, act2, [residual] and the cast into the y tile
    __aicore__ inline void Epilogue(uint32_t q)
    {
        @CO_STEP@
        LocalTensor<float> c = cQue.DeQue<float>();
        LocalTensor<float> acc = dwAccBuf.Get<float>();
@RES_EPI_DEQ@        LocalTensor<T> yT = yQue.AllocTensor<T>();
        DataCopyParams p;
        p.blockCount = 1;
        p.blockLen = thwAl / 16;  // 16x16 fp32 fractals of one output block
        p.srcGap = 0;
        p.dstGap = 0;
        DataCopyEnhancedParams e;
        e.blockMode = BlockMode::BLOCK_MODE_MATRIX;
        for (uint32_t j = 0; j < cbo; ++j) {
            DataCopy(acc, c[j * thwAl * C0], p, e);
            EpilogueBlock(acc, o0 + j, @RES_EPI_ARG@yT[j * thw * C0]);
        }
        cQue.FreeTensor(c);
        yQue.EnQue(yT);
@RES_EPI_FREE@    }
