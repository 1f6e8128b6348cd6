        for (uint32_t c = 0; c < cbo; ++c)  // act2 per output block (pixel-major acc)
            PreluBlock(acc[c * C0], thw, static_cast<uint8_t>(2 * cbo), sPw[(o0 + c) * C0], @SCRATCH@);
