@WIDEN_DW@        for (uint32_t c = 0; c < cb; ++c) {
            const uint32_t cg = c0 + c;
            LocalTensor<float> accC = acc[c * thw * C0];
            AddBiasHalves(accC, bDw[cg * C0], thw);   // + b_dw[cg]
@ACT1_CH@        }
        LayerNormPixels(acc, cb, thw);   // cb = C1: a unit holds every channel of its pixels
        @CAST_DW@
