        LocalTensor<float> b2 = bPwQue.AllocTensor<float>();
        DataCopy(b2, bPwGm, tl.co1 * C0);
        bPwQue.EnQue(b2);
        bPw = bPwQue.DeQue<float>();
