    GlobalTensor<float> @MEMBER@Gm;
    LocalTensor<float> @MEMBER@;
