    // its fractals up to aheadN (i + 1) / units, after GEMM tile i of the core's `units` (the tile's own
    // loads are queued first, so the pieces fill the MTE2 time the cube-bound tiles leave)
    __aicore__ inline void AheadPiece(uint32_t i, uint32_t units)
    {
        const uint32_t upto = aheadN * (i + 1) / units;
        if (upto > aheadDone) {
            DataCopy(aheadL1[aheadDone * C0 * C0], aheadGm[aheadDone * C0 * C0], (upto - aheadDone) * C0 * C0);
            aheadDone = upto;
        }
    }

    // the rest (all of it on a core with no GEMM tile here), then every pipe drained: the weights are in
    // L1 before the SyncAll that ends the step
    __aicore__ inline void AheadEnd()
    {
        if (!aheadOn) return;
        AheadPiece(0, 1);
        PipeBarrier<PIPE_ALL>();
    }
