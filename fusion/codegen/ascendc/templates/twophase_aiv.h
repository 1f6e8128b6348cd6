// ---- AIV: phase 1 (DW units -> GM workspace)[, phase 3 (epilogue of the GEMM tiles)] -------
class TwoPhaseAiv@OPTYPE@ {
public:
@TP_INIT_MAIN@@INITS@
    }

    __aicore__ inline void Process()
    {
@TP_PHASE1@@PHASE3@    }

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
@TP_INIT_AIC@@AIC_INITS@
    }

    __aicore__ inline void Process()
    {
@TP_PRELOAD_AIC@@TP_WAIT1@        GemmPhase(GetBlockIdx());
    }

private:
@TP_GM@
@TP_GEMM_TILE@
@TP_GEMM@
@TP_PRELOAD@    TPipe pipe;
@AIC_MEMBERS@
@TP_MEMBERS@};
