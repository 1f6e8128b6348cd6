    // ---- the residual GEMM's identity (schedules/twophase.res_in_cube): DW core 0 writes one
    // 16 x 16 fractal to the workspace before its units; the SyncAll makes it visible to every AIC
    __aicore__ inline void MakeEye()
    {
        LocalTensor<T> e = eyeUbQue.AllocTensor<T>();
        Duplicate(e, static_cast<T>(0), C0 * C0);
        PipeBarrier<PIPE_V>();
        uint64_t top[2] = {@EYE_TOP@}, bottom[2] = {@EYE_BOTTOM@};   // the diagonal of rows 0-7 and 8-15
        Duplicate(e, static_cast<T>(1), top, 1, 1, 8);
        Duplicate(e[8 * C0], static_cast<T>(1), bottom, 1, 1, 8);
        eyeUbQue.EnQue(e);
        e = eyeUbQue.DeQue<T>();
        DataCopy(eyeGm, e, C0 * C0);
        eyeUbQue.FreeTensor(e);
    }
