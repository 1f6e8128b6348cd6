    __aicore__ inline @CLASS@() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @SE_PARAMS@@RES_PARAM@GM_ADDR y,
                                GM_ADDR usr, const @TILING@& t)
    {
        SetGm(x, w_dw, b_dw, w_pw, b_pw, @SE_ARGS@@RES_ARG@y, usr, t);
        // one InitBuffer per KernelPlan buffer in @SCOPES@: bytes per copy x copies
