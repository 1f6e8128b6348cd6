    // ---- resident: w_dw, b_dw, b_pw in UB (and the whole w_pw with one co-step), once per core --
    __aicore__ inline void LoadResident()
    {
@RESIDENT_UB@        LocalTensor<float> b2 = bPwQue.AllocTensor<float>();
        DataCopy(b2, bPwGm, tl.co1 * C0);
        bPwQue.EnQue(b2);
        if (tl.wPwResident) {
            LocalTensor<T> wp = @W_QUE@.AllocTensor<T>();
            @W_LOAD@
            @W_QUE@.EnQue(wp);
            wPwRes = @W_QUE@.DeQue<T>();
        }
        wDw = wDwQue.DeQue<T>();
        bDw = bDwQue.DeQue<float>();
        bPw = bPwQue.DeQue<float>();
@DW_BIAS16@@EPI_BIAS16@@BIAS_SETUP@        // the DW taps are read by the scalar unit
        SetFlag<HardEvent::MTE2_S>(0);
        WaitFlag<HardEvent::MTE2_S>(0);
    }
