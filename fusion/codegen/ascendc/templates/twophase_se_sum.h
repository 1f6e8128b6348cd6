    // ---- squeeze-and-excitation in phase 1 (schedules/se_program.se_dw_steps): the unit's channel
    // sums over its valid pixels and its share of W1 . sum, atomically added into the image's slot
    static constexpr int32_t SE_EVENT = 5;   // the SE steps' own flag id, SE_EVENT + 1 the second chunk copy's (the DW loop uses 0 and 1)
    __aicore__ inline void SeSums(uint32_t q)
    {
        const uint32_t c0 = BlockStart(q, tl.cib), cb = BlockLen(q, tl.cib, tl.c1), px = ohv * owv;
        LocalTensor<T> dwOut = @DW_OUT@;
        LocalTensor<float> acc = seAccBuf.Get<float>(), sum = seSumBuf.Get<float>();
        LocalTensor<float> hid = seHidBuf.Get<float>(), w1 = seW1Buf.Get<float>();
        for (uint32_t c = 0; c < cb; ++c) {
            for (uint32_t i = 0; i < ohv; ++i)   // the valid pixels, row by row, compact in fp32
@SE_ROW@
            for (uint32_t m = px; m > 1; m -= m / 2)   // halving: pixels [0, m/2) += [m - m/2, m)
                Add(acc, acc, acc[(m - m / 2) * C0], static_cast<int32_t>(m / 2 * C0));
            Adds(sum[c * C0], acc, 0.0f, static_cast<int32_t>(C0));
        }
        Duplicate(hid, 0.0f, static_cast<int32_t>(tl.sePad));
        SetFlag<HardEvent::V_S>(SE_EVENT);   // the sums are read as Axpy scalars
        WaitFlag<HardEvent::V_S>(SE_EVENT);
        const uint32_t cols = cb * C0;
        for (uint32_t j0 = 0; j0 < cols; j0 += tl.seW1Rows) {   // W1 transposed: one row (sePad floats) per channel
            const uint32_t pc = cols - j0 < tl.seW1Rows ? cols - j0 : tl.seW1Rows;
            SetFlag<HardEvent::V_MTE2>(SE_EVENT);   // the Axpys of the piece before are done with w1
            WaitFlag<HardEvent::V_MTE2>(SE_EVENT);
            DataCopy(w1, seW1Gm[(c0 * C0 + j0) * tl.sePad], pc * tl.sePad);
            SetFlag<HardEvent::MTE2_V>(SE_EVENT);
            WaitFlag<HardEvent::MTE2_V>(SE_EVENT);
            for (uint32_t j = 0; j < pc; ++j)
                Axpy(hid, w1[j * tl.sePad], sum.GetValue(j0 + j), static_cast<int32_t>(tl.sePad));
        }
        SetFlag<HardEvent::V_MTE3>(SE_EVENT);
        WaitFlag<HardEvent::V_MTE3>(SE_EVENT);
        SetAtomicAdd<float>();   // every unit of the image adds its share (the host zeroes the slot)
        DataCopy(seWsGm[n * tl.sePad], hid, tl.sePad);
        SetAtomicNone();
        SetFlag<HardEvent::MTE3_V>(SE_EVENT);   // hid and acc are written again by the next unit
        WaitFlag<HardEvent::MTE3_V>(SE_EVENT);
    }

