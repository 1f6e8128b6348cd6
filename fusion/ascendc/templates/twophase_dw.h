    // ---- phase 1: DW units (tile, ci-block) round-robin over the plan's DW cores ----------
    __aicore__ inline void DwPhase(uint32_t core)
    {
        const uint32_t mine = UnitsOf(core, tl.nTiles * tl.ciSteps, tl.blockDim);
        if (mine == 0) return;
@RESIDENT_UB@        wDw = wDwQue.DeQue<T>();
        bDw = bDwQue.DeQue<float>();
@DW_BIAS16@        SetFlag<HardEvent::MTE2_S>(0);  // the DW taps are read by the scalar unit
        WaitFlag<HardEvent::MTE2_S>(0);
        for (uint32_t k = 0; k < mine; ++k) {
            const uint32_t u = UnitAt(core, k, tl.blockDim), q = UnitInner(u, tl.ciSteps);
            SetTile(UnitOuter(u, tl.ciSteps));
            CopyInX(q);
@TP_PRELOAD_DW@            ComputeDw(q);
            HandOff(q);
        }
        wDwQue.FreeTensor(wDw);
        bDwQue.FreeTensor(bDw);
    }

    // the unit's DW result (cb blocks of th x tw in UB) -> the workspace rows of its valid pixels
    __aicore__ inline void HandOff(uint32_t q)
    {
        const uint32_t c0 = BlockStart(q, tl.cib), cb = BlockLen(q, tl.cib, tl.c1);
        const uint32_t row = (n * tl.oh + oh0) * tl.ow + ow0;  // GEMM row of the tile's first pixel
        LocalTensor<T> dwOut = dwOutBuf.Get<T>();
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        for (uint32_t c = 0; c < cb; ++c)
            DataCopy(dwGm[((c0 + c) * tl.mAl + row) * C0], dwOut[c * tl.th * tl.dwPitch * C0], OutRowsFrom(tl.dwPitch));
        SetFlag<HardEvent::MTE3_V>(0);  // the next unit's DW may overwrite dw_out
        WaitFlag<HardEvent::MTE3_V>(0);
    }

    // valid rows of one DW result block, UB rows `pitch` pixels apart (plan.dw_pitch: tw, or iw
    // for wide rows) -> the GM workspace rows (oh x ow)
    __aicore__ inline DataCopyParams OutRowsFrom(uint32_t pitch) const
    {
        DataCopyParams p;
        p.blockCount = ohv;
        p.blockLen = owv * PB;
        p.srcGap = (pitch - owv) * PB;
        p.dstGap = (tl.ow - owv) * PB;
        return p;
    }
