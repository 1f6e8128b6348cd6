    // ---- epilogue of one co-step: the AIC's pre-activation (fp16) read back from the tile's slot
    __aicore__ inline void CopyInPre(uint32_t q)
    {
        @CO_STEP@
        LocalTensor<T> pre = preQue.AllocTensor<T>();
        DataCopy(pre, preGm[PreSlot() + o0 * thw * C0], cbo * thw * C0);
        preQue.EnQue(pre);
@RES_COPYIN@    }

    __aicore__ inline void Epilogue(uint32_t q)
    {
        @CO_STEP@
        LocalTensor<T> pre = preQue.DeQue<T>();
        LocalTensor<float> acc = dwAccBuf.Get<float>();  // free between this tile's DW and the next's
@RES_EPI_DEQ@        LocalTensor<T> yT = yQue.AllocTensor<T>();
        for (uint32_t j = 0; j < cbo; ++j) {
            Cast(acc, pre[j * thw * C0], RoundMode::CAST_NONE, thw * C0);
            EpilogueBlock(acc, o0 + j, @RES_EPI_ARG@yT[j * thw * C0]);
        }
        preQue.FreeTensor(pre);
        yQue.EnQue(yT);
@RES_EPI_FREE@    }

@EPILOGUE_BLOCK@
@COPY_OUT@