        // post-ops in the storage dtype (plan.dw_post16: the result leaves in it anyway, as the
        // vendor's vector depthwise computes; one more rounding, of the bias add): per channel block
        // one Add of its 16-channel bias (one DataBlock read by every pixel), act1 in count form
        LocalTensor<T> bias = bDw16Buf.Get<T>();
        for (uint32_t c = 0; c < cb; ++c)   // + b_dw
            AddBias16(@DW16_OUT@[c * thw * C0], @DW16_OUT@[c * thw * C0], bias[(c0 + c) * C0], thw);
@ACT1_16@