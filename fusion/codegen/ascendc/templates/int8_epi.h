    // the epilogue of co-step j0 (nb fractal columns) of a tile: the int32 tile is in cB (NZ: a
    // fractal column's thwAl rows x 16 channels after another); bias, requant, y out
    __aicore__ inline void Epilogue(uint32_t n, uint32_t r0, uint32_t c0, uint32_t thw, uint32_t thwAl,
                                    uint32_t th, uint32_t tw, uint32_t j0, uint32_t nb)
    {
        using namespace @NS@;
        const uint32_t m1 = thwAl / 16;
        LocalTensor<int32_t> c = cB.Get<int32_t>();
        LocalTensor<int32_t> bpw = bPwB.Get<int32_t>();
        LocalTensor<float> mpw = mPwB.Get<float>();
        LocalTensor<float> cf = cfB.Get<float>();
        for (uint32_t jb = 0; jb < nb; ++jb)   // + bias (int32, exact), 16 channels a fractal row
            for (uint32_t r0 = 0; r0 < thwAl; r0 += 255) {
                const uint8_t reps = (uint8_t)((thwAl - r0 < 255) ? thwAl - r0 : 255);
                Add(c[jb * m1 * 256 + r0 * 16], c[jb * m1 * 256 + r0 * 16], bpw[(j0 + jb) * 16], (uint64_t)16,
                    reps, {1, 1, 1, 2, 2, 0});
            }
        PipeBarrier<PIPE_V>();
        Cast(cf, c, RoundMode::CAST_NONE, m1 * nb * 256);
        PipeBarrier<PIPE_V>();
        for (uint32_t jb = 0; jb < nb; ++jb)
            for (uint32_t r0 = 0; r0 < thwAl; r0 += 255) {
                const uint8_t reps = (uint8_t)((thwAl - r0 < 255) ? thwAl - r0 : 255);
                Mul(cf[jb * m1 * 256 + r0 * 16], cf[jb * m1 * 256 + r0 * 16], mpw[(j0 + jb) * 16], (uint64_t)16,
                    reps, {1, 1, 1, 2, 2, 0});
            }
        PipeBarrier<PIPE_V>();
        Requant(cf, m1 * nb * 256, PW_LO, PW_HI);
        // + zp, from the NZ image (16 channels a row) into the pixel-major y tile (32 a pixel)
        LocalTensor<float> yf = yfB.Get<float>();
        for (uint32_t jb = 0; jb < nb; ++jb)
            for (uint32_t p0 = 0; p0 < thw; p0 += 255) {
                const uint32_t cnt = (thw - p0 < 255) ? thw - p0 : 255;
                Adds(yf[((jb / 2) * thw + p0) * PIX + (jb % 2) * 16], cf[jb * m1 * 256 + p0 * 16], PW_ZP,
                     (uint64_t)16, (uint8_t)cnt, {1, 1, 4, 2});
            }
        PipeBarrier<PIPE_V>();
        const uint32_t q = (nb + 1) / 2;
        Cast(yhB.Get<half>(), yf, RoundMode::CAST_NONE, q * thw * PIX);
        PipeBarrier<PIPE_V>();
        Cast(yqB.Get<YT>(), yhB.Get<half>(), RoundMode::CAST_NONE, q * thw * PIX);
        PipeBarrier<PIPE_ALL>();
        for (uint32_t k = 0; k < q; ++k) {
            DataCopyParams o;
            o.blockCount = th;
            o.blockLen = tw;
            o.srcGap = 0;
            o.dstGap = OW - tw;
            DataCopy(yGm[(((uint64_t)n * CO1 + j0 / 2 + k) * OH + r0) * OW * PIX + c0 * PIX],
                     yqB.Get<YT>()[k * thw * PIX], o);
        }
        PipeBarrier<PIPE_ALL>();
    }
