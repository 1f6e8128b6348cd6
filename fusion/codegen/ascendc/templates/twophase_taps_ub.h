        // the taps of the channel blocks this core's units touch, each once, at their places in
        // the resident w_dw: unit k's ci-block repeats with period dwLoads (ciSteps / gcd(cores,
        // ciSteps); ciSteps dealt by row of tiles), so the first min(mine, dwLoads) units name every block it reads
        LocalTensor<T> w = wDwQue.AllocTensor<T>();
        for (uint32_t k = 0; k < mine && k < tl.dwLoads; ++k) {
            const uint32_t qk = UnitInner(DwUnit(core, k), tl.ciSteps);
            const uint32_t off = BlockStart(qk, tl.cib) * tl.kh * tl.kw * C0;
            DataCopy(w[off], wDwGm[off], BlockLen(qk, tl.cib, tl.c1) * tl.kh * tl.kw * C0);
        }
        wDwQue.EnQue(w);
        LocalTensor<float> b1 = bDwQue.AllocTensor<float>();
        DataCopy(b1, bDwGm, tl.c1 * C0);
        bDwQue.EnQue(b1);
@SLOPE_LOAD@
