    // L1 A (kbq, rows, C0) NZ from fractal a0 on (a0 = 0: a streamed block; k0 x m1: the kept
    // panel's K block k0) -> L0A fractal (mi, ki) at mi * kbq + ki
    __aicore__ inline void LoadAK(const LocalTensor<T>& a2, const LocalTensor<T>& a1, uint32_t m1, uint32_t kbq,
                                  uint32_t a0)
    {
        if (m1 <= kbq) {
            for (uint32_t mi = 0; mi < m1; ++mi)
                LoadData(a2[mi * kbq * 256], a1, LoadData2DParams(a0 + mi, kbq, m1, 0, 0, false, 0));
        } else {
            for (uint32_t ki = 0; ki < kbq; ++ki)
                LoadData(a2[ki * 256], a1, LoadData2DParams(a0 + ki * m1, m1, 1, 0, kbq - 1, false, 0));
        }
    }

    // L1 B fractal (o, k0 + ki) at o * pitch + k0 + ki (FRACTAL_Z slices: a streamed block has
    // pitch kbq and k0 0, the resident N tile pitch C1) -> L0B fractal (ki, nj) at ki * cbo + nj, transposed
    __aicore__ inline void LoadBK(const LocalTensor<T>& b2, const LocalTensor<T>& b1, uint32_t kbq, uint32_t pitch,
                                  uint32_t k0)
    {
        if (kbq <= cbo) {
            for (uint32_t ki = 0; ki < kbq; ++ki)
                LoadData(b2[ki * cbo * 256], b1, LoadData2DParams(k0 + ki, cbo, pitch, 0, 0, true, 0));
        } else {
            for (uint32_t nj = 0; nj < cbo; ++nj)
                LoadData(b2[nj * 256], b1, LoadData2DParams(nj * pitch + k0, kbq, 1, 0, cbo - 1, true, 0));
        }
    }

    // ---- phase 2: the PW GEMM, (M, N) tiles round-robin over the GEMM cores, K in kb blocks --
    __aicore__ inline void GemmPhase(uint32_t core)
    {
        const uint32_t mine = @GEMM_UNITS@;
        if (mine == 0) return;
@GEMM_PROLOGUE@@B_RES_TAKE@@A_RES_DECL@        for (uint32_t i = 0; i < mine; ++i) {
            SetGemmTile(@GEMM_UNIT@);
@A_PANEL@            LocalTensor<float> c = cQue.AllocTensor<float>();
            for (uint32_t kq = 0; kq < tl.kSteps; ++kq) {
                const uint32_t k0 = BlockStart(kq, tl.kb), kbq = BlockLen(kq, tl.kb, tl.c1);
@A_IN@@B_IN@@A_DEQUE@                LocalTensor<T> a2 = aL0Que.AllocTensor<T>();
                LoadAK(a2, @A_L1_ARGS@);
                aL0Que.EnQue(a2);
                LocalTensor<T> b2 = bL0Que.AllocTensor<T>();
                LoadBK(b2, @B_L1_ARGS@);
                bL0Que.EnQue(b2);
@A_FREE@@B_FREE@                a2 = aL0Que.DeQue<T>();
                b2 = bL0Que.DeQue<T>();
                MmadParams mp;
                mp.m = rows;
                mp.n = cbo * C0;
                mp.k = kbq * C0;
@GEMM_MMAD@                aL0Que.FreeTensor(a2);
                bL0Que.FreeTensor(b2);
            }
@TP_RES_K@@GEMM_BIAS@            cQue.EnQue(c);
            c = cQue.DeQue<float>();
@GEMM_EPILOGUE@            cQue.FreeTensor(c);
@GEMM_AHEAD@        }
@GEMM_FREE@@B_RES_FREE@@A_RES_FREE@    }
