        @MEMBER@Que.FreeTensor(@MEMBER@);
