    __aicore__ inline void CopyOut(uint32_t q)
    {
        @CO_STEP@
        LocalTensor<T> yT = yQue.DeQue<T>();
        for (uint32_t c = 0; c < cbo; ++c) DataCopy(yGm[OutOffset(o0 + c)], yT[c * thw * C0], OutRows(true));
        yQue.FreeTensor(yT);
    }
