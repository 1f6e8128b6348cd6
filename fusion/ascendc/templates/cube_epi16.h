    // (plan.epi_post16) L0C -> UB one output block at a time, cast to the storage dtype on the way,
    // straight into the y tile: each block lands thwAl rows, so its fractal padding rows run into the
    // next block's place (which that block's landing overwrites next) and, for the last, into
    // y_tile's slack; then + b_pw16 per block, act2 and [+ residual] in the storage dtype
    __aicore__ inline void Epilogue(uint32_t q)
    {
        @CO_STEP@
        LocalTensor<float> c = cQue.DeQue<float>();
@RES_EPI_DEQ@        LocalTensor<T> yT = yQue.AllocTensor<T>();
        DataCopyParams p;
        p.blockCount = 1;
        p.blockLen = thwAl / 16;  // 16x16 fractals of one output block
        p.srcGap = 0;
        p.dstGap = 0;
        DataCopyEnhancedParams e;
        e.blockMode = BlockMode::BLOCK_MODE_MATRIX;
        e.isRelu = @MOVE_RELU@;   // (plan.bias_in_cube: act2's max(., 0) on the way)
        for (uint32_t j = 0; j < cbo; ++j) DataCopy(yT[j * thw * C0], c[j * thwAl * C0], p, e);
        cQue.FreeTensor(c);
        const uint32_t rows = thw;
@EPI16_OPS@        yQue.EnQue(yT);
@RES_EPI_FREE@    }
