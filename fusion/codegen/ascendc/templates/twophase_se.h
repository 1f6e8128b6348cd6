    // ---- the SE phase (schedules/se_program.se_phase_units), between two SyncAlls: per (image,
    // group of seBlocks channel blocks) the hidden vector, the group's scales, then the DW result
    // of those blocks in the workspace scaled in place
    __aicore__ inline void SePhase(uint32_t core)
    {
        const uint32_t mine = UnitsOf(core, tl.batch * tl.seGroups, tl.seCores), hw = tl.oh * tl.ow;
        LocalTensor<float> hid = seHidBuf.Get<float>(), b1 = seB1Buf.Get<float>(), tmp = seTmpBuf.Get<float>();
        LocalTensor<float> w2 = seW2Buf.Get<float>(), scale = seScaleBuf.Get<float>();
        LocalTensor<T> tiles = seTileBuf.Get<T>();
        const uint32_t copies = @NS@::kSeTileCopies;
        for (uint32_t k = 0; k < mine; ++k) {
            const uint32_t u = UnitAt(core, k, tl.seCores), img = UnitOuter(u, tl.seGroups), g = UnitInner(u, tl.seGroups);
            const uint32_t g0 = BlockStart(g, tl.seBlocks), blocks = BlockLen(g, tl.seBlocks, tl.c1), ch = blocks * C0;
            SetFlag<HardEvent::V_MTE2>(SE_EVENT);   // the unit before is done with hid, b1 and scale
            WaitFlag<HardEvent::V_MTE2>(SE_EVENT);
            DataCopy(hid, seWsGm[img * tl.sePad], tl.sePad);   // sum over the image's DW units of W1 . sum
            DataCopy(b1, seB1Gm, tl.sePad);
            DataCopy(scale, seB2Gm[g0 * C0], ch);   // the expand conv accumulates onto its bias
            SetFlag<HardEvent::MTE2_V>(SE_EVENT);
            WaitFlag<HardEvent::MTE2_V>(SE_EVENT);
            Muls(hid, hid, 1.0f / static_cast<float>(hw), static_cast<int32_t>(tl.sePad));   // W1 . mean
            Add(hid, hid, b1, static_cast<int32_t>(tl.sePad));
            SeAct(hid, static_cast<int32_t>(tl.sePad), tmp, static_cast<int32_t>(tl.sePad));
            SetFlag<HardEvent::V_S>(SE_EVENT);   // the hidden values are read as Axpy scalars
            WaitFlag<HardEvent::V_S>(SE_EVENT);
            for (uint32_t q0 = 0; q0 < tl.seMid; q0 += tl.seW2Rows) {   // W2 transposed: per hidden channel its row
                const uint32_t rows = tl.seMid - q0 < tl.seW2Rows ? tl.seMid - q0 : tl.seW2Rows;
                SetFlag<HardEvent::V_MTE2>(SE_EVENT);
                WaitFlag<HardEvent::V_MTE2>(SE_EVENT);
                DataCopy(w2, seW2Gm[q0 * tl.c1 * C0 + g0 * C0],
                         DataCopyParams(static_cast<uint16_t>(rows), static_cast<uint16_t>(blocks * 2),
                                        static_cast<uint16_t>((tl.c1 - blocks) * 2), 0));
                SetFlag<HardEvent::MTE2_V>(SE_EVENT);
                WaitFlag<HardEvent::MTE2_V>(SE_EVENT);
                for (uint32_t r = 0; r < rows; ++r)
                    Axpy(scale, w2[r * ch], hid.GetValue(q0 + r), static_cast<int32_t>(ch));
            }
            SeGate(scale, static_cast<int32_t>(ch));
@SE_SCALE16@            // the chunks take the se_tile copies in turn: chunk i + 1 comes in while chunk i is scaled
            // and goes out; a copy is loaded again once its chunk before is back in GM (flag SE_EVENT + copy)
            uint32_t i = 0;
            for (uint32_t b = 0; b < blocks; ++b) {
                for (uint32_t p0 = 0; p0 < hw; p0 += tl.seChunk, ++i) {
                    const uint32_t pc = hw - p0 < tl.seChunk ? hw - p0 : tl.seChunk, s = UnitInner(i, copies);
                    const uint64_t at = ((g0 + b) * tl.mAl + img * hw + p0) * C0;
                    LocalTensor<T> tile = tiles[s * (tl.seTileBytes / sizeof(T))];
                    if (i >= copies) WaitFlag<HardEvent::MTE3_MTE2>(SE_EVENT + s);   // chunk i - copies is back in GM
                    DataCopy(tile, dwGm[at], pc * C0);
                    SetFlag<HardEvent::MTE2_V>(SE_EVENT + s);
                    WaitFlag<HardEvent::MTE2_V>(SE_EVENT + s);
@SE_MUL@
                    SetFlag<HardEvent::V_MTE3>(SE_EVENT + s);
                    WaitFlag<HardEvent::V_MTE3>(SE_EVENT + s);
                    DataCopy(dwGm[at], tile, pc * C0);
                    SetFlag<HardEvent::MTE3_MTE2>(SE_EVENT + s);
                }
            }
            for (uint32_t k = i > copies ? i - copies : 0; k < i; ++k)
                WaitFlag<HardEvent::MTE3_MTE2>(SE_EVENT + UnitInner(k, copies));   // the last chunks' flags
            SetFlag<HardEvent::MTE3_V>(SE_EVENT);   // the last chunk is out before the next unit's ops
            WaitFlag<HardEvent::MTE3_V>(SE_EVENT);
        }
    }

    // x (px pixels x 16 channels, in place) *= 16 channel scales, as AddBiasHalves / AddBias16 add a bias
    __aicore__ inline void MulScaleHalves(const LocalTensor<float>& x, const LocalTensor<float>& s, uint32_t px)
    {
        const uint32_t groups = px / 8, rem = px % 8;
        const BinaryRepeatParams rp(2, 2, 0, 16, 16, 0);
        for (uint32_t h = 0; h < 2; ++h) {
            for (uint32_t g0 = 0; g0 < groups; g0 += MAX_REPEAT) {
                const uint32_t reps = groups - g0 < MAX_REPEAT ? groups - g0 : MAX_REPEAT;
                Mul(x[g0 * 8 * C0 + h * 8], x[g0 * 8 * C0 + h * 8], s[h * 8], static_cast<uint64_t>(64), reps, rp);
            }
            if (rem != 0)
                Mul(x[groups * 8 * C0 + h * 8], x[groups * 8 * C0 + h * 8], s[h * 8], static_cast<uint64_t>(rem * 8), 1, rp);
        }
    }
    __aicore__ inline void MulScale16(const LocalTensor<half>& x, const LocalTensor<half>& s, uint32_t px)
    {
        const uint32_t groups = px / 8, rem = px % 8;
        const BinaryRepeatParams rp(1, 1, 0, 8, 8, 0);
        for (uint32_t g0 = 0; g0 < groups; g0 += MAX_REPEAT) {
            const uint32_t reps = groups - g0 < MAX_REPEAT ? groups - g0 : MAX_REPEAT;
            Mul(x[g0 * 8 * C0], x[g0 * 8 * C0], s, static_cast<uint64_t>(128), reps, rp);
        }
        if (rem != 0)
            Mul(x[groups * 8 * C0], x[groups * 8 * C0], s, static_cast<uint64_t>(rem * C0), 1, rp);
    }
@SE_ACT_FN@@SE_GATE_FN@
