        if ASCEND_IS_@ROLE@ {   // block @K@ @BLOCK@, image chunk @C@: its @PHASE@ phase
            GET_TILING_DATA_WITH_STRUCT(@TILING@, t, tiling + @TILING_OFF@);
            @NS@::TwoPhase@CLS@@OPTYPE@ op;
            op.Init(@IN@, weights + @W_DW@, weights + @B_DW@, weights + @W_PW@, weights + @B_PW@, @RES_ARG@@OUT@,
                    ws + @WS_OFF@, t);
            @AHEAD@op.RunPhase(@PH@@WARM@);
        }
