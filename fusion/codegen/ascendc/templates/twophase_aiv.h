// ---- AIV: phase 1 (DW units -> GM workspace)[, phase 3 (epilogue of the GEMM tiles)] -------
class TwoPhaseAiv@OPTYPE@ {
public:
@TP_INIT_MAIN@@INITS@
    }

    __aicore__ inline void Process()
    {
@PROCESS_AIV@    }

    // phase k alone (a chain in image chunks: one phase of one chunk per step, schedules/wave.py)
    __aicore__ inline void RunPhase(uint32_t k)
    {
@RUN_AIV@    }

private:
@TP_GM@
@GEOMETRY@
@DW@
@TP_GEMM_TILE@
@PHASES_AIV@
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
@PROCESS_AIC@    }

    // phase k alone (a chain in image chunks: one phase of one chunk per step, schedules/wave.py);
    // warm: this AIC's N tile of resident PW weights is still in L1 from its task before, the same
    // block's GEMM on another chunk (schedules/wave.warm_tasks)
    __aicore__ inline void RunPhase(uint32_t k, bool warm = false)
    {
        (void)warm;
@RUN_AIC@    }
@TP_AHEAD_SET@
private:
@TP_GM@
@TP_GEMM_TILE@
@PHASES_AIC@    TPipe pipe;
@AIC_MEMBERS@
@TP_MEMBERS@};
