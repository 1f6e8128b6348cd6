            // pixel-major fp32 (p, co, C0) -> NC1HWC0 fp16 (co, p, C0): one pixel per repeat
            for (uint32_t p0 = 0; p0 < thw; p0 += MAX_REPEAT) {
                const uint32_t reps = thw - p0 < MAX_REPEAT ? thw - p0 : MAX_REPEAT;
                Cast(yT[(c * thw + p0) * C0], acc[p0 * row + c * C0], RoundMode::CAST_NONE,
                     static_cast<uint64_t>(C0), reps, UnaryRepeatParams(1, 1, 1, 2 * cbo));
            }