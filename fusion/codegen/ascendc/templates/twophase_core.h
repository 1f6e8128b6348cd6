// ---- one AI core (vector + cube): phase 1, SyncAll, phase 2 ---------------------------------
class TwoPhase@OPTYPE@ {
public:
@TP_INIT_MAIN@@INITS@
    }

    __aicore__ inline void Process()
    {
@PROCESS@    }

private:
@TP_GM@
@GEOMETRY@
@DW@
@TP_GEMM_TILE@
@PHASES@
@TP_PREFETCH_FN@    TPipe pipe;
@MEMBERS@
@TP_MEMBERS@};
