    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @SLOPE_PARAMS@@RES_PARAM@GM_ADDR y,
                                const @TILING@& t)
    {
@GM_TENSORS@