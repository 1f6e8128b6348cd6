            {   // 310P, fp16 epilogue (plan.epi_post16): L0C -> UB one output block at a time, cast to the
                // storage dtype on the way; then bias (per block), act2 and [+res] in the storage dtype, y out
@TP_RES_IN@                LocalTensor<T> yT = yQue.AllocTensor<T>();
@L0C_TO_Y16@@EPI16_OPS@                yQue.EnQue(yT);
@TP_RES_FREE@                yT = yQue.DeQue<T>();
                CopyRows(yT, yGm, true);
                yQue.FreeTensor(yT);
            }
