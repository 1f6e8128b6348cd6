            LocalTensor<T> tacc = dwOut[@DW_BASE@ + c * thw * C0];   // the first tap writes it (Mul): no zeroing
