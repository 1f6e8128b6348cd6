            LocalTensor<T> tacc = dwOut[@DW_BASE@ + c * tl.th * tl.dwPitch * C0];   // the first tap writes it (Mul): no zeroing
