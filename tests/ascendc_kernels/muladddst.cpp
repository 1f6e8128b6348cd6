// acc[p, k] += x[p * stride, k] * w[k] for P pixels of 16 channels: fp16 x and w, fp32 acc, one
// MulAddDst per 4 pixels (64 lanes) with the tap vector read by every lane group (src1 strides 0)
// and the source pixel `stride` DataBlocks apart -- the depthwise tap row of a fused kernel.
#include "kernel_operator.h"

struct MadTiling {
    uint32_t pixels;  // a multiple of 4
    uint32_t stride;  // source DataBlocks between pixels
};

extern "C" __global__ __aicore__ void mad_tap_row(GM_ADDR x, GM_ADDR w, GM_ADDR acc, GM_ADDR workspace,
                                                  GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(MadTiling, t, tiling);
    const uint32_t xLen = t.pixels * t.stride * 16, accLen = t.pixels * 16;
    AscendC::GlobalTensor<half> xGm, wGm;
    AscendC::GlobalTensor<float> accGm;
    xGm.SetGlobalBuffer((__gm__ half*)x, xLen);
    wGm.SetGlobalBuffer((__gm__ half*)w, 16);
    accGm.SetGlobalBuffer((__gm__ float*)acc, accLen);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> xBuf, wBuf, accBuf;
    pipe.InitBuffer(xBuf, xLen * sizeof(half));
    pipe.InitBuffer(wBuf, 16 * sizeof(half));
    pipe.InitBuffer(accBuf, accLen * sizeof(float));
    AscendC::LocalTensor<half> xL = xBuf.Get<half>(), wL = wBuf.Get<half>();
    AscendC::LocalTensor<float> accL = accBuf.Get<float>();
    AscendC::DataCopy(xL, xGm, xLen);
    AscendC::DataCopy(wL, wGm, 16);
    AscendC::DataCopy(accL, accGm, accLen);
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(0);
    const AscendC::BinaryRepeatParams rp(1, t.stride, 0, 8, 4 * t.stride, 0);
    AscendC::MulAddDst(accL, xL, wL, static_cast<uint64_t>(64), t.pixels / 4, rp);
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::DataCopy(accGm, accL, accLen);
}

// count form, float x float -> float: acc += a * b
extern "C" __global__ __aicore__ void mad_count_f32(GM_ADDR a, GM_ADDR b, GM_ADDR acc, GM_ADDR workspace,
                                                    GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(MadTiling, t, tiling);
    const uint32_t n = t.pixels * 16;
    AscendC::GlobalTensor<float> aGm, bGm, accGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, n);
    bGm.SetGlobalBuffer((__gm__ float*)b, n);
    accGm.SetGlobalBuffer((__gm__ float*)acc, n);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 3 * n * sizeof(float));
    AscendC::LocalTensor<float> aL = buf.Get<float>(), bL = aL[n], accL = aL[2 * n];
    AscendC::DataCopy(aL, aGm, n);
    AscendC::DataCopy(bL, bGm, n);
    AscendC::DataCopy(accL, accGm, n);
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(0);
    AscendC::MulAddDst(accL, aL, bL, static_cast<int32_t>(n));
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(0);
    AscendC::DataCopy(accGm, accL, n);
}
