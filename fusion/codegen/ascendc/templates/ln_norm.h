    // ---- channel LayerNorm of a ConvNeXt block (schedules/channel_norm.py counts these ops) -----
    // Per pixel over all Cin of the fp32 DW result a (cb = C1 blocks of thw pixels x C0): the blocks
    // summed lane-wise (Add), each pixel's 16 lanes summed (WholeReduceSum, a repeat a pixel), / Cin;
    // the per-pixel mean filled into a DataBlock each (Brcb) and subtracted from both 8-lane halves of
    // every pixel of every block (LnHalves: 8 pixels a repeat); the squares summed the same way (Mul,
    // MulAddDst), / Cin, + eps, Sqrt, filled, and divided out. The lanes past Cin of a ragged last
    // block are masked off, so they stay zero and add nothing to the variance. The norm's scale and
    // shift are folded into the PW weights and bias.
    __aicore__ inline void LayerNormPixels(const LocalTensor<float>& a, uint32_t cb, uint32_t px)
    {
        LocalTensor<float> s = lnBlkBuf.Get<float>();    // block sums; then the fill; then the squares
        LocalTensor<float> st = lnStatBuf.Get<float>();  // one value a pixel (px rounded up to 8)
        const int32_t n = static_cast<int32_t>(px * C0);
        const float invC = 1.0f / static_cast<float>(tl.cin);
        if (cb > 1) {
            Add(s, a, a[n], n);
            for (uint32_t c = 2; c < cb; ++c) Add(s, s, a[c * n], n);
        }
        LnLaneSum(st, cb > 1 ? s : a, px);
        Muls(st, st, invC, static_cast<int32_t>(px));
        LnFill(s, st, px);
        for (uint32_t c = 0; c < cb; ++c) LnHalves<0>(a[c * n], s, px, c);   // - mean
        Mul(s, a, a, n);
        for (uint32_t c = 1; c < cb; ++c) MulAddDst(s, a[c * n], a[c * n], n);
        LnLaneSum(st, s, px);
        Muls(st, st, invC, static_cast<int32_t>(px));
        Adds(st, st, static_cast<float>(@LN_EPS@), static_cast<int32_t>(px));
        Sqrt(st, st, static_cast<int32_t>(px));
        LnFill(s, st, px);
        for (uint32_t c = 0; c < cb; ++c) LnHalves<1>(a[c * n], s, px, c);   // / sqrt(var + eps)
    }

    // st[p] = the 16 lanes of pixel p of src summed; LN_PX pixels an instruction (a multiple of 8
    // under the repeat limit, so each chunk's first result stays 32 B aligned)
    __aicore__ inline void LnLaneSum(const LocalTensor<float>& st, const LocalTensor<float>& src, uint32_t px)
    {
        for (uint32_t p = 0; p < px; p += @LN_PX@) {
            const uint32_t q = px - p < @LN_PX@ ? px - p : @LN_PX@;
            WholeReduceSum<float>(st[p], src[p * C0], static_cast<int32_t>(C0), static_cast<int32_t>(q), 1, 1, 2);
        }
    }

    // s[8p .. 8p + 8) = st[p]: one DataBlock a pixel, 8 pixels a repeat
    __aicore__ inline void LnFill(const LocalTensor<float>& s, const LocalTensor<float>& st, uint32_t px)
    {
        const uint32_t reps = (px + 7) / 8;
        for (uint32_t r0 = 0; r0 < reps; r0 += MAX_REPEAT) {
            const uint32_t r = reps - r0 < MAX_REPEAT ? reps - r0 : MAX_REPEAT;
            Brcb(s[r0 * 64], st[r0 * 8], static_cast<uint8_t>(r), BrcbRepeatParams(1, 8));
        }
    }

    // x (one channel block, px pixels x 16) -= or /= each pixel's filled DataBlock of s, per 8-lane
    // half: lane l of a repeat is channel 8h + l%8 of pixel l/8, 8 pixels a repeat; only the lanes
    // inside Cin (a ragged last block's high half may have none)
    template <int OP>
    __aicore__ inline void LnHalves(const LocalTensor<float>& x, const LocalTensor<float>& s, uint32_t px, uint32_t c)
    {
        const uint32_t valid = c + 1 < tl.c1 ? C0 : tl.cin - c * C0;
        const uint32_t groups = px / 8, rem = px % 8;
        const BinaryRepeatParams rp(2, 2, 1, 16, 16, 8);
        for (uint32_t h = 0; h < 2; ++h) {
            const uint32_t lanes = valid <= h * 8 ? 0 : (valid - h * 8 < 8 ? valid - h * 8 : 8);
            if (lanes == 0) continue;
            uint64_t row = (1ull << lanes) - 1, all = 0;   // one pixel's lanes; every pixel of a repeat
            for (uint32_t k = 0; k < 8; ++k) all |= row << (8 * k);
            for (uint32_t g0 = 0; g0 < groups; g0 += MAX_REPEAT) {
                const uint32_t reps = groups - g0 < MAX_REPEAT ? groups - g0 : MAX_REPEAT;
                uint64_t m[2] = {all, 0};
                LnOp<OP>(x[g0 * 8 * C0 + h * 8], s[g0 * 64], m, reps, rp);
            }
            if (rem != 0) {
                uint64_t m[2] = {all & ((1ull << (8 * rem)) - 1), 0};
                LnOp<OP>(x[groups * 8 * C0 + h * 8], s[groups * 64], m, 1, rp);
            }
        }
    }

    template <int OP>
    __aicore__ inline void LnOp(const LocalTensor<float>& x, const LocalTensor<float>& f, uint64_t m[2], uint32_t reps,
                                const BinaryRepeatParams& rp)
    {
        if constexpr (OP == 0) {
            Sub(x, x, f, m, static_cast<uint8_t>(reps), rp);
        } else {
            Div(x, x, f, m, static_cast<uint8_t>(reps), rp);
        }
    }
