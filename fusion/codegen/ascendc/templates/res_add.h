        // + residual (after act2, as the model adds it): acc[p, c, :] += 1 * res[c, p, :]
        LocalTensor<T> resT = resQue.DeQue<T>();
        for (uint32_t c = 0; c < cbo; ++c) {
            for (uint32_t p0 = 0; p0 < thw; p0 += MAX_REPEAT) {
                const uint32_t reps = thw - p0 < MAX_REPEAT ? thw - p0 : MAX_REPEAT;
                Axpy(acc[p0 * row + c * C0], resT[(c * thw + p0) * C0], static_cast<T>(1),
                     static_cast<uint64_t>(C0), reps, UnaryRepeatParams(1, 1, 2 * cbo, PB));
            }
        }
