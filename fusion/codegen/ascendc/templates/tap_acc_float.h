            LocalTensor<float> tacc = acc[c * thw * C0];
            Duplicate(tacc, 0.0f, thw * C0);
