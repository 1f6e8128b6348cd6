    // ---- the norm phase (schedules/norm_phase.norm_phase_units), between two SyncAlls: per unit
    // of lnPx pixels, all C1 blocks of them from the workspace, the channel LayerNorm of each pixel
    // (LayerNormPixels, ln_norm.h), written back in place
    static constexpr int32_t LN_EVENT = 6;   // the norm phase's own flag id (the DW loop uses 0 and 1)
    __aicore__ inline void LnPhase(uint32_t core)
    {
        const uint32_t mine = UnitsOf(core, tl.lnUnits, tl.lnCores);
        LocalTensor<float> a = lnXBuf.Get<float>();
@LN_IO@        for (uint32_t k = 0; k < mine; ++k) {
            const uint32_t u = UnitAt(core, k, tl.lnCores), p0 = u * tl.lnPx;
            const uint32_t px = tl.m - p0 < tl.lnPx ? tl.m - p0 : tl.lnPx;
            const uint32_t n = tl.c1 * px * C0;
            SetFlag<HardEvent::MTE3_MTE2>(LN_EVENT);   // the unit before is back in GM
            WaitFlag<HardEvent::MTE3_MTE2>(LN_EVENT);
            // the unit's pixels of every channel block: a burst a block, mAl pixels apart in GM
            DataCopy(io, dwGm[p0 * C0], DataCopyParams(static_cast<uint16_t>(tl.c1), static_cast<uint16_t>(px * PB),
                                                      static_cast<uint16_t>((tl.mAl - px) * PB), 0));
            SetFlag<HardEvent::MTE2_V>(LN_EVENT);
            WaitFlag<HardEvent::MTE2_V>(LN_EVENT);
@LN_WIDEN@            LayerNormPixels(a, tl.c1, px);
@LN_NARROW@            SetFlag<HardEvent::V_MTE3>(LN_EVENT);
            WaitFlag<HardEvent::V_MTE3>(LN_EVENT);
            DataCopy(dwGm[p0 * C0], io, DataCopyParams(static_cast<uint16_t>(tl.c1), static_cast<uint16_t>(px * PB),
                                                      0, static_cast<uint16_t>((tl.mAl - px) * PB)));
        }
        SetFlag<HardEvent::MTE3_V>(LN_EVENT);   // the last unit is out before the phase ends
        WaitFlag<HardEvent::MTE3_V>(LN_EVENT);
    }

