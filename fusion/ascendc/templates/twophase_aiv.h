// ---- AIV: phase 1 (DW units -> GM workspace)[, phase 3 (epilogue of the GEMM tiles)] -------
class TwoPhaseAiv@OPTYPE@ {
public:
    __aicore__ inline TwoPhaseAiv@OPTYPE@() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @RES_PARAM@GM_ADDR y,
                                GM_ADDR usr, const @TILING@& t)
    {
        SetGm(x, w_dw, b_dw, w_pw, b_pw, @RES_ARG@y, usr, t);
        // one InitBuffer per KernelPlan buffer in UB: bytes per copy x copies
@INITS@
    }

    __aicore__ inline void Process()
    {
        DwPhase(GetBlockIdx());
        SyncAll<false>();  // AIVs and AICs: the DW workspace is complete before any GEMM reads it
@PHASE3@    }

private:
@TP_GM@
@GEOMETRY@
@DW@
@TP_DW@
@TP_GEMM_TILE@
@TP_EPI@
    TPipe pipe;
@MEMBERS@
@TP_MEMBERS@};

// ---- AIC: phase 2 (the PW GEMM) ------------------------------------------------------------
class TwoPhaseAic@OPTYPE@ {
public:
    __aicore__ inline TwoPhaseAic@OPTYPE@() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, GM_ADDR w_pw, GM_ADDR b_pw, @RES_PARAM@GM_ADDR y,
                                GM_ADDR usr, const @TILING@& t)
    {
        SetGm(x, w_dw, b_dw, w_pw, b_pw, @RES_ARG@y, usr, t);
        // one InitBuffer per KernelPlan buffer in L1 / L0A / L0B / L0C / BT: bytes per copy x copies
@AIC_INITS@
    }

    __aicore__ inline void Process()
    {
        SyncAll<false>();  // the DW workspace is complete
        GemmPhase(GetBlockIdx());
@AIC_PHASE3@    }

private:
@TP_GM@
@TP_GEMM_TILE@
@TP_GEMM@
    TPipe pipe;
@AIC_MEMBERS@
@TP_MEMBERS@};
