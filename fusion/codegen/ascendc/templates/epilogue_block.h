    // + b_pw[cg] (in two channel halves, 8 pixels a repeat), act2, [+ residual], cast of one
    // output block: thw pixels x 16 fp32 at acc.
    __aicore__ inline void EpilogueBlock(const LocalTensor<float>& acc, uint32_t cg, @RES_EPI_PARAM@const LocalTensor<T>& y)
    {
        AddBiasHalves(acc, bPw[cg * C0], thw);
        Act2(acc, static_cast<int32_t>(thw * C0), @ACT2_TMP@);
@ACT2_CH@@RES_EPI_ADD@        Cast(y, acc, RoundMode::CAST_NONE, thw * C0);
    }
