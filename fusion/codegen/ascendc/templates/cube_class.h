class Kernel@OPTYPE@ {
public:
    __aicore__ inline Kernel@OPTYPE@() {}

@INIT_ONE_CORE@        // one InitBuffer per KernelPlan buffer (UB, L1, L0A, L0B, L0C): bytes per copy x copies
@INITS@
    }

    // Software-pipelined by one tile: the PW (cube) and epilogue of tile t-1 are issued after the
    // DW of tile t, so the cube's Mmads of t-1 run while the vector unit computes DW(t), and the
    // vector unit goes on from DW(t) to the epilogues of t-1 without waiting for the cube -- nor
    // for DW(t)'s UB -> L1 staging: only the next DW, which overwrites dw_out, waits for that.
    __aicore__ inline void Process()
    {
        LoadResident();
        uint32_t prev = 0;
        bool pending = false;
        const uint32_t core = GetBlockIdx(), mine = UnitsOf(core, tl.nTiles, tl.blockDim);
        for (uint32_t k = 0; k < mine; ++k) {
            const uint32_t tile = UnitAt(core, k, tl.blockDim);
            SetTile(tile);
            if (k > 0) WaitFlag<HardEvent::MTE3_V>(0);  // the previous tile's staging has read dw_out
            for (uint32_t q = 0; q < tl.ciSteps; ++q) {
                CopyInX(q);
                ComputeDw(q);
            }
            StageL1();
            if (pending) {
                SetTile(prev);
                CoLoop();
            }
            StageL0A();
            prev = tile;
            pending = true;
        }
        if (pending) {
            SetTile(prev);
            CoLoop();
            WaitFlag<HardEvent::MTE3_V>(0);  // the last staging's flag
        }
@CORE_FREE@    }

private:
@CORE_RESIDENT@
@GEOMETRY@
@DW@
    // the PW of the tile staged in L0A (SetTile gives its geometry), then its A is released
    __aicore__ inline void CoLoop()
    {
        for (uint32_t q = 0; q < tl.coSteps; ++q) {
            CopyInPw(q);
            Mma(q);
            Epilogue(q);
            CopyOut(q);
        }
        aL0Que.FreeTensor(aL0);
    }

    // ---- the cube's A operand: dw_out (UB) -> L1 (on chip, MTE3) -> L0A, once per tile -----
    // UB -> L1 right after the tile's DW (the next tile's DW waits for it: Process)
    __aicore__ inline void StageL1()
    {
        LocalTensor<T> dwOut = dwOutBuf.Get<T>();
        LocalTensor<T> a1 = aL1Buf.Get<T>();
        SetFlag<HardEvent::V_MTE3>(0);  // the DW result is complete in UB
        WaitFlag<HardEvent::V_MTE3>(0);
        // c1 column blocks of thw pixels (one 32 B DataBlock each), each padded to thwAl rows in L1
        if (tl.dwPitch == tl.tw) {
            DataCopyParams p;
            p.blockCount = tl.c1;
            p.blockLen = thw * PB;
            p.srcGap = 0;
            p.dstGap = (thwAl - thw) * PB;
            DataCopy(a1, dwOut, p);
        } else {   // dw_out holds wide rows (plan.dw_pitch = iw): per block its th rows of tw pixels
            DataCopyParams p;
            p.blockCount = tl.th;
            p.blockLen = tl.tw * PB;
            p.srcGap = (tl.dwPitch - tl.tw) * PB;
            p.dstGap = 0;
            for (uint32_t c = 0; c < tl.c1; ++c) DataCopy(a1[c * thwAl * C0], dwOut[c * tl.th * tl.dwPitch * C0], p);
        }
        SetFlag<HardEvent::MTE3_V>(0);  // the next tile's DW may overwrite dw_out (waited there)
    }

    // L1 -> L0A once the previous tile's Mmads are done with L0A (its queue holds one A)
    __aicore__ inline void StageL0A()
    {
        LocalTensor<T> a1 = aL1Buf.Get<T>();
        SetFlag<HardEvent::MTE3_MTE1>(0);  // L1 holds A before LoadData reads it
        WaitFlag<HardEvent::MTE3_MTE1>(0);
        LocalTensor<T> a2 = aL0Que.AllocTensor<T>();
        LoadA(a2, a1);
        aL0Que.EnQue(a2);
        aL0 = aL0Que.DeQue<T>();  // A stays in L0A for every co-step of the tile
        SetFlag<HardEvent::MTE1_MTE3>(0);  // the next tile's staging may overwrite L1
        WaitFlag<HardEvent::MTE1_MTE3>(0);
    }

@LOAD_A@
@LOAD_B@
    // ---- PW on the cube -------------------------------------------------------------------
    __aicore__ inline void CopyInPw(uint32_t q)
    {
        @CO_STEP@
        if (!tl.wPwResident) {  // the co-step's cbo FRACTAL_Z blocks are contiguous in GM
            LocalTensor<T> wp = wL1Que.AllocTensor<T>();
            DataCopy(wp, wPwGm[o0 * tl.c1 * C0 * C0], cbo * tl.c1 * C0 * C0);
            wL1Que.EnQue(wp);
        }
@RES_COPYIN@    }

    __aicore__ inline void Mma(uint32_t q)
    {
        @CO_STEP@
        LocalTensor<T> w1 = tl.wPwResident ? wPwRes : wL1Que.DeQue<T>();
        LocalTensor<T> b2 = bL0Que.AllocTensor<T>();
        LoadB(b2, w1, tl.wPwResident ? o0 * tl.c1 : 0, cbo);
        bL0Que.EnQue(b2);
        if (!tl.wPwResident) wL1Que.FreeTensor(w1);
        b2 = bL0Que.DeQue<T>();
        LocalTensor<float> c = cQue.AllocTensor<float>();
        MmadParams mp;
        mp.m = thw > 1 ? thw : thwAl;  // rows past thw are fractal padding, never read back
        mp.n = cbo * C0;
        mp.k = tl.c1 * C0;
        Mmad(c, aL0, b2, mp);  // C = A x B, fp32 in L0C (isBias false, cmatrixInitVal true: C starts at 0)
@BIAS_MMAD@        cQue.EnQue(c);
        bL0Que.FreeTensor(b2);
    }

@CUBE_EPILOGUE@
@EPILOGUE_BLOCK@
@COPY_OUT@
    TPipe pipe;
@MEMBERS@
    GlobalTensor<T> xGm, wDwGm, wPwGm, yGm;
    GlobalTensor<float> bDwGm, bPwGm;
@RES_GM_DECL@@SLOPE_DECL@    LocalTensor<T> wDw, wPwRes, aL0;
    LocalTensor<float> bDw, bPw;
@GEOM_MEMBERS@};
