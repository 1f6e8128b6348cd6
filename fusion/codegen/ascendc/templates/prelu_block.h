    // PRelu on one channel block: `pixels` pixels of 16 fp32 lanes, `rep` DataBlocks (8 floats)
    // apart at x; x = max(x, 0) + s * min(x, 0) with s the block's 16 slopes, read by every repeat
    // (src1 repStride 0, as the bias add). tmp: pixels x 16 fp32 (up to MAX_REPEAT pixels).
    __aicore__ inline void PreluBlock(const LocalTensor<float>& x, uint32_t pixels, uint8_t rep,
                                      const LocalTensor<float>& s, const LocalTensor<float>& tmp)
    {
        for (uint32_t p0 = 0; p0 < pixels; p0 += MAX_REPEAT) {
            const uint8_t reps = static_cast<uint8_t>(pixels - p0 < MAX_REPEAT ? pixels - p0 : MAX_REPEAT);
            const LocalTensor<float> v = x[p0 * rep * 8];
            Mins(tmp, v, 0.0f, static_cast<uint64_t>(C0), reps, UnaryRepeatParams(1, 1, 2, rep));
            Mul(tmp, tmp, s, static_cast<uint64_t>(C0), reps, BinaryRepeatParams(1, 1, 1, 2, 2, 0));
            Maxs(v, v, 0.0f, static_cast<uint64_t>(C0), reps, UnaryRepeatParams(1, 1, rep, rep));
            Add(v, v, tmp, static_cast<uint64_t>(C0), reps, BinaryRepeatParams(1, 1, 1, rep, rep, 2));
        }
    }
