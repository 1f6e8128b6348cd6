        // post-ops in the storage dtype (plan.dw_post16: the result leaves in it anyway, as the
        // vendor's vector depthwise computes; one more rounding, of the bias add): per channel block
        // one Add of its 16-channel bias (one DataBlock read by every pixel), act1 in count form
        // (blocks th rows of dwPitch pixels apart: tw, or iw for wide rows, whose extra columns
        // get the bias and act1 too and are never read)
        LocalTensor<T> bias = bDw16Buf.Get<T>();
        const uint32_t blk = tl.th * tl.dwPitch * C0, px = (tl.th - 1) * tl.dwPitch + tl.tw;
        for (uint32_t c = 0; c < cb; ++c)   // + b_dw
            AddBias16(@DW16_OUT@[c * blk], @DW16_OUT@[c * blk], bias[(c0 + c) * C0], px);
@ACT1_16@