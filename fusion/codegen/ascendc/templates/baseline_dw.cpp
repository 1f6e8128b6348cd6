// The vendor-like depthwise kernel of the baseline (schedules/baseline_program.dw_program, vector
// form), fp16 NC1HWC0. Units (image, channel block, group of `rows` output rows) in contiguous
// ranges over the cores; per unit: [zero the window] x rows GM -> UB, the block's taps and bias,
// per output row and tap one Mul / MulAddDst (8 pixels a repeat, the source `stride` DataBlocks
// apart, the tap's 16 weights read by every pixel), per row the bias Add, the activation over
// the rows, and the rows UB -> GM. Every instruction here is a step of the program.
#include "kernel_operator.h"

struct BaselineDwTiling {
    uint32_t h, w, oh, ow, owp, wp, kh, kw, stride, padTop, padLeft;
    uint32_t c1, rows, groups, units, perCore, act, columnForm;   // act: 0 none, 1 relu, 2 relu6
};

class KernelBaselineDw {
public:
    __aicore__ inline KernelBaselineDw() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w, GM_ADDR b, GM_ADDR y, const BaselineDwTiling& t)
    {
        t_ = t;
        taps = t.kh * t.kw;
        const uint32_t planes = t.units / t.groups;
        xGm.SetGlobalBuffer((__gm__ half*)x, planes * t.h * t.w * 16);
        wGm.SetGlobalBuffer((__gm__ half*)w, t.c1 * taps * 16);
        bGm.SetGlobalBuffer((__gm__ half*)b, t.c1 * 16);
        yGm.SetGlobalBuffer((__gm__ half*)y, planes * t.oh * t.ow * 16);
        inRowsMax = (t.rows - 1) * t.stride + t.kh;
        pipe.InitBuffer(inQueX, 2, inRowsMax * t.wp * 16 * sizeof(half));
        pipe.InitBuffer(inQueW, 2, taps * 16 * sizeof(half));
        pipe.InitBuffer(inQueB, 2, 16 * sizeof(half));
        pipe.InitBuffer(outQueY, 2, t.rows * t.owp * 16 * sizeof(half));
    }

@DW_UNITS@
    __aicore__ inline void CopyIn(uint32_t plane, uint32_t c1, uint32_t r0, uint32_t rows)
    {
        int32_t top, bot;
        uint32_t lo, hi;
        Window(r0, rows, top, bot, lo, hi);
        const int32_t right = static_cast<int32_t>((t_.ow - 1) * t_.stride + t_.kw) - static_cast<int32_t>(t_.padLeft);
        const bool pad = top < 0 || bot > static_cast<int32_t>(t_.h) || t_.padLeft > 0 || right > static_cast<int32_t>(t_.w);
        const uint32_t inRows = (rows - 1) * t_.stride + t_.kh;
        AscendC::LocalTensor<half> x = inQueX.AllocTensor<half>();
        if (pad) {   // the window's padding reads zeros
            AscendC::Duplicate(x, static_cast<half>(0), static_cast<int32_t>(inRows * t_.wp * 16));
            AscendC::SetFlag<AscendC::HardEvent::V_MTE2>(0);
            AscendC::WaitFlag<AscendC::HardEvent::V_MTE2>(0);
        }
        if (hi > lo) {
            AscendC::DataCopyParams p;
            p.blockCount = static_cast<uint16_t>(hi - lo);
            p.blockLen = static_cast<uint16_t>(t_.w);          // one 32 B DataBlock per pixel
            p.srcStride = 0;
            p.dstStride = static_cast<uint16_t>(t_.wp - t_.w);
            AscendC::DataCopy(x[((lo - top) * t_.wp + t_.padLeft) * 16], xGm[(plane * t_.h + lo) * t_.w * 16], p);
        }
        AscendC::LocalTensor<half> w = inQueW.AllocTensor<half>();
        AscendC::DataCopy(w, wGm[c1 * taps * 16], taps * 16);
        AscendC::LocalTensor<half> b = inQueB.AllocTensor<half>();
        AscendC::DataCopy(b, bGm[c1 * 16], 16);
        inQueX.EnQue(x);
        inQueW.EnQue(w);
        inQueB.EnQue(b);
    }

    __aicore__ inline void Compute(uint32_t rows)
    {
        AscendC::LocalTensor<half> x = inQueX.DeQue<half>();
        AscendC::LocalTensor<half> w = inQueW.DeQue<half>();
        AscendC::LocalTensor<half> b = inQueB.DeQue<half>();
        AscendC::LocalTensor<half> y = outQueY.AllocTensor<half>();
        const uint8_t s = static_cast<uint8_t>(t_.stride);
        const uint32_t groups = t_.owp / 8;   // repeats of a row: 8 pixels each
        if (t_.columnForm && groups < rows && rows <= 255) {
            // per tap and group of 8 output columns one op whose repeats walk the rows
            const AscendC::BinaryRepeatParams tap(1, s, 0, static_cast<uint8_t>(t_.owp),
                                                  static_cast<uint8_t>(t_.wp * t_.stride), 0);
            const AscendC::BinaryRepeatParams bias(1, 1, 0, static_cast<uint8_t>(t_.owp),
                                                   static_cast<uint8_t>(t_.owp), 0);
            for (uint32_t g = 0; g < groups; ++g) {
                AscendC::LocalTensor<half> dst = y[g * 8 * 16];
                for (uint32_t i = 0; i < t_.kh; ++i) {
                    for (uint32_t j = 0; j < t_.kw; ++j) {
                        const uint32_t q = i * t_.kw + j;
                        AscendC::LocalTensor<half> src = x[(i * t_.wp + g * 8 * t_.stride + j) * 16];
                        if (q == 0) {
                            AscendC::Mul(dst, src, w[q * 16], static_cast<uint64_t>(128), static_cast<uint8_t>(rows), tap);
                        } else {
                            AscendC::MulAddDst(dst, src, w[q * 16], static_cast<uint64_t>(128),
                                               static_cast<uint8_t>(rows), tap);
                        }
                    }
                }
                AscendC::Add(dst, dst, b, static_cast<uint64_t>(128), static_cast<uint8_t>(rows), bias);
            }
        } else {
            // per row and tap one op over the row's repeats
            const uint8_t reps = static_cast<uint8_t>(groups);
            const AscendC::BinaryRepeatParams tap(1, s, 0, 8, static_cast<uint8_t>(8 * s), 0);
            const AscendC::BinaryRepeatParams bias(1, 1, 0, 8, 8, 0);
            for (uint32_t r = 0; r < rows; ++r) {
                AscendC::LocalTensor<half> dst = y[r * t_.owp * 16];
                for (uint32_t i = 0; i < t_.kh; ++i) {
                    for (uint32_t j = 0; j < t_.kw; ++j) {
                        const uint32_t q = i * t_.kw + j;
                        AscendC::LocalTensor<half> src = x[((r * t_.stride + i) * t_.wp + j) * 16];
                        if (q == 0) {
                            AscendC::Mul(dst, src, w[q * 16], static_cast<uint64_t>(128), reps, tap);
                        } else {
                            AscendC::MulAddDst(dst, src, w[q * 16], static_cast<uint64_t>(128), reps, tap);
                        }
                    }
                }
                AscendC::Add(dst, dst, b, static_cast<uint64_t>(128), reps, bias);
            }
        }
        const int32_t n = static_cast<int32_t>(rows * t_.owp * 16);
        if (t_.act == 1) {
            AscendC::Relu(y, y, n);
        } else if (t_.act == 2) {
            AscendC::Maxs(y, y, static_cast<half>(0), n);
            AscendC::Mins(y, y, static_cast<half>(6), n);
        }
        outQueY.EnQue(y);
        inQueX.FreeTensor(x);
        inQueW.FreeTensor(w);
        inQueB.FreeTensor(b);
    }

    __aicore__ inline void CopyOut(uint32_t plane, uint32_t r0, uint32_t rows)
    {
        AscendC::LocalTensor<half> y = outQueY.DeQue<half>();
        AscendC::DataCopyParams p;
        p.blockCount = static_cast<uint16_t>(rows);
        p.blockLen = static_cast<uint16_t>(t_.ow);
        p.srcStride = static_cast<uint16_t>(t_.owp - t_.ow);
        p.dstStride = 0;
        AscendC::DataCopy(yGm[(plane * t_.oh + r0) * t_.ow * 16], y, p);
        outQueY.FreeTensor(y);
    }

    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 2> inQueX, inQueW, inQueB;
    AscendC::TQue<AscendC::TPosition::VECOUT, 2> outQueY;
    AscendC::GlobalTensor<half> xGm, wGm, bGm, yGm;
    BaselineDwTiling t_{};
    uint32_t taps = 0, inRowsMax = 0;
};

extern "C" __global__ __aicore__ void baseline_dw(GM_ADDR x, GM_ADDR w, GM_ADDR b, GM_ADDR y, GM_ADDR workspace,
                                                  GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(BaselineDwTiling, t, tiling);
    KernelBaselineDw op;
    op.Init(x, w, b, y, t);
    op.Process();
}
