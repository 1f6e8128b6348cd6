class Kernel@OPTYPE@ {
public:
    __aicore__ inline Kernel@OPTYPE@() {}

@INIT_ONE_CORE@        // one InitBuffer per KernelPlan buffer: bytes per copy x copies, as the plan budgeted
@INITS@
    }

    __aicore__ inline void Process()
    {
        LoadResident();
        const uint32_t core = GetBlockIdx(), mine = UnitsOf(core, tl.nTiles, tl.blockDim);
        for (uint32_t k = 0; k < mine; ++k) {
            const uint32_t tile = UnitAt(core, k, tl.blockDim);
            SetTile(tile);
            for (uint32_t q = 0; q < tl.ciSteps; ++q) {
                CopyInX(q);
                ComputeDw(q);
            }
            // dw_out is complete; the PW MACs read it through the scalar unit
            SetFlag<HardEvent::V_S>(0);
            WaitFlag<HardEvent::V_S>(0);
            for (uint32_t q = 0; q < tl.coSteps; ++q) {
                CopyInPw(q);
                ComputePw(q);
                CopyOut(q);
            }
        }
@CORE_FREE@    }

private:
@CORE_RESIDENT@
    // GM [co1][c1][ci0][co0] -> UB (Cin, cbo*C0): row ci holds the cbo output blocks side by side
    __aicore__ inline void LoadPwWeights(const LocalTensor<T>& wp, uint32_t o0, uint32_t cbo)
    {
        if (cbo == 1) {
            DataCopy(wp, wPwGm[o0 * tl.c1 * C0 * C0], tl.c1 * C0 * C0);
            return;
        }
        DataCopyParams p;
        p.blockCount = tl.c1 * C0;
        p.blockLen = PB;
        p.srcGap = 0;
        p.dstGap = (cbo - 1) * PB;
        for (uint32_t c = 0; c < cbo; ++c) DataCopy(wp[c * C0], wPwGm[(o0 + c) * tl.c1 * C0 * C0], p);
    }

@GEOMETRY@
@DW@

    // ---- PW -----------------------------------------------------------------------------
    __aicore__ inline void CopyInPw(uint32_t q)
    {
        @CO_STEP@
        if (!tl.wPwResident) {
            LocalTensor<T> wp = wPwQue.AllocTensor<T>();
            LoadPwWeights(wp, o0, cbo);
            wPwQue.EnQue(wp);
        }
@RES_COPYIN@    }

    __aicore__ inline void ComputePw(uint32_t q)
    {
        @CO_STEP@
        const uint32_t row = cbo * C0;  // pw_acc is pixel-major: (pixel, co block, C0)
        LocalTensor<T> wp = tl.wPwResident ? wPwRes : wPwQue.DeQue<T>();
        LocalTensor<T> dwOut = dwOutBuf.Get<T>();
        LocalTensor<float> acc = pwAccBuf.Get<float>();
        Duplicate(acc, 0.0f, thw * row);
        // acc[p, :, :] += dw_out[p, ci] * w_pw[ci, :, :]  (fp32, input channels in order)
        for (uint32_t ci = 0; ci < tl.cin; ++ci) {
            const LocalTensor<T> wRow = wp[ci * row];
            const uint32_t base = (ci / C0) * thw * C0 + ci % C0;
            for (uint32_t p = 0; p < thw; ++p) {
                const T s = dwOut.GetValue(base + p * C0);
                Axpy(acc[p * row], wRow, s, static_cast<int32_t>(row));
            }
        }
        // + b_pw: up to 4 output blocks (64 lanes) per repeat, one pixel per repeat
        for (uint32_t g = 0; g < cbo; g += 4) {
            const uint32_t lanes = (cbo - g < 4 ? cbo - g : 4) * C0;
            for (uint32_t p0 = 0; p0 < thw; p0 += MAX_REPEAT) {
                const uint32_t reps = thw - p0 < MAX_REPEAT ? thw - p0 : MAX_REPEAT;
                Add(acc[p0 * row + g * C0], acc[p0 * row + g * C0], bPw[(o0 + g) * C0], static_cast<uint64_t>(lanes),
                    reps, BinaryRepeatParams(1, 1, 1, 2 * cbo, 2 * cbo, 0));
            }
        }
        Act2(acc, static_cast<int32_t>(thw * row), @ACT2_TMP@);
@ACT2_CH@@RES_ADD@        LocalTensor<T> yT = yQue.AllocTensor<T>();
        for (uint32_t c = 0; c < cbo; ++c) {
@CAST_Y@
        }
        yQue.EnQue(yT);
        if (!tl.wPwResident) wPwQue.FreeTensor(wp);
@RES_FREE@    }

    __aicore__ inline void CopyOut(uint32_t q)
    {
        @CO_STEP@
        LocalTensor<T> yT = yQue.DeQue<T>();
        for (uint32_t c = 0; c < cbo; ++c) DataCopy(yGm[OutOffset(o0 + c)], yT[c * thw * C0], OutRows(true));
        yQue.FreeTensor(yT);
    }

    TPipe pipe;
@MEMBERS@
    GlobalTensor<T> xGm, wDwGm, wPwGm, yGm;
    GlobalTensor<float> bDwGm, bPwGm;
@RES_GM_DECL@@SLOPE_DECL@    LocalTensor<T> wDw, wPwRes;
    LocalTensor<float> bDw, bPw;
@GEOM_MEMBERS@};
