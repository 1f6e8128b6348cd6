    // ---- the resident PW weights (plan.b_resident): GEMM core g's tiles u = g, g + gemmCores, ...
    // all lie in N tile g mod coSteps; its cbo x C1 FRACTAL_Z fractals are one run in GM
    __aicore__ inline void PreloadB(uint32_t core)
    {
        if (core >= tl.gemmCores || core >= tl.mTiles * tl.coSteps) return;
        const uint32_t o = (core % tl.coSteps) * tl.cob, n = tl.co1 - o < tl.cob ? tl.co1 - o : tl.cob;
        LocalTensor<T> b = bResQue.AllocTensor<T>();
        DataCopy(b, wPwGm[o * tl.c1 * C0 * C0], n * tl.c1 * C0 * C0);
        bResQue.EnQue(b);
    }
