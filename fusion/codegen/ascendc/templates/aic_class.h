// ---- AIC: the PW GEMM of the tiles of its two AIVs ----------------------------------------
class Aic@OPTYPE@ {
public:
    __aicore__ inline Aic@OPTYPE@() {}

    __aicore__ inline void Init(GM_ADDR w_pw, @B_PW_PARAM@GM_ADDR y, __gm__ T* usr, const @TILING@& t)
    {
        tl = t;
        thw = t.th * t.tw;
        thwAl = t.thwAl;
        group = GetBlockIdx();  // the AIC of block g serves AIVs 2g and 2g + 1
        wPwGm.SetGlobalBuffer((__gm__ T*)w_pw, t.co1 * t.c1 * C0 * C0);
@B_PW_SET@        yGm.SetGlobalBuffer((__gm__ T*)y, t.batch * t.co1 * t.oh * t.ow * C0);
        dwGm.SetGlobalBuffer(usr, t.nTiles * t.c1 * thw * C0);
@PRE_SET@        // one InitBuffer per KernelPlan buffer in L1 / L0A / L0B / L0C / BT: bytes per copy x copies
@INITS@
    }

    __aicore__ inline void Process()
    {
        const uint32_t rounds = TilesOf(GroupMember(group, 0, RATIO));  // the first AIV has the most tiles
        if (rounds > 0) LoadResident();
        for (uint32_t k = 0; k < rounds; ++k) {
            CrossCoreWaitFlag(FLAG_DW);  // both AIVs of the group have handed off round k
            for (uint32_t s = 0; s < RATIO; ++s) {
                const uint32_t a = GroupMember(group, s, RATIO);
                if (k < TilesOf(a)) Gemm(UnitAt(a, k, tl.blockDim));
            }
            CrossCoreSetFlag<2, PIPE_FIX>(FLAG_PW);
        }
        if (rounds > 0) {
            if (tl.wPwResident) wL1Que.FreeTensor(wPwRes);
@B_PW_FREE@        }
    }

private:
    __aicore__ inline uint32_t TilesOf(uint32_t i) const { return UnitsOf(i, tl.nTiles, tl.blockDim); }

    __aicore__ inline uint32_t Slot() const { return tileIdx * tl.c1 * thw * C0; }
    __aicore__ inline uint32_t PreOffset() const { return tl.nTiles * tl.c1 * thw * C0; }
    __aicore__ inline uint32_t PreSlot() const { return tileIdx * tl.co1 * thw * C0; }

    // ---- resident, once per AIC: the whole w_pw in L1 with one co-step[, b_pw in L1] -------
    __aicore__ inline void LoadResident()
    {
        if (tl.wPwResident) {
            LocalTensor<T> wp = wL1Que.AllocTensor<T>();
            DataCopy(wp, wPwGm, tl.co1 * tl.c1 * C0 * C0);   // FRACTAL_Z is the layout L1 holds B in
            wL1Que.EnQue(wp);
            wPwRes = wL1Que.DeQue<T>();
        }
@B_PW_LOAD@    }

@GEOMETRY@
@LOAD_A@
@LOAD_B@
    // one tile: its DW result GM slot -> L1 (NZ, rows padded to 16) -> L0A; per co-step the GEMM
    __aicore__ inline void Gemm(uint32_t tile)
    {
        SetTile(tile);
        LocalTensor<T> a1 = aL1Que.AllocTensor<T>();
        DataCopyParams p;
        p.blockCount = tl.c1;
        p.blockLen = thw * PB;
        p.srcGap = 0;
        p.dstGap = (thwAl - thw) * PB;
        DataCopy(a1, dwGm[Slot()], p);
        aL1Que.EnQue(a1);
        a1 = aL1Que.DeQue<T>();
        LocalTensor<T> a2 = aL0Que.AllocTensor<T>();
        LoadA(a2, a1);
        aL0Que.EnQue(a2);
        aL1Que.FreeTensor(a1);
        LocalTensor<T> aL0 = aL0Que.DeQue<T>();
        for (uint32_t q = 0; q < tl.coSteps; ++q) {
            @CO_STEP@
            if (!tl.wPwResident) {  // the co-step's cbo FRACTAL_Z blocks are contiguous in GM
                LocalTensor<T> wp = wL1Que.AllocTensor<T>();
                DataCopy(wp, wPwGm[o0 * tl.c1 * C0 * C0], cbo * tl.c1 * C0 * C0);
                wL1Que.EnQue(wp);
            }
            LocalTensor<T> w1 = tl.wPwResident ? wPwRes : wL1Que.DeQue<T>();
            LocalTensor<T> b2 = bL0Que.AllocTensor<T>();
            LoadB(b2, w1, tl.wPwResident ? o0 * tl.c1 : 0, cbo);
            bL0Que.EnQue(b2);
            if (!tl.wPwResident) wL1Que.FreeTensor(w1);
            b2 = bL0Que.DeQue<T>();
@BIAS_BT@            LocalTensor<float> c = cQue.AllocTensor<float>();
            MmadParams mp;
            mp.m = thw > 1 ? thw : thwAl;  // m = 1 would run as GEMV; rows past thw are never read back
            mp.n = cbo * C0;
            mp.k = tl.c1 * C0;
@MMAD@            cQue.EnQue(c);
            bL0Que.FreeTensor(b2);
            c = cQue.DeQue<float>();
@FIXPIPE@            cQue.FreeTensor(c);
        }
        aL0Que.FreeTensor(aL0);
    }

    TPipe pipe;
@MEMBERS@
    GlobalTensor<T> wPwGm, yGm, dwGm;
@B_PW_DECL@@PRE_DECL@    LocalTensor<T> wPwRes;
    uint32_t group = 0;
@GEOM_MEMBERS@};
