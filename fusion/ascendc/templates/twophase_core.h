// ---- one AI core (vector + cube): phase 1, SyncAll, phase 2 ---------------------------------
class TwoPhase@OPTYPE@ {
public:
    __aicore__ inline TwoPhase@OPTYPE@() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @RES_PARAM@GM_ADDR y,
                                GM_ADDR usr, const @TILING@& t)
    {
        SetGm(x, w_dw, b_dw, w_pw, b_pw, @RES_ARG@y, usr, t);
        // one InitBuffer per KernelPlan buffer (UB, L1, L0A, L0B, L0C): bytes per copy x copies
@INITS@
    }

    __aicore__ inline void Process()
    {
        DwPhase(GetBlockIdx());
        SyncAll(syncGm, syncUbBuf.Get<int32_t>());  // soft: the host zeroes the flags before the launch
        GemmPhase(GetBlockIdx());
    }

private:
@TP_GM@
@GEOMETRY@
@DW@
@TP_DW@
@TP_GEMM_TILE@
@TP_GEMM@
@EPILOGUE_BLOCK@
    TPipe pipe;
@MEMBERS@
@TP_MEMBERS@};
