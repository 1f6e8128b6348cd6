    // ---- the next block's resident PW weights, loaded beside this task's GEMM tiles (a chain in image
    // chunks: schedules/wave.ahead_loads) into the L1 region where the next block's kernel lays out its
    // bResQue, one this block's buffers do not use (schedules/wave.ahead_layout); its GEMM task runs warm.
    // The next block's geometry (its tiling's mTiles, coSteps, gemmCores, cob, co1, c1) picks this
    // core's N tile as its own PreloadB does; l1Off: the region's offset in @AHEAD_BUF@
    __aicore__ inline void SetAhead(GM_ADDR w, uint32_t mTiles, uint32_t coSteps, uint32_t cores, uint32_t cob,
                                    uint32_t co1, uint32_t c1, uint32_t l1Off)
    {
        const uint32_t core = GetBlockIdx();
        aheadOn = true;
        aheadN = 0;
        aheadDone = 0;
        if (UnitsOf(core, mTiles * coSteps, cores) == 0) return;
        const uint32_t j = UnitInner(UnitAt(core, 0, cores), coSteps);
        const uint32_t o = BlockStart(j, cob), n = BlockLen(j, cob, co1);
        aheadGm.SetGlobalBuffer((__gm__ T*)w + o * c1 * C0 * C0, n * c1 * C0 * C0);
        aheadL1 = @AHEAD_BUF@.Get<T>()[l1Off / sizeof(T)];
        aheadN = n * c1;
    }
