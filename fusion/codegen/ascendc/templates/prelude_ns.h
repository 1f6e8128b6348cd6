namespace {
using T = @T@;                        // storage dtype of activations and weights
constexpr uint32_t C0 = 16;            // channels per block (NC1HWC0)
constexpr uint32_t PB = @PB@;          // DataBlocks (32 B) per pixel of C0 channels
constexpr uint32_t MAX_REPEAT = 255;   // repeat count limit of one vector instruction
@EXTRA@
// the program's loop formulas (schedules/loops.py): tile loop, channel blocks, unit decodes, windows
@LOOP_FNS@
// acc (px pixels x 16 fp32 channels) += bias (16 fp32) in two halves: lane l of a repeat is
// channel 8h + l%8 of pixel l/8 (dst block stride 2 DataBlocks = one pixel), 8 pixels a repeat,
// the bias half read by every pixel (src1 strides 0); a ragged last group masked.
__aicore__ inline void AddBiasHalves(const LocalTensor<float>& acc, const LocalTensor<float>& bias, uint32_t px)
{
    const uint32_t groups = px / 8, rem = px % 8;
    const BinaryRepeatParams rp(2, 2, 0, 16, 16, 0);
    for (uint32_t h = 0; h < 2; ++h) {
        for (uint32_t g0 = 0; g0 < groups; g0 += MAX_REPEAT) {
            const uint32_t reps = groups - g0 < MAX_REPEAT ? groups - g0 : MAX_REPEAT;
            Add(acc[g0 * 8 * C0 + h * 8], acc[g0 * 8 * C0 + h * 8], bias[h * 8], static_cast<uint64_t>(64), reps, rp);
        }
        if (rem != 0)
            Add(acc[groups * 8 * C0 + h * 8], acc[groups * 8 * C0 + h * 8], bias[h * 8], static_cast<uint64_t>(rem * 8),
                1, rp);
    }
}

// d = s + a 16-channel bias in the storage dtype, over px pixels of one channel block (16-bit: one
// DataBlock a pixel, 8 pixels a repeat, the bias DataBlock read by each; a ragged group apart)
template <typename T>
__aicore__ inline void AddBias16(const LocalTensor<T>& d, const LocalTensor<T>& s, const LocalTensor<T>& bias,
                                 uint32_t px)
{
    const uint32_t groups = px / 8, rem = px % 8;
    const BinaryRepeatParams rp(1, 1, 0, 8, 8, 0);
    for (uint32_t g0 = 0; g0 < groups; g0 += MAX_REPEAT) {
        const uint32_t reps = groups - g0 < MAX_REPEAT ? groups - g0 : MAX_REPEAT;
        Add(d[g0 * 8 * C0], s[g0 * 8 * C0], bias, static_cast<uint64_t>(128), reps, rp);
    }
    if (rem != 0)
        Add(d[groups * 8 * C0], s[groups * 8 * C0], bias, static_cast<uint64_t>(rem * C0), 1, rp);
}
}  // namespace

