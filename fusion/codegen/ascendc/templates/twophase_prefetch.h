    // ---- reads ahead into L2 (KernelPlan.prefetch; schedules/prefetch.py): @PF_BYTES@ bytes of a later
    // chain member's PW weights, in pieces of @PF_PIECE@ B dealt over the DW cores as their units are,
    // spread over each core's units; they land in one L1 scratch that nothing reads: only the L2 fill
    // matters. A block run on its own (no SetPrefetch) reads nothing ahead.
public:
    __aicore__ inline void SetPrefetch(GM_ADDR src)
    {
        pfGm.SetGlobalBuffer((__gm__ T*)src);
        pipe.InitBuffer(pfBuf, @PF_PIECE@);
        pfOn = true;
    }

private:
    __aicore__ inline void Prefetch(uint32_t core, uint32_t k, uint32_t mine)
    {
        if (!pfOn) return;
        constexpr uint32_t bytes = @PF_BYTES@, piece = @PF_PIECE@;
        const uint32_t d = DwCores();  // the DW cores with units (the first d)
        const uint32_t own = UnitsOf(core, (bytes + piece - 1) / piece, d);
        const uint32_t j0 = PieceFirst(k, mine, own), n = PiecesAfter(k, mine, own);
        LocalTensor<T> scratch = pfBuf.Get<T>();
        for (uint32_t j = j0; j < j0 + n; ++j) {
            const uint32_t i = UnitAt(core, j, d);
            DataCopy(scratch, pfGm[i * (piece / sizeof(T))], BlockLen(i, piece, bytes) / sizeof(T));
        }
    }

    GlobalTensor<T> pfGm;
    TBuf<TPosition::A1> pfBuf;
    bool pfOn = false;

