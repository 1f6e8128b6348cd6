    // GM: the block's tensors; the user workspace holds [SyncAll flags | DW result (c1, mAl, C0) | pre-activation (co1, mAl, C0)
    // | the residual GEMM's identity fractal (schedules/twophase.res_in_cube)]
    // (an identity DW whose x is the A layout: the GEMM's A is x itself, dwGm points at it)
    __aicore__ inline void SetGm(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @SE_PARAMS@@RES_PARAM@GM_ADDR y,
                                 GM_ADDR usr, const @TILING@& t)
    {
@GM_TENSORS@        syncGm.SetGlobalBuffer((__gm__ int32_t*)usr, t.wsSync / sizeof(int32_t));
        dwGm.SetGlobalBuffer(@DW_GM@, t.c1 * t.mAl * C0);
        preGm.SetGlobalBuffer((__gm__ T*)(usr + t.wsSync@WS_SE@ + t.c1 * t.mAl * C0 * sizeof(T)), t.wsPre / sizeof(T));
@TP_EYE_GM@@TP_SE_GM@    }
