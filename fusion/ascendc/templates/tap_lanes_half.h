    // fp16 source: lane 16p + k of a 64-lane fp32 repeat is output pixel p, channel k; the source
    // pixel p sits p*sw DataBlocks further (blkStride = conv stride), so strides need no gather.
    __aicore__ inline void TapRow(const LocalTensor<float>& dst, const LocalTensor<T>& src, const T* wk)
    {
        const uint32_t full = tl.tw / 4, rem = tl.tw % 4;
        const UnaryRepeatParams rp(1, tl.sw, 8, 4 * tl.sw);
        for (uint32_t k = 0; k < C0; ++k) {
            for (uint32_t r0 = 0; r0 < full; r0 += MAX_REPEAT) {
                const uint32_t reps = full - r0 < MAX_REPEAT ? full - r0 : MAX_REPEAT;
                uint64_t mask[2] = {LaneBits(k, 4), 0};
                Axpy(dst[r0 * 4 * C0], src[r0 * 4 * tl.sw * C0], wk[k], mask, reps, rp);
            }
            if (rem != 0) {
                uint64_t mask[2] = {LaneBits(k, rem), 0};
                Axpy(dst[full * 4 * C0], src[full * 4 * tl.sw * C0], wk[k], mask, 1, rp);
            }
        }
    }
