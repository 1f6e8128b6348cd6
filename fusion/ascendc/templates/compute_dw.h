    __aicore__ inline void ComputeDw(uint32_t q)
    {
        const uint32_t c0 = q * tl.cib, cb = tl.c1 - c0 < tl.cib ? tl.c1 - c0 : tl.cib;
        LocalTensor<T> x = xQue.DeQue<T>();
@X_CLIP@        LocalTensor<float> acc = dwAccBuf.Get<float>();
        LocalTensor<T> dwOut = dwOutBuf.Get<T>();
        for (uint32_t c = 0; c < cb; ++c) {
            const uint32_t cg = c0 + c;
@TAP_ACC@            for (uint32_t i = 0; i < tl.kh; ++i) {
                for (uint32_t j = 0; j < tl.kw; ++j) {
@TAP_CALL@
                }
            }
        }
@WIDEN_DW@        for (uint32_t c = 0; c < cb; ++c) {
            const uint32_t cg = c0 + c;
            LocalTensor<float> accC = acc[c * thw * C0];
            AddBiasHalves(accC, bDw[cg * C0], thw);   // + b_dw[cg]
@ACT1_CH@        }
        Act1(acc, static_cast<int32_t>(cb * thw * C0), @ACT1_TMP@);
        @CAST_DW@
        xQue.FreeTensor(x);
    }
