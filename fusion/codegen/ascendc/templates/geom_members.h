    @TILING@ tl;
    uint32_t thw = 0, thwAl = 0;   // tile pixels; padded to the cube's 16-row fractals
    uint32_t tileIdx = 0, n = 0, oh0 = 0, ow0 = 0, ohv = 0, owv = 0, ihv = 0, iwv = 0;
    int32_t ih0 = 0, iw0 = 0, rLo = 0, cLo = 0;
    bool pad = false;
