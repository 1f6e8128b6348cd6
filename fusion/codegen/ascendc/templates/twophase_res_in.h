                LocalTensor<T> resT = resQue.AllocTensor<T>();
                CopyRows(resT, resGm, false);
                resQue.EnQue(resT);
                resT = resQue.DeQue<T>();
