// y = x / (1 + |x|) (float) over a length that is not a multiple of 8 elements, with the tail
// handled per chip generation:
//   __NPU_ARCH__ == 2201 (910B): DataCopyPad moves exactly the tail bytes in and out;
//   otherwise (2002, 310P, no DataCopyPad): the tail is read and written element by element
//   with GlobalTensor GetValue / SetValue around a UB tile, full tiles use DataCopy.
// Static UB tensors; EVENT_ID synchronisation between the pipes.
#include "kernel_operator.h"

struct SoftsignTiling {
    uint32_t length;  // elements, one block
};
REGISTER_TILING_DEFAULT(SoftsignTiling);

constexpr uint32_t kTile = 256;

extern "C" __global__ __aicore__ void softsign_arch(GM_ADDR x, GM_ADDR y, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    AscendC::GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, t.length);
    yGm.SetGlobalBuffer((__gm__ float*)y, t.length);
    AscendC::LocalMemAllocator<AscendC::Hardware::UB> ub;
    AscendC::LocalTensor<float> xl = ub.Alloc<float, kTile>();
    AscendC::LocalTensor<float> den = ub.Alloc<float, kTile>();
    AscendC::LocalTensor<float> yl = ub.Alloc<float, kTile>();
    for (uint32_t off = 0; off < t.length; off += kTile) {
        const uint32_t len = t.length - off < kTile ? t.length - off : kTile;
        const bool tail = len % 8 != 0;
        const uint32_t padded = (len + 7) / 8 * 8;
#if defined(__NPU_ARCH__) && __NPU_ARCH__ == 2201
        if (tail) {
            AscendC::DataCopyPad(xl, xGm[off], AscendC::DataCopyExtParams{1, len * 4, 0, 0, 0},
                                 AscendC::DataCopyPadExtParams<float>{true, 0, static_cast<uint8_t>(padded - len), 0.0f});
        } else {
            AscendC::DataCopy(xl, xGm[off], len);
        }
#else
        if (tail) {
            for (uint32_t i = 0; i < padded; ++i) xl.SetValue(i, i < len ? xGm.GetValue(off + i) : 0.0f);
        } else {
            AscendC::DataCopy(xl, xGm[off], len);
        }
#endif
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
        AscendC::Abs(den, xl, padded);
        AscendC::Adds(den, den, 1.0f, padded);
        AscendC::Div(yl, xl, den, padded);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID1);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID1);
#if defined(__NPU_ARCH__) && __NPU_ARCH__ == 2201
        if (tail) AscendC::DataCopyPad(yGm[off], yl, AscendC::DataCopyExtParams{1, len * 4, 0, 0, 0});
        else AscendC::DataCopy(yGm[off], yl, len);
#else
        if (tail) {
            for (uint32_t i = 0; i < len; ++i) yGm.SetValue(off + i, yl.GetValue(i));
        } else {
            AscendC::DataCopy(yGm[off], yl, len);
        }
#endif
        AscendC::SetFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID2);
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(EVENT_ID2);
    }
}
