        LocalTensor<T> resT = resQue.AllocTensor<T>();
        for (uint32_t c = 0; c < cbo; ++c)
            DataCopy(resT[c * thw * C0], resGm[OutOffset(o0 + c)], OutRows(false));
        resQue.EnQue(resT);
