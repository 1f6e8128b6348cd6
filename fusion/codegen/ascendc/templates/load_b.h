    __aicore__ inline void LoadB(const LocalTensor<T>& b2, const LocalTensor<T>& w1, uint32_t first, uint32_t cbo)
    {
        if (tl.c1 <= cbo) {  // one LoadData per k block: its cbo fractals, c1 apart in L1
            for (uint32_t ki = 0; ki < tl.c1; ++ki)
                LoadData(b2[ki * cbo * 256], w1, LoadData2DParams(first + ki, cbo, tl.c1, 0, 0, true, 0));
        } else {             // one per output block: its c1 fractals, cbo - 1 apart in L0B
            for (uint32_t nj = 0; nj < cbo; ++nj)
                LoadData(b2[nj * 256], w1, LoadData2DParams(first + nj * tl.c1, tl.c1, 1, 0, cbo - 1, true, 0));
        }
    }
