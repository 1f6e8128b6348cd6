    // fp32 source: per tap one MulAddDst per channel half h (channels 8h..8h+7 are DataBlock h of
    // a pixel): lane l is pixel l/8 (dst block stride 2 = one pixel, source block stride 2*sw),
    // the 8 taps of half h one DataBlock read by every lane group (src1 strides 0). tapForm 1
    // (schedules/isa.tap_columns): per group of 8 output columns, its repeats walking the rows
    // (dst repeat stride 2*tw, source 2*sh*iw DataBlocks); else per output row. A ragged last
    // group / repeat is masked.
    __aicore__ inline void TapTile(const LocalTensor<float>& dst, const LocalTensor<T>& src, const LocalTensor<T>& wk)
    {
        if (tl.tapForm == 1) {
            const BinaryRepeatParams rp(2, 2 * tl.sw, 0, 2 * tl.tw, 2 * tl.sh * tl.iw, 0);
            for (uint32_t h = 0; h < 2; ++h) {
                for (uint32_t g = 0; g < tl.tw; g += 8) {
                    const uint32_t n = tl.tw - g < 8 ? tl.tw - g : 8;
                    for (uint32_t r0 = 0; r0 < tl.th; r0 += MAX_REPEAT) {
                        const uint32_t reps = tl.th - r0 < MAX_REPEAT ? tl.th - r0 : MAX_REPEAT;
                        MulAddDst(dst[(r0 * tl.tw + g) * C0 + h * 8], src[(r0 * tl.sh * tl.iw + g * tl.sw) * C0 + h * 8],
                                  wk[h * 8], static_cast<uint64_t>(n * 8), reps, rp);
                    }
                }
            }
            return;
        }
        for (uint32_t r = 0; r < tl.th; ++r)
            TapRow(dst[r * tl.tw * C0], src[r * tl.sh * tl.iw * C0], wk);
    }
    __aicore__ inline void TapRow(const LocalTensor<float>& dst, const LocalTensor<T>& src, const LocalTensor<T>& wk)
    {
        const uint32_t full = tl.tw / 8, rem = tl.tw % 8;
        const BinaryRepeatParams rp(2, 2 * tl.sw, 0, 16, 16 * tl.sw, 0);
        for (uint32_t h = 0; h < 2; ++h) {
            for (uint32_t r0 = 0; r0 < full; r0 += MAX_REPEAT) {
                const uint32_t reps = full - r0 < MAX_REPEAT ? full - r0 : MAX_REPEAT;
                MulAddDst(dst[r0 * 8 * C0 + h * 8], src[r0 * 8 * tl.sw * C0 + h * 8], wk[h * 8],
                          static_cast<uint64_t>(64), reps, rp);
            }
            if (rem != 0)
                MulAddDst(dst[full * 8 * C0 + h * 8], src[full * 8 * tl.sw * C0 + h * 8], wk[h * 8],
                          static_cast<uint64_t>(rem * 8), 1, rp);
        }
    }
