
extern "C" __global__ __aicore__ void @SYM@(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @SLOPE_PARAMS@@RES_PARAM@GM_ADDR y,
                                            GM_ADDR workspace, GM_ADDR tiling)
{
@TASK_TYPE@    (void)workspace;
    GET_TILING_DATA_WITH_STRUCT(@TILING@, t, tiling);
    Kernel@OPTYPE@ op;
    op.Init(x, w_dw, b_dw, w_pw, b_pw, @SLOPE_ARGS@@RES_ARG@y, t);
    op.Process();
}
