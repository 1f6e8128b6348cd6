constexpr uint32_t RATIO = 2;          // AIVs per AIC (KERNEL_TYPE_MIX_AIC_1_2)
constexpr uint32_t LAG = @LAG@;            // rounds an AIV runs ahead of its AIC
constexpr uint16_t FLAG_DW = @FLAG_DW@;      // AIVs -> AIC: the round's DW results are in GM
constexpr uint16_t FLAG_PW = @FLAG_PW@;      // AIC -> AIVs: the round's PW is done
