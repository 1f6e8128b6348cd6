
extern "C" __global__ __aicore__ void @SYM@(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @SLOPE_PARAMS@@RES_PARAM@GM_ADDR y,
                                            GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);  // per block: 1 AIC (PW) + 2 AIVs (DW, epilogue)
    GET_TILING_DATA_WITH_STRUCT(@TILING@, t, tiling);
    __gm__ T* usr = (__gm__ T*)GetUserWorkspace(workspace);  // the hand-off slots
    if ASCEND_IS_AIV {
        Aiv@OPTYPE@ op;
        op.Init(@AIV_ARGS@);
        op.Process();
    }
    if ASCEND_IS_AIC {
        Aic@OPTYPE@ op;
        op.Init(@AIC_ARGS@);
        op.Process();
    }
}
