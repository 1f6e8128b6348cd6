
extern "C" __global__ __aicore__ void @SYM@(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @SE_PARAMS@@RES_PARAM@GM_ADDR y,
                                            GM_ADDR workspace, GM_ADDR tiling)
{
@TASK_TYPE@    GET_TILING_DATA_WITH_STRUCT(@TILING@, t, tiling);
    GM_ADDR usr = GetUserWorkspace(workspace);
@ENTRY_BODY@}
