    // ---- the resident PW weights (plan.b_resident): GEMM core g's tiles u = g, g + gemmCores, ...
    // all lie in N tile g mod coSteps; its cbo x C1 FRACTAL_Z fractals are one run in GM. warm: they
    // are in L1 already (a chain in image chunks: this core's task before loaded them at this address)
    __aicore__ inline void PreloadB(uint32_t core, bool warm = false)
    {
        if (UnitsOf(core, tl.mTiles * tl.coSteps, tl.gemmCores) == 0) return;
        const uint32_t j = UnitInner(UnitAt(core, 0, tl.gemmCores), tl.coSteps);
        const uint32_t o = BlockStart(j, tl.cob), n = BlockLen(j, tl.cob, tl.co1);
        LocalTensor<T> b = bResQue.AllocTensor<T>();
        if (!warm) {
            DataCopy(b, wPwGm[o * tl.c1 * C0 * C0], n * tl.c1 * C0 * C0);
        }
        bResQue.EnQue(b);
    }
