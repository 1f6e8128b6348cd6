        LocalTensor<float> b = bPwL1Que.AllocTensor<float>();
        DataCopy(b, bPwGm, tl.co1 * C0);
        bPwL1Que.EnQue(b);
        bPwL1 = bPwL1Que.DeQue<float>();
