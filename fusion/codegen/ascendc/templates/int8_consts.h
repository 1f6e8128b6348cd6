// The int8 DW->PW block's geometry, tile and requant constants, shared by the 310P and 910B
// kernels (templates/int8_dwsep_310p.cpp, int8_dwsep_910b.cpp; filled by emit_int8.py).
constexpr uint32_t N = @N@, C1 = @C1@, H = @H@, W = @W@, OH = @OH@, OW = @OW@;
constexpr uint32_t KH = @KH@, KW = @KW@, SH = @SH@, SW = @SW@, PT = @PT@, PL = @PL@;
constexpr uint32_t TH = @TH@, TW = @TW@, TWP = @TWP@, IH = @IH@, IW = @IW@, NH = @NH@, NW = @NW@;
constexpr uint32_t THW_AL = @THW_AL@, M1 = THW_AL / 16, N16 = @N16@, COB = @COB@, CO1 = @CO1@;
constexpr uint32_t WSTR = SW == 1 ? 64 : 32;     // a tap's weights: stored twice at stride 1 (two pixels a repeat)
constexpr bool W_RES = COB == N16;              // the PW weights stay in L1 (one co-step)
constexpr float X_ZP = @X_ZP@f;
constexpr float DW_LO = @DW_LO@f, DW_HI = @DW_HI@f, DW_ZP = @DW_ZP@f;   // clamp range - zp; zp (recentred)
constexpr float PW_LO = @PW_LO@f, PW_HI = @PW_HI@f, PW_ZP = @PW_ZP@f;
constexpr float RINT_MAGIC = 12582912.0f;   // 1.5 * 2^23
constexpr uint32_t PIX = 32;                // channels (and int8 bytes) a pixel
