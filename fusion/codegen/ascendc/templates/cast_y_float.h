            // pixel-major fp32 (p, co, C0) -> NC1HWC0 (co, p, C0)
            DataCopyParams cp;
            cp.blockCount = thw;
            cp.blockLen = 2;
            cp.srcGap = 2 * (cbo - 1);
            cp.dstGap = 0;
            DataCopy(yT[c * thw * C0], acc[c * C0], cp);