    {   // block @K@ @BLOCK@: @IN_WHAT@ -> @OUT_WHAT@
        GET_TILING_DATA_WITH_STRUCT(@TILING@, t, tiling + @TILING_OFF@);
        GM_ADDR in = @IN@;
        GM_ADDR out = @OUT@;
        GM_ADDR usr = ws + @WS_OFF@;
        if ASCEND_IS_AIV {
            @NS@::TwoPhaseAiv@OPTYPE@ op;
            op.Init(in, weights + @W_DW@, weights + @B_DW@, weights + @W_PW@, weights + @B_PW@, @RES_ARG@out, usr, t);
            op.Process();
        }
        if ASCEND_IS_AIC {
            @NS@::TwoPhaseAic@OPTYPE@ op;
            op.Init(in, weights + @W_DW@, weights + @B_DW@, weights + @W_PW@, weights + @B_PW@, @RES_ARG@out, usr, t);
            op.Process();
        }
    }
