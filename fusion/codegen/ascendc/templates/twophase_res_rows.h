    // rows [m0, mEnd) of the residual's channel block o (NC1HWC0) -> L1 (rows, C0): one run per image
    __aicore__ inline void CopyResRows(const LocalTensor<T>& a1, uint32_t o)
    {
        const uint32_t ohw = tl.oh * tl.ow;
        for (uint32_t r = m0; r < mEnd;) {
            const uint32_t img = RowImage(r, ohw), end = LoopMin(BlockStart(img + 1, ohw), mEnd);
            DataCopy(a1[(r - m0) * C0], resGm[((img * tl.co1 + o) * ohw + r - img * ohw) * C0], (end - r) * C0);
            r = end;
        }
    }
