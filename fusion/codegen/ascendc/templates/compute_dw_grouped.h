    // Grouped DW (schedules/twophase.dw_grouped): lane 16b + k of a 128-lane repeat is channel k of
    // block g + b -- the block stride is the channel-block pitch (ih*iw DataBlocks in x_tile, th*iw
    // in dw_out, kh*kw in the taps) -- and repeat r is pixel r of the tile laid out as wide rows at
    // the input tile's pitch iw, so each tap reads one stride-1 walk of x_tile: one instruction per
    // tap and group of 8 blocks. The first tap is a Mul (no zeroing); bias and act1 run on the fp16
    // result. The wide rows' extra columns are never handed off.
    __aicore__ inline void ComputeDw(uint32_t q)
    {
        const uint32_t c0 = BlockStart(q, tl.cib), cb = BlockLen(q, tl.cib, tl.c1);
        LocalTensor<T> x = xQue.DeQue<T>();
@X_CLIP@        LocalTensor<T> dwOut = @DW_OUT@;
        LocalTensor<T> bias = bDw16Buf.Get<T>();
        const uint8_t plane = static_cast<uint8_t>(tl.th * tl.iw);
        const uint8_t reps = static_cast<uint8_t>((tl.th - 1) * tl.iw + tl.tw);
        const BinaryRepeatParams tap(plane, static_cast<uint8_t>(tl.ih * tl.iw), static_cast<uint8_t>(tl.kh * tl.kw),
                                     1, 1, 0);
        const BinaryRepeatParams add(plane, plane, 1, 1, 1, 0);
        const UnaryRepeatParams act(plane, plane, 1, 1);
        for (uint32_t g = 0; g < cb; g += 8) {
            const uint64_t lanes = static_cast<uint64_t>(cb - g < 8 ? cb - g : 8) * C0;
            LocalTensor<T> d = dwOut[g * plane * C0];
            for (uint32_t i = 0; i < tl.kh; ++i) {
                for (uint32_t j = 0; j < tl.kw; ++j) {
                    const LocalTensor<T> s = x[((g * tl.ih + i) * tl.iw + j) * C0];
                    const LocalTensor<T> w = wDw[(((c0 + g) * tl.kh + i) * tl.kw + j) * C0];
                    if (i == 0 && j == 0)
                        Mul(d, s, w, lanes, reps, tap);
                    else
                        MulAddDst(d, s, w, lanes, reps, tap);
                }
            }
            Add(d, d, bias[(c0 + g) * C0], lanes, reps, add);   // + b_dw (storage dtype)
@ACT1_GROUPED@        }
        xQue.FreeTensor(x);
    }
