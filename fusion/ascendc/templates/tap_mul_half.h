    // fp16 source, arch 2002 (no MulAddDst): per tap row a Mul of the source pixels by the tap's
    // 16 weights (one DataBlock read by every pixel of the repeat: src1 strides 0; the source
    // block stride is the conv stride), 8 pixels per fp16 repeat, into tap_prod; then the
    // products widened to fp32 (Cast) and added into the accumulator (Add), 4 pixels a repeat.
    // A ragged last repeat masks the missing pixels.
    __aicore__ inline void TapRow(const LocalTensor<float>& dst, const LocalTensor<T>& src, const LocalTensor<T>& wk)
    {
        LocalTensor<T> prod = tapProdBuf.Get<T>();
        LocalTensor<float> wide = tapWideBuf.Get<float>();
        const uint32_t full8 = tl.tw / 8, rem8 = tl.tw % 8;
        const BinaryRepeatParams mp(1, tl.sw, 0, 8, 8 * tl.sw, 0);
        for (uint32_t r0 = 0; r0 < full8; r0 += MAX_REPEAT) {
            const uint32_t reps = full8 - r0 < MAX_REPEAT ? full8 - r0 : MAX_REPEAT;
            Mul(prod[r0 * 8 * C0], src[r0 * 8 * tl.sw * C0], wk, static_cast<uint64_t>(128), reps, mp);
        }
        if (rem8 != 0)
            Mul(prod[full8 * 8 * C0], src[full8 * 8 * tl.sw * C0], wk, static_cast<uint64_t>(rem8 * C0), 1, mp);
        const uint32_t full4 = tl.tw / 4, rem4 = tl.tw % 4;
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
