            LocalTensor<T> tacc = dwOut[@DW_BASE@ + c * thw * C0];   // 16-bit: the taps accumulate in dw_out
            Duplicate(tacc, static_cast<T>(0), thw * C0);
