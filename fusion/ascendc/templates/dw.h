    // ---- DW -----------------------------------------------------------------------------
    __aicore__ inline void CopyInX(uint32_t q)
    {
        const uint32_t c0 = q * tl.cib, cb = tl.c1 - c0 < tl.cib ? tl.c1 - c0 : tl.cib;
        LocalTensor<T> x = xQue.AllocTensor<T>();
        if (pad) {  // padding and rows/cols past the image are zeros in UB, never read from GM
            Duplicate(x, static_cast<T>(0), cb * tl.ih * tl.iw * C0);
            SetFlag<HardEvent::V_MTE2>(0);
            WaitFlag<HardEvent::V_MTE2>(0);
        }
        if (ihv > 0 && iwv > 0) {
            // one DMA per channel block: ihv rows of iwv pixels (iwv*32 B per fp16 row: DataBlock multiples)
            DataCopyParams p;
            p.blockCount = ihv;
            p.blockLen = iwv * PB;
            p.srcGap = (tl.w - iwv) * PB;
            p.dstGap = (tl.iw - iwv) * PB;
            const uint32_t ub0 = (static_cast<uint32_t>(rLo - ih0) * tl.iw + static_cast<uint32_t>(cLo - iw0)) * C0;
            for (uint32_t c = 0; c < cb; ++c) {
                const uint32_t gm = (((n * tl.c1 + c0 + c) * tl.h + rLo) * tl.w + cLo) * C0;
                DataCopy(x[c * tl.ih * tl.iw * C0 + ub0], xGm[gm], p);
            }
        }
        xQue.EnQue(x);
    }

@TAP_LANES@
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

@ACT1_FN@
@ACT2_FN@