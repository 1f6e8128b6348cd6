    // + b_pw[cg], act2, [+ residual], cast of one output block: thw pixels x 16 fp32 at acc. The
    // bias goes in two halves: lane l of a repeat is channel 8h + l%8 of pixel l/8 (dst block
    // stride 2 DataBlocks = one pixel), 8 pixels per repeat, the bias half repeated (stride 0).
    __aicore__ inline void EpilogueBlock(const LocalTensor<float>& acc, uint32_t cg, @RES_EPI_PARAM@const LocalTensor<T>& y)
    {
        const uint32_t groups = thw / 8, rem = thw % 8;
        const BinaryRepeatParams rp(2, 2, 0, 16, 16, 0);
        for (uint32_t h = 0; h < 2; ++h) {
            for (uint32_t g0 = 0; g0 < groups; g0 += MAX_REPEAT) {
                const uint32_t reps = groups - g0 < MAX_REPEAT ? groups - g0 : MAX_REPEAT;
                Add(acc[g0 * 8 * C0 + h * 8], acc[g0 * 8 * C0 + h * 8], bPw[cg * C0 + h * 8], static_cast<uint64_t>(64),
                    reps, rp);
            }
            if (rem != 0)
                Add(acc[groups * 8 * C0 + h * 8], acc[groups * 8 * C0 + h * 8], bPw[cg * C0 + h * 8],
                    static_cast<uint64_t>(rem * 8), 1, rp);
        }
        Act2(acc, static_cast<int32_t>(thw * C0), @ACT2_TMP@);
@ACT2_CH@@RES_EPI_ADD@        Cast(y, acc, RoundMode::CAST_NONE, thw * C0);
    }
