    __aicore__ inline void LoadA(const LocalTensor<T>& a2, const LocalTensor<T>& a1)
    {
        const uint32_t m1 = thwAl / 16;
        if (m1 <= tl.c1) {  // one LoadData per row block: its c1 fractals, M1 apart in L1
            for (uint32_t mi = 0; mi < m1; ++mi)
                LoadData(a2[mi * tl.c1 * 256], a1, LoadData2DParams(mi, tl.c1, m1, 0, 0, false, 0));
        } else {            // one per channel block: its M1 fractals, c1 - 1 apart in L0A
            for (uint32_t ki = 0; ki < tl.c1; ++ki)
                LoadData(a2[ki * 256], a1, LoadData2DParams(ki * m1, m1, 1, 0, tl.c1 - 1, false, 0));
        }
    }
