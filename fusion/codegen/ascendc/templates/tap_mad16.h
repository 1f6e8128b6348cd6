    // 16-bit source, both arches (MulAddDst half -> half): the taps accumulate in the storage
    // dtype, as the vendor's vector depthwise does. Lane 16p + k of a 128-lane repeat is output
    // pixel p, channel k (one pixel a DataBlock); the source pixel sits p*sw DataBlocks further
    // (blkStride = conv stride); the tap's 16 weights are one DataBlock read by every pixel
    // (src1 strides 0). tapForm 1 (schedules/isa.tap_columns): one MulAddDst per group of 8 output
    // columns, its repeats walking the rows (dst repeat stride tw pixels, source repeat stride
    // sh input rows); else row by row; tapForm 2 (stride 1, fp16 post-ops: dw_forms.wide_taps):
    // one op over the tile as wide rows at the input pitch iw (dst rows iw pixels apart too),
    // output pixel p reading source pixel p. A ragged last group / repeat is masked. `first`: the
    // tap writes (Mul) instead of accumulating -- it covers every output pixel, so no zeroing before.
    __aicore__ inline void TapTile(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& wk,
                                   bool first = false)
    {
        if (tl.tapForm == 2) {
            const uint32_t px = (tl.th - 1) * tl.iw + tl.tw, full = px / 8, rem = px % 8;
            const BinaryRepeatParams rp(1, 1, 0, 8, 8, 0);
            for (uint32_t r0 = 0; r0 < full; r0 += MAX_REPEAT) {
                const uint32_t reps = full - r0 < MAX_REPEAT ? full - r0 : MAX_REPEAT;
                TapOp(first, dst[r0 * 8 * C0], src[r0 * 8 * C0], wk, static_cast<uint64_t>(128), reps, rp);
            }
            if (rem != 0)
                TapOp(first, dst[full * 8 * C0], src[full * 8 * C0], wk, static_cast<uint64_t>(rem * C0), 1, rp);
            return;
        }
        if (tl.tapForm == 1) {
            const BinaryRepeatParams rp(1, tl.sw, 0, tl.tw, tl.sh * tl.iw, 0);
            for (uint32_t g = 0; g < tl.tw; g += 8) {
                const uint32_t n = tl.tw - g < 8 ? tl.tw - g : 8;
                for (uint32_t r0 = 0; r0 < tl.th; r0 += MAX_REPEAT) {
                    const uint32_t reps = tl.th - r0 < MAX_REPEAT ? tl.th - r0 : MAX_REPEAT;
                    TapOp(first, dst[(r0 * tl.tw + g) * C0], src[(r0 * tl.sh * tl.iw + g * tl.sw) * C0], wk,
                          static_cast<uint64_t>(n * C0), reps, rp);
                }
            }
            return;
        }
        const uint32_t full = tl.tw / 8, rem = tl.tw % 8;
        const BinaryRepeatParams rp(1, tl.sw, 0, 8, 8 * tl.sw, 0);
        for (uint32_t r = 0; r < tl.th; ++r) {
            const uint32_t d0 = r * tl.tw * C0, s0 = r * tl.sh * tl.iw * C0;
            for (uint32_t r0 = 0; r0 < full; r0 += MAX_REPEAT) {
                const uint32_t reps = full - r0 < MAX_REPEAT ? full - r0 : MAX_REPEAT;
                TapOp(first, dst[d0 + r0 * 8 * C0], src[s0 + r0 * 8 * tl.sw * C0], wk, static_cast<uint64_t>(128), reps, rp);
            }
            if (rem != 0)
                TapOp(first, dst[d0 + full * 8 * C0], src[s0 + full * 8 * tl.sw * C0], wk, static_cast<uint64_t>(rem * C0), 1, rp);
        }
    }

    // one tap instruction: dst = src0 * src1 (the first tap) or dst += src0 * src1
    __aicore__ inline void TapOp(bool first, const LocalTensor<T>& dst, const LocalTensor<T>& s0, const LocalTensor<T>& s1,
                                 uint64_t mask, uint32_t reps, const BinaryRepeatParams& rp)
    {
        if (first)
            Mul(dst, s0, s1, mask, static_cast<uint8_t>(reps), rp);
        else
            MulAddDst(dst, s0, s1, mask, static_cast<uint8_t>(reps), rp);
    }
