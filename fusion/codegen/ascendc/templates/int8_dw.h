    __aicore__ inline void Dw(uint32_t n, uint32_t c1, uint32_t th, uint32_t tw, uint32_t twp, uint32_t ih,
                              uint32_t iw, uint32_t gr, uint32_t gc, uint32_t rb, uint32_t cb, uint32_t rr,
                              uint32_t rc)
    {
        using namespace @NS@;
        LocalTensor<XT> xq = xqB.Get<XT>();
        LocalTensor<half> xh = xhB.Get<half>();
        LocalTensor<float> xf = xfB.Get<float>();
        LocalTensor<float> acc = accB.Get<float>();
        DataCopyParams p;
        p.blockCount = rr;
        p.blockLen = rc;
        p.srcGap = W - rc;
        p.dstGap = 0;
        DataCopy(xq, xGm[(((uint64_t)n * C1 + c1) * H + gr) * W * PIX + gc * PIX], p);
        PipeBarrier<PIPE_ALL>();
        Cast(xh, xq, RoundMode::CAST_NONE, rr * rc * PIX);
        Duplicate(xf, X_ZP, (ih * iw + 1) * PIX);     // padding reads x_zp (0 after the recentring)
        PipeBarrier<PIPE_ALL>();
        for (uint32_t r = 0; r < rr; ++r)
            Cast(xf[((rb + r) * iw + cb) * PIX], xh[r * rc * PIX], RoundMode::CAST_NONE, rc * PIX);
        PipeBarrier<PIPE_ALL>();
        Adds(xf, xf, -X_ZP, (ih * iw + 1) * PIX);
        Duplicate(acc, 0.0f, th * twp * PIX);
        PipeBarrier<PIPE_ALL>();
        LocalTensor<float> wdw = wDwB.Get<float>();
        for (uint32_t i = 0; i < KH; ++i)
            for (uint32_t j = 0; j < KW; ++j) {
                LocalTensor<float> wt = wdw[(c1 * KH * KW + i * KW + j) * WSTR];
                for (uint32_t r = 0; r < th; ++r) {
                    LocalTensor<float> src = xf[((r * SH + i) * iw + j) * PIX];
                    if constexpr (SW == 1) {   // two pixels a repeat; the tap's 32 weights stored twice
                        MulAddDst(acc[r * twp * PIX], src, wt, (uint64_t)64, (uint8_t)(twp / 2), {1, 1, 1, 8, 8, 0});
                    } else {                   // one pixel a repeat, SW pixels apart
                        MulAddDst(acc[r * twp * PIX], src, wt, (uint64_t)32, (uint8_t)tw,
                                  {1, 1, 1, 4, (uint8_t)(4 * SW), 0});
                    }
                }
            }
        PipeBarrier<PIPE_ALL>();
        LocalTensor<float> cdw = cDwB.Get<float>();
        for (uint32_t p0 = 0; p0 < th * twp; p0 += 255) {   // + bias: one pixel a repeat
            const uint8_t reps = (uint8_t)((th * twp - p0 < 255) ? th * twp - p0 : 255);
            Add(acc[p0 * PIX], acc[p0 * PIX], cdw[c1 * 64], (uint64_t)32, reps, {1, 1, 1, 4, 4, 0});
        }
        PipeBarrier<PIPE_V>();
        for (uint32_t p0 = 0; p0 < th * twp; p0 += 255) {   // * mult
            const uint8_t reps = (uint8_t)((th * twp - p0 < 255) ? th * twp - p0 : 255);
            Mul(acc[p0 * PIX], acc[p0 * PIX], cdw[c1 * 64 + 32], (uint64_t)32, reps, {1, 1, 1, 4, 4, 0});
        }
        PipeBarrier<PIPE_V>();
        Requant(acc, th * twp * PIX, DW_LO, DW_HI);
        Adds(acc, acc, DW_ZP, th * twp * PIX);
        PipeBarrier<PIPE_V>();
        Cast(xh, acc, RoundMode::CAST_NONE, th * twp * PIX);
        PipeBarrier<PIPE_V>();
        Cast(qB.Get<int8_t>(), xh, RoundMode::CAST_NONE, th * twp * PIX);
        PipeBarrier<PIPE_ALL>();
    }

    // clamp to [lo, hi] (the range minus the zero point), then round half to even in place
    __aicore__ inline void Requant(const LocalTensor<float>& v, uint32_t count, float lo, float hi)
    {
        using namespace @NS@;
        Maxs(v, v, lo, count);
        PipeBarrier<PIPE_V>();
        Mins(v, v, hi, count);
        PipeBarrier<PIPE_V>();
        Adds(v, v, RINT_MAGIC, count);
        PipeBarrier<PIPE_V>();
        Adds(v, v, -RINT_MAGIC, count);
        PipeBarrier<PIPE_V>();
    }
