    GlobalTensor<T> xGm, wDwGm, wPwGm, yGm, dwGm, preGm;
    GlobalTensor<float> bDwGm, bPwGm;
    GlobalTensor<int32_t> syncGm;
@TP_SE_GM_DECL@@RES_GM_DECL@@TP_EYE_DECL@    LocalTensor<T> wDw, bRes;
    LocalTensor<float> bDw, bPw, bPwL1;
    uint32_t m0 = 0, rows = 0, mEnd = 0, o0 = 0, cbo = 0;  // the current (M, N) tile of the GEMM
    uint32_t dwSlot = 0;  // the copy of dw_out the current DW unit uses
@GEOM_MEMBERS@
