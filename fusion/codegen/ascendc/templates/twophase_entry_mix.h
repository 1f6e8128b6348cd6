    if ASCEND_IS_AIV {
        TwoPhaseAiv@OPTYPE@ op;
        op.Init(x, w_dw, b_dw, w_pw, b_pw, @SE_ARGS@@RES_ARG@y, usr, t);
        op.Process();
    }
    if ASCEND_IS_AIC {
        TwoPhaseAic@OPTYPE@ op;
        op.Init(x, w_dw, b_dw, w_pw, b_pw, @SE_ARGS@@RES_ARG@y, usr, t);
        op.Process();
    }
