    // ---- DW -----------------------------------------------------------------------------
    __aicore__ inline void CopyInX(uint32_t q)
    {
        const uint32_t c0 = BlockStart(q, tl.cib), cb = BlockLen(q, tl.cib, tl.c1);
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
@COMPUTE_DW@
@ACT1_FN@
@ACT2_FN@