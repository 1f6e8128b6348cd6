    {   // block @K@ @BLOCK@: @IN_WHAT@ -> @OUT_WHAT@
        GET_TILING_DATA_WITH_STRUCT(@TILING@, t, tiling + @TILING_OFF@);
        GM_ADDR in = @IN@;
        GM_ADDR out = @OUT@;
        GM_ADDR usr = ws + @WS_OFF@;
        @NS@::TwoPhase@OPTYPE@ op;  // its own TPipe, released at the end of this scope
        op.Init(in, weights + @W_DW@, weights + @B_DW@, weights + @W_PW@, weights + @B_PW@, @RES_ARG@out, usr, t);
@PF_SET@        op.Process();
    }
