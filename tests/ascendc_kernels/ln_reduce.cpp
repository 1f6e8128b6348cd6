// The cross-lane steps of the fused channel LayerNorm (templates/ln_norm.h) on their own:
// st[p] = the 16 lanes of pixel p summed (WholeReduceSum, a repeat a pixel), then each st[p]
// filled into a DataBlock of y (Brcb, 8 pixels a repeat). x: pixels x 16 fp32; y: pixels x 8.
#include "kernel_operator.h"

struct LnTiling {
    uint32_t pixels;  // a multiple of 8
    uint32_t pad;
};

extern "C" __global__ __aicore__ void ln_reduce_fill(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(LnTiling, t, tiling);
    const uint32_t px = t.pixels;
    AscendC::GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, px * 16);
    yGm.SetGlobalBuffer((__gm__ float*)y, px * 8);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> xBuf, sBuf, yBuf;
    pipe.InitBuffer(xBuf, px * 16 * sizeof(float));
    pipe.InitBuffer(sBuf, px * sizeof(float));
    pipe.InitBuffer(yBuf, px * 8 * sizeof(float));
    AscendC::LocalTensor<float> xL = xBuf.Get<float>(), sL = sBuf.Get<float>(), yL = yBuf.Get<float>();
    AscendC::DataCopy(xL, xGm, px * 16);
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(0);
    AscendC::WholeReduceSum<float>(sL, xL, 16, static_cast<int32_t>(px), 1, 1, 2);
    AscendC::Brcb(yL, sL, static_cast<uint8_t>(px / 8), AscendC::BrcbRepeatParams(1, 8));
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::DataCopy(yGm, yL, px * 8);
}
