    TwoPhase@OPTYPE@ op;
    op.Init(x, w_dw, b_dw, w_pw, b_pw, @RES_ARG@y, usr, t);
    op.Process();
