    // Pool DW (schedules/dw_forms.pool_form: a head block's global average pool written as a DW
    // whose taps are all 1 / (kh kw), its 1 x 1 tile over the whole unpadded input), in the
    // grouped layout: lane 16b + k of a repeat is channel k of block g + b (block stride: the
    // channel-block pitch, ih * iw DataBlocks in x_tile, th * iw in dw_out) and repeat r is pixel r.
    // The window is summed in halves in place in x_tile (m pixels -> m - m / 2: one Add whose
    // repeats are the m / 2 pixels added), then one Muls by 1 / (kh kw) into dw_out; bias and act1
    // as the grouped form. The taps are not read.
    __aicore__ inline void ComputeDw(uint32_t q)
    {
        const uint32_t c0 = BlockStart(q, tl.cib), cb = BlockLen(q, tl.cib, tl.c1);
        LocalTensor<T> x = xQue.DeQue<T>();
@X_CLIP@        LocalTensor<T> dwOut = @DW_OUT@;
        LocalTensor<T> bias = bDw16Buf.Get<T>();
        const uint8_t plane = static_cast<uint8_t>(tl.th * tl.iw), pitch = static_cast<uint8_t>(tl.ih * tl.iw);
        const uint8_t reps = 1;   // the one output pixel
        const BinaryRepeatParams sum(pitch, pitch, pitch, 1, 1, 1);
        const UnaryRepeatParams scale(plane, pitch, 1, 1);
        const BinaryRepeatParams add(plane, plane, 1, 1, 1, 0);
        const UnaryRepeatParams act(plane, plane, 1, 1);
        const T inv = static_cast<T>(1.0f / static_cast<float>(tl.kh * tl.kw));
        for (uint32_t g = 0; g < cb; g += 8) {
            const uint64_t lanes = static_cast<uint64_t>(cb - g < 8 ? cb - g : 8) * C0;
            LocalTensor<T> s = x[g * pitch * C0];
            LocalTensor<T> d = dwOut[g * plane * C0];
            for (uint32_t m = tl.kh * tl.kw; m > 1; m -= m / 2) {
                const uint32_t h = m / 2;   // pixels [0, h) += pixels [m - h, m)
                Add(s, s, s[(m - h) * C0], lanes, static_cast<uint8_t>(h), sum);
            }
            Muls(d, s, inv, lanes, reps, scale);
            Add(d, d, bias[(c0 + g) * C0], lanes, reps, add);   // + b_dw (storage dtype)
@ACT1_GROUPED@        }
        xQue.FreeTensor(x);
        (void)act;
    }
