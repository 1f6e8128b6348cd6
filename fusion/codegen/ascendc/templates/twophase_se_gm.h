        seW1Gm.SetGlobalBuffer((__gm__ float*)w_se1, t.c1 * C0 * t.sePad);
        seB1Gm.SetGlobalBuffer((__gm__ float*)b_se1, t.sePad);
        seW2Gm.SetGlobalBuffer((__gm__ float*)w_se2, t.seMid * t.c1 * C0);
        seB2Gm.SetGlobalBuffer((__gm__ float*)b_se2, t.c1 * C0);
        seWsGm.SetGlobalBuffer((__gm__ float*)(usr + t.wsSync), t.wsSe / sizeof(float));
