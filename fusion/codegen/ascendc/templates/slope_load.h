        LocalTensor<float> @NAME@Ub = @MEMBER@Que.AllocTensor<float>();
        DataCopy(@NAME@Ub, @MEMBER@Gm, tl.@BLOCKS@ * C0);
        @MEMBER@Que.EnQue(@NAME@Ub);
        @MEMBER@ = @MEMBER@Que.DeQue<float>();
