// LeakyReLU y = max(x, alpha * x) (half) in the classic TQue pipeline, with the tiling read by
// GET_TILING_DATA (struct registered with REGISTER_TILING_DEFAULT) and checked on the device
// with ascendc_assert: a tile must be a whole number of 256 B repeats and divide the block.
#include "kernel_operator.h"

struct LeakyTiling {
    uint32_t blockLength;
    uint32_t tileLength;
    float alpha;
};
REGISTER_TILING_DEFAULT(LeakyTiling);

extern "C" __global__ __aicore__ void leaky_assert(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GET_TILING_DATA(t, tiling);
    ascendc_assert(t.tileLength % 128 == 0 && t.blockLength % t.tileLength == 0,
                   "tileLength %u must be a multiple of 128 halves and divide blockLength %u", t.tileLength,
                   t.blockLength);
    (void)workspace;
    const uint64_t base = AscendC::GetBlockIdx() * static_cast<uint64_t>(t.blockLength);
    AscendC::GlobalTensor<half> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ half*)x + base, t.blockLength);
    yGm.SetGlobalBuffer((__gm__ half*)y + base, t.blockLength);
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 2> inQ;
    AscendC::TQue<AscendC::TPosition::VECOUT, 2> outQ;
    AscendC::TBuf<AscendC::TPosition::VECCALC> scaled;
    pipe.InitBuffer(inQ, 2, t.tileLength * sizeof(half));
    pipe.InitBuffer(outQ, 2, t.tileLength * sizeof(half));
    pipe.InitBuffer(scaled, t.tileLength * sizeof(half));
    for (uint32_t i = 0; i < t.blockLength / t.tileLength; ++i) {
        AscendC::LocalTensor<half> xl = inQ.AllocTensor<half>();
        AscendC::DataCopy(xl, xGm[i * t.tileLength], t.tileLength);
        inQ.EnQue(xl);
        xl = inQ.DeQue<half>();
        AscendC::LocalTensor<half> yl = outQ.AllocTensor<half>();
        AscendC::LocalTensor<half> ax = scaled.Get<half>();
        AscendC::Muls(ax, xl, static_cast<half>(t.alpha), t.tileLength);
        AscendC::Max(yl, xl, ax, t.tileLength);
        outQ.EnQue(yl);
        inQ.FreeTensor(xl);
        yl = outQ.DeQue<half>();
        AscendC::DataCopy(yGm[i * t.tileLength], yl, t.tileLength);
        outQ.FreeTensor(yl);
    }
}
