        tl = t;
        thw = t.th * t.tw;
        thwAl = t.thwAl;
        xGm.SetGlobalBuffer((__gm__ T*)x, t.batch * t.c1 * t.h * t.w * C0);
        wDwGm.SetGlobalBuffer((__gm__ T*)w_dw, t.c1 * t.kh * t.kw * C0);
        bDwGm.SetGlobalBuffer((__gm__ float*)b_dw, t.c1 * C0);
        wPwGm.SetGlobalBuffer((__gm__ T*)w_pw, t.co1 * t.c1 * C0 * C0);
        bPwGm.SetGlobalBuffer((__gm__ float*)b_pw, t.co1 * C0);
@RES_GM_SET@@SLOPE_SET@        yGm.SetGlobalBuffer((__gm__ T*)y, t.batch * t.co1 * t.oh * t.ow * C0);
