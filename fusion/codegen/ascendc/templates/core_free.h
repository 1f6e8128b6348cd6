        wDwQue.FreeTensor(wDw);
        bDwQue.FreeTensor(bDw);
        bPwQue.FreeTensor(bPw);
@SLOPE_FREE@        if (tl.wPwResident) @W_QUE@.FreeTensor(wPwRes);
