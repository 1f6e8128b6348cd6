@WIDEN_DW@        for (uint32_t c = 0; c < cb; ++c) {
            const uint32_t cg = c0 + c;
            LocalTensor<float> accC = acc[c * thw * C0];
            AddBiasHalves(accC, bDw[cg * C0], thw);   // + b_dw[cg]
@ACT1_CH@        }
        Act1(acc, static_cast<int32_t>(cb * thw * C0), @ACT1_TMP@);
        @CAST_DW@
