        LocalTensor<T> w = wDwQue.AllocTensor<T>();
        DataCopy(w, wDwGm, tl.c1 * tl.kh * tl.kw * C0);
        wDwQue.EnQue(w);
        LocalTensor<float> b1 = bDwQue.AllocTensor<float>();
        DataCopy(b1, bDwGm, tl.c1 * C0);
        bDwQue.EnQue(b1);
@SLOPE_LOAD@