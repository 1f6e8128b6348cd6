    // Per-block DW with the post-ops in the storage dtype (plan.dw_post16: the two-phase kernel's
    // phase 1, whose result leaves in the storage dtype): the taps accumulate in dw_out as in
    // ComputeDw (the first one a Mul), then per channel block one Add of its 16-channel bias (one
    // DataBlock read by every pixel, 8 pixels a repeat) and act1 in count form over the unit -- no
    // fp32 accumulator, widen or cast (the vendor's vector depthwise computes so; one more
    // rounding, of the bias add).
    __aicore__ inline void ComputeDw(uint32_t q)
    {
        const uint32_t c0 = q * tl.cib, cb = tl.c1 - c0 < tl.cib ? tl.c1 - c0 : tl.cib;
        LocalTensor<T> x = xQue.DeQue<T>();
@X_CLIP@        LocalTensor<T> dwOut = dwOutBuf.Get<T>();
        LocalTensor<T> bias = bDw16Buf.Get<T>();
        for (uint32_t c = 0; c < cb; ++c) {
            const uint32_t cg = c0 + c;
            LocalTensor<T> tacc = dwOut[c * thw * C0];   // the first tap writes it (Mul): no zeroing
            for (uint32_t i = 0; i < tl.kh; ++i) {
                for (uint32_t j = 0; j < tl.kw; ++j) {
                    TapTile(tacc, x[((c * tl.ih + i) * tl.iw + j) * C0], wDw[((cg * tl.kh + i) * tl.kw + j) * C0],
                            i == 0 && j == 0);
                }
            }
        }
        for (uint32_t c = 0; c < cb; ++c)   // + b_dw
            AddBias16(dwOut[c * thw * C0], dwOut[c * thw * C0], bias[(c0 + c) * C0], thw);
@ACT1_16@        xQue.FreeTensor(x);
    }
