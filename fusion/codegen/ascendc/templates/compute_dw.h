    // The per-block DW form of one unit: per channel block the taps (TapTile: one instruction per
    // tap and column group or row), then the post-ops DW_POST: + b_dw, act1 at fp32 (dw_post_float.h)
    // or in the storage dtype (dw_post_half.h, plan.dw_post16: the first tap a Mul, no zeroing).
    __aicore__ inline void ComputeDw(uint32_t q)
    {
        const uint32_t c0 = BlockStart(q, tl.cib), cb = BlockLen(q, tl.cib, tl.c1);
        LocalTensor<T> x = xQue.DeQue<T>();
@X_CLIP@@DW_ACC_DECL@        LocalTensor<T> dwOut = @DW_OUT@;
        for (uint32_t c = 0; c < cb; ++c) {
            const uint32_t cg = c0 + c;
@TAP_ACC@            for (uint32_t i = 0; i < tl.kh; ++i) {
                for (uint32_t j = 0; j < tl.kw; ++j) {
@TAP_CALL@
                }
            }
        }
@DW_POST@        xQue.FreeTensor(x);
    }
