        Cast(acc, dwOut[@DW_BASE@], RoundMode::CAST_NONE, cb * thw * C0);   // widened for bias and act1
