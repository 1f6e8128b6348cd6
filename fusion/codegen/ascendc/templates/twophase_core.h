// ---- one AI core (vector + cube): phase 1, SyncAll, phase 2 ---------------------------------
class TwoPhase@OPTYPE@ {
public:
@TP_INIT_MAIN@@INITS@
    }

    __aicore__ inline void Process()
    {
@TP_PROCESS_CORE@        GemmPhase(GetBlockIdx());
    }

private:
@TP_GM@
@GEOMETRY@
@DW@
@TP_DW@
@TP_GEMM_TILE@
@TP_GEMM@
@TP_PRELOAD@@EPILOGUE_BLOCK@
    TPipe pipe;
@MEMBERS@
@TP_MEMBERS@};
