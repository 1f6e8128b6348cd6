    // (plan.epi_post16) L0C -> UB one output block at a time, cast to the storage dtype on the way,
    // straight into the y tile: each block lands thwAl rows, so its fractal padding rows run into the
    // next block's place (which that block's landing overwrites next) and, for the last, into
    // y_tile's slack; then + b_pw16 per block, act2 and [+ residual] in the storage dtype
    __aicore__ inline void Epilogue(uint32_t q)
    {
        @CO_STEP@
        LocalTensor<float> c = cQue.DeQue<float>();
@RES_EPI_DEQ@        LocalTensor<T> yT = yQue.AllocTensor<T>();
@L0C_TO_Y16@        cQue.FreeTensor(c);
        const uint32_t rows = thw;
@EPI16_OPS@        yQue.EnQue(yT);
@RES_EPI_FREE@    }
