// ---- AIV: DW of its tiles, hand-off to GM[, epilogue] ------------------------------------
class Aiv@OPTYPE@ {
public:
    __aicore__ inline Aiv@OPTYPE@() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w_dw, GM_ADDR b_dw, @B_PW_PARAM@@SLOPE_PARAMS@@RES_PARAM_AIV@GM_ADDR y, __gm__ T* usr,
                                const @TILING@& t)
    {
        tl = t;
        thw = t.th * t.tw;
        thwAl = t.thwAl;
        aivIdx = GetBlockIdx();  // AIV index: block * 2 + GetSubBlockIdx()
        xGm.SetGlobalBuffer((__gm__ T*)x, t.batch * t.c1 * t.h * t.w * C0);
        wDwGm.SetGlobalBuffer((__gm__ T*)w_dw, t.c1 * t.kh * t.kw * C0);
        bDwGm.SetGlobalBuffer((__gm__ float*)b_dw, t.c1 * C0);
@B_PW_SET@@RES_GM_SET_AIV@@SLOPE_SET@        yGm.SetGlobalBuffer((__gm__ T*)y, t.batch * t.co1 * t.oh * t.ow * C0);
        dwGm.SetGlobalBuffer(usr, t.nTiles * t.c1 * thw * C0);
@PRE_SET@        // one InitBuffer per KernelPlan buffer in UB: bytes per copy x copies
@INITS@
    }

    __aicore__ inline void Process()
    {
        const uint32_t rounds = TilesOf(GroupMember(UnitOuter(aivIdx, RATIO), 0, RATIO));  // the group's first AIV has the most tiles
        const uint32_t mine = TilesOf(aivIdx);
        if (mine > 0) LoadResident();
        for (uint32_t k = 0; k < rounds; ++k) {
            if (k < mine) {
                SetTile(UnitAt(aivIdx, k, tl.blockDim));
                if (k > 0) WaitFlag<HardEvent::MTE3_V>(0);  // the previous tile's hand-off has read dw_out
                for (uint32_t q = 0; q < tl.ciSteps; ++q) {
                    CopyInX(q);
                    ComputeDw(q);
                    HandOff(q);
                }
                SetFlag<HardEvent::MTE3_V>(0);  // waited by the next tile's DW: the epilogues go on meanwhile
            }
            CrossCoreSetFlag<2, PIPE_MTE3>(FLAG_DW);  // every round, tile or not: the AIC waits for both AIVs
            if (k >= LAG) Finish(k - LAG, mine);
        }
        for (uint32_t k = rounds > LAG ? rounds - LAG : 0; k < rounds; ++k) Finish(k, mine);
        if (mine > 0) {
            WaitFlag<HardEvent::MTE3_V>(0);  // the last hand-off's flag
            wDwQue.FreeTensor(wDw);
            bDwQue.FreeTensor(bDw);
@SLOPE_FREE_AIV@@B_PW_FREE@        }
    }

private:
    // tiles of AIV i: the program's round robin over the plan's cores (none past them)
    __aicore__ inline uint32_t TilesOf(uint32_t i) const { return UnitsOf(i, tl.nTiles, tl.blockDim); }

    // the tile's GM slots: DW result (c1, thw, C0) and pre-activation (co1, thw, C0)
    __aicore__ inline uint32_t Slot() const { return tileIdx * tl.c1 * thw * C0; }
    __aicore__ inline uint32_t PreOffset() const { return tl.nTiles * tl.c1 * thw * C0; }
    __aicore__ inline uint32_t PreSlot() const { return tileIdx * tl.co1 * thw * C0; }

    // round k is finished once the AIC has run it (FLAG_PW)[; then the epilogue of the AIV's tile]
    __aicore__ inline void Finish(uint32_t k, uint32_t mine)
    {
        CrossCoreWaitFlag(FLAG_PW);
@FINISH_EPI@    }

    // ---- resident: w_dw, b_dw[, b_pw] in UB, once per AIV with tiles ---------------------
    __aicore__ inline void LoadResident()
    {
@RESIDENT_UB@        wDw = wDwQue.DeQue<T>();
        bDw = bDwQue.DeQue<float>();
@B_PW_LOAD@        // the DW taps are read by the scalar unit
        SetFlag<HardEvent::MTE2_S>(0);
        WaitFlag<HardEvent::MTE2_S>(0);
    }

@GEOMETRY@
@DW@
    // the ci-step's slice of the DW result -> the tile's GM slot (c1, thw, C0)
    __aicore__ inline void HandOff(uint32_t q)
    {
        const uint32_t c0 = BlockStart(q, tl.cib), cb = BlockLen(q, tl.cib, tl.c1);
        LocalTensor<T> dwOut = dwOutBuf.Get<T>();
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(dwGm[Slot() + c0 * thw * C0], dwOut[c0 * thw * C0], cb * thw * C0);
    }

@AIV_EPILOGUE@
    TPipe pipe;
@MEMBERS@
    GlobalTensor<T> xGm, wDwGm, yGm, dwGm;
    GlobalTensor<float> bDwGm;
@B_PW_DECL@@PRE_DECL@@RES_GM_DECL_AIV@@SLOPE_DECL@    LocalTensor<T> wDw;
    LocalTensor<float> bDw;
    uint32_t aivIdx = 0;
@GEOM_MEMBERS@};

