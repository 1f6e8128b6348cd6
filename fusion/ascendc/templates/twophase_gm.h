    // GM: the block's tensors; the user workspace holds [SyncAll flags | DW result (c1, mAl, C0) | pre-activation (co1, mAl, C0)]
    __aicore__ inline void SetGm(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @RES_PARAM@GM_ADDR y,
                                 GM_ADDR usr, const @TILING@& t)
    {
        tl = t;
        thw = t.th * t.tw;
        thwAl = t.thwAl;
        xGm.SetGlobalBuffer((__gm__ T*)x, t.batch * t.c1 * t.h * t.w * C0);
        wDwGm.SetGlobalBuffer((__gm__ T*)w_dw, t.c1 * t.kh * t.kw * C0);
        bDwGm.SetGlobalBuffer((__gm__ float*)b_dw, t.c1 * C0);
        wPwGm.SetGlobalBuffer((__gm__ T*)w_pw, t.co1 * t.c1 * C0 * C0);
        bPwGm.SetGlobalBuffer((__gm__ float*)b_pw, t.co1 * C0);
@RES_GM_SET@        yGm.SetGlobalBuffer((__gm__ T*)y, t.batch * t.co1 * t.oh * t.ow * C0);
        syncGm.SetGlobalBuffer((__gm__ int32_t*)usr, t.wsSync / sizeof(int32_t));
        dwGm.SetGlobalBuffer((__gm__ T*)(usr + t.wsSync), t.c1 * t.mAl * C0);
        preGm.SetGlobalBuffer((__gm__ T*)(usr + t.wsSync + t.c1 * t.mAl * C0 * sizeof(T)), t.wsPre / sizeof(T));
    }
