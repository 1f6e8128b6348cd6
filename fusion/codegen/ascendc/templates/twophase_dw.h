    // ---- phase 1: DW units (tile, ci-block) over the plan's DW cores: round-robin, or (local_dw) by
    // row of tiles, every column and ci-block of a row on one core ------------------------------
    __aicore__ inline uint32_t DwUnits(uint32_t core) const { return @DW_UNITS@; }
    __aicore__ inline uint32_t DwUnit(uint32_t core, uint32_t k) const { return @DW_UNIT@; }
    __aicore__ inline uint32_t DwCores() const { return @DW_CORES@; }  // the cores with units: the first ones

    __aicore__ inline void DwPhase(uint32_t core)
    {
@TP_EYE_MAKE@        const uint32_t mine = DwUnits(core);
        if (mine == 0) {
@TP_PRELOAD_IDLE@            return;
        }
@RESIDENT_UB@        wDw = wDwQue.DeQue<T>();
        bDw = bDwQue.DeQue<float>();
@DW_BIAS16@        SetFlag<HardEvent::MTE2_S>(0);  // the DW taps are read by the scalar unit
        WaitFlag<HardEvent::MTE2_S>(0);
        // dw_out's copies take turns: unit k's DW writes copy k mod copies while the hand-off of
        // the unit before still reads the other; a copy is rewritten once its hand-off is done
        const uint32_t copies = @NS@::kDwOutCopies;
        for (uint32_t k = 0; k < mine; ++k) {
            const uint32_t u = DwUnit(core, k), q = UnitInner(u, tl.ciSteps);
            dwSlot = UnitInner(k, copies);
            SetTile(UnitOuter(u, tl.ciSteps));
            if (k >= copies) WaitFlag<HardEvent::MTE3_V>(dwSlot);  // the hand-off of unit k - copies is done
            CopyInX(q);
@TP_PRELOAD_DW@@TP_PREFETCH@            ComputeDw(q);
@TP_SE_CALL@            HandOff(q);
        }
        for (uint32_t k = mine > copies ? mine - copies : 0; k < mine; ++k)
            WaitFlag<HardEvent::MTE3_V>(UnitInner(k, copies));   // the last hand-offs' flags
        wDwQue.FreeTensor(wDw);
        bDwQue.FreeTensor(bDw);
    }

    // the unit's DW result (cb blocks of th x tw in UB) -> the workspace rows of its valid pixels
    __aicore__ inline void HandOff(uint32_t q)
    {
        const uint32_t c0 = BlockStart(q, tl.cib), cb = BlockLen(q, tl.cib, tl.c1);
        const uint32_t row = (n * tl.oh + oh0) * tl.ow + ow0;  // GEMM row of the tile's first pixel
        LocalTensor<T> dwOut = @DW_OUT@;
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        for (uint32_t c = 0; c < cb; ++c)
            DataCopy(dwGm[((c0 + c) * tl.mAl + row) * C0], dwOut[c * tl.th * tl.dwPitch * C0], OutRowsFrom(tl.dwPitch));
        SetFlag<HardEvent::MTE3_V>(dwSlot);  // waited before this copy of dw_out is written again
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
