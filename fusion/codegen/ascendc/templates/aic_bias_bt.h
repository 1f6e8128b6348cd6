            // the co-step's bias L1 -> bias table (64 B units: one C0 block of fp32 each)
            LocalTensor<float> bt = btQue.AllocTensor<float>();
            DataCopy(bt, bPwL1[o0 * C0], DataCopyParams(1, static_cast<uint16_t>(cbo), 0, 0));
            btQue.EnQue(bt);
            bt = btQue.DeQue<float>();
