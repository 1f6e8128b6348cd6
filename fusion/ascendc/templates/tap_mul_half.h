    // fp16 source, arch 2002 (no MulAddDst): one tap over the tile. A Mul of the source pixels by
    // the tap's 16 weights (one DataBlock read by every pixel of the repeat: src1 strides 0; the
    // source block stride is the conv stride), 8 pixels per fp16 repeat, into tap_prod; the
    // products widened to fp32 (Cast, into tap_wide) and added into the accumulator (Add), 4
    // pixels a repeat. When a row fits one repeat (tw <= 8) the scratch holds the tile and every
    // row is one repeat of a single Mul (the source repeat stride steps sh input rows), then one
    // Cast and one Add cover the tile; else the three run row by row. Ragged last repeats mask
    // the missing pixels.
    __aicore__ inline void TapTile(const LocalTensor<float>& dst, const LocalTensor<T>& src, const LocalTensor<T>& wk)
    {
        LocalTensor<T> prod = tapProdBuf.Get<T>();
        LocalTensor<float> wide = tapWideBuf.Get<float>();
        if (tl.tw <= 8) {
            const BinaryRepeatParams mp(1, tl.sw, 0, tl.tw, tl.sh * tl.iw, 0);
            for (uint32_t r0 = 0; r0 < tl.th; r0 += MAX_REPEAT) {
                const uint32_t reps = tl.th - r0 < MAX_REPEAT ? tl.th - r0 : MAX_REPEAT;
                Mul(prod[r0 * tl.tw * C0], src[r0 * tl.sh * tl.iw * C0], wk, static_cast<uint64_t>(tl.tw * C0), reps, mp);
            }
            WidenAdd(dst, prod, wide, thw);
            return;
        }
        const uint32_t full8 = tl.tw / 8, rem8 = tl.tw % 8;
        const BinaryRepeatParams mp(1, tl.sw, 0, 8, 8 * tl.sw, 0);
        for (uint32_t r = 0; r < tl.th; ++r) {
            const uint32_t s0 = r * tl.sh * tl.iw * C0;
            for (uint32_t r0 = 0; r0 < full8; r0 += MAX_REPEAT) {
                const uint32_t reps = full8 - r0 < MAX_REPEAT ? full8 - r0 : MAX_REPEAT;
                Mul(prod[r0 * 8 * C0], src[s0 + r0 * 8 * tl.sw * C0], wk, static_cast<uint64_t>(128), reps, mp);
            }
            if (rem8 != 0)
                Mul(prod[full8 * 8 * C0], src[s0 + full8 * 8 * tl.sw * C0], wk, static_cast<uint64_t>(rem8 * C0), 1, mp);
            WidenAdd(dst[r * tl.tw * C0], prod, wide, tl.tw);
        }
    }

    // dst (fp32) += widen(prod) over px pixels, 4 a repeat (tap_wide holds the widened products)
    __aicore__ inline void WidenAdd(const LocalTensor<float>& dst, const LocalTensor<T>& prod,
                                    const LocalTensor<float>& wide, uint32_t px)
    {
        const uint32_t full4 = px / 4, rem4 = px % 4;
        const UnaryRepeatParams cp(1, 1, 8, 4);
        const BinaryRepeatParams ap(1, 1, 1, 8, 8, 8);
        for (uint32_t r0 = 0; r0 < full4; r0 += MAX_REPEAT) {
            const uint32_t reps = full4 - r0 < MAX_REPEAT ? full4 - r0 : MAX_REPEAT;
            Cast(wide[r0 * 4 * C0], prod[r0 * 4 * C0], RoundMode::CAST_NONE, static_cast<uint64_t>(64), reps, cp);
        }
        if (rem4 != 0)
            Cast(wide[full4 * 4 * C0], prod[full4 * 4 * C0], RoundMode::CAST_NONE, static_cast<uint64_t>(rem4 * C0), 1, cp);
        for (uint32_t r0 = 0; r0 < full4; r0 += MAX_REPEAT) {
            const uint32_t reps = full4 - r0 < MAX_REPEAT ? full4 - r0 : MAX_REPEAT;
            Add(dst[r0 * 4 * C0], dst[r0 * 4 * C0], wide[r0 * 4 * C0], static_cast<uint64_t>(64), reps, ap);
        }
        if (rem4 != 0)
            Add(dst[full4 * 4 * C0], dst[full4 * 4 * C0], wide[full4 * 4 * C0], static_cast<uint64_t>(rem4 * C0), 1, ap);
    }
