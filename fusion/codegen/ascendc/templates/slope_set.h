        @MEMBER@Gm.SetGlobalBuffer((__gm__ float*)@NAME@, t.@BLOCKS@ * C0);
