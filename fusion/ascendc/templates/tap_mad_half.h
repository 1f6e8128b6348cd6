    // fp16 source, arch 2201: one MulAddDst per tap row. Lane l of a 64-lane repeat is output
    // pixel l/16, channel l%16 (dst fp32: 8 per DataBlock, contiguous); the source pixel sits
    // (l/16)*sw DataBlocks further (blkStride = conv stride); the 16 taps are one DataBlock read by
    // every lane group (src1 strides 0). A ragged last repeat masks the missing pixels.
    __aicore__ inline void TapRow(const LocalTensor<float>& dst, const LocalTensor<T>& src, const LocalTensor<T>& wk)
    {
        const uint32_t full = tl.tw / 4, rem = tl.tw % 4;
        const BinaryRepeatParams rp(1, tl.sw, 0, 8, 4 * tl.sw, 0);
        for (uint32_t r0 = 0; r0 < full; r0 += MAX_REPEAT) {
            const uint32_t reps = full - r0 < MAX_REPEAT ? full - r0 : MAX_REPEAT;
            MulAddDst(dst[r0 * 4 * C0], src[r0 * 4 * tl.sw * C0], wk, static_cast<uint64_t>(64), reps, rp);
        }
        if (rem != 0)
            MulAddDst(dst[full * 4 * C0], src[full * 4 * tl.sw * C0], wk, static_cast<uint64_t>(rem * C0), 1, rp);
    }

    // one tap over the tile: a row of <= 4 pixels is one repeat, so every row is one repeat of a
    // single MulAddDst (dst rows of tw pixels, source repeat stride sh input rows); wider rows
    // go row by row
    __aicore__ inline void TapTile(const LocalTensor<float>& dst, const LocalTensor<T>& src, const LocalTensor<T>& wk)
    {
        if (tl.tw <= 4) {
            const BinaryRepeatParams rp(1, tl.sw, 0, 2 * tl.tw, tl.sh * tl.iw, 0);
            for (uint32_t r0 = 0; r0 < tl.th; r0 += MAX_REPEAT) {
                const uint32_t reps = tl.th - r0 < MAX_REPEAT ? tl.th - r0 : MAX_REPEAT;
                MulAddDst(dst[r0 * tl.tw * C0], src[r0 * tl.sh * tl.iw * C0], wk, static_cast<uint64_t>(tl.tw * C0),
                          reps, rp);
            }
            return;
        }
        for (uint32_t r = 0; r < tl.th; ++r)
            TapRow(dst[r * tl.tw * C0], src[r * tl.sh * tl.iw * C0], wk);
    }
