    // fp32 source: channel k = 8h + kk uses lanes 16p + kk with both bases moved by h DataBlocks
    // (a 16-channel pixel is 2 DataBlocks); source pixel p is p*sw pixels further.
    __aicore__ inline void TapRow(const LocalTensor<float>& dst, const LocalTensor<T>& src, const T* wk)
    {
        const uint32_t full = tl.tw / 4, rem = tl.tw % 4;
        const UnaryRepeatParams rp(1, tl.sw, 8, 8 * tl.sw);
        for (uint32_t k = 0; k < C0; ++k) {
            const uint32_t h = (k / 8) * 8, kk = k % 8;
            for (uint32_t r0 = 0; r0 < full; r0 += MAX_REPEAT) {
                const uint32_t reps = full - r0 < MAX_REPEAT ? full - r0 : MAX_REPEAT;
                uint64_t mask[2] = {LaneBits(kk, 4), 0};
                Axpy(dst[r0 * 4 * C0 + h], src[r0 * 4 * tl.sw * C0 + h], wk[k], mask, reps, rp);
            }
            if (rem != 0) {
                uint64_t mask[2] = {LaneBits(kk, rem), 0};
                Axpy(dst[full * 4 * C0 + h], src[full * 4 * tl.sw * C0 + h], wk[k], mask, 1, rp);
            }
        }
    }
