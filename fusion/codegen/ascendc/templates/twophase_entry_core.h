    TwoPhase@OPTYPE@ op;
    op.Init(x, w_dw, b_dw, w_pw, b_pw, @SE_ARGS@@RES_ARG@y, usr, t);
    op.Process();
