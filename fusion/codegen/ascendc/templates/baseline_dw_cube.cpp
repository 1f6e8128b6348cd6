// The vendor-like depthwise kernel of the baseline in its cube form (what 310P runs:
// schedules/baseline_program.dw_program, on_cube), fp16 NC1HWC0. Units (image, channel block,
// group of `rows` output rows) in contiguous ranges over the cores; per unit: the input rows the
// group reads GM -> L1, the block's taps (a diagonal 16 x 16 fractal each, prepared by the host)
// GM -> L1 -> L0B and its fp32 bias (repeated over the 4 pixels of a vector repeat) GM -> UB;
// then per chunk of img2col rows one load3d of every tap's window into L0A (the padding read as
// zeros on the way) and one Mmad (k = taps x 16) into the unit's fp32 accumulator in L0C; the
// accumulator L0C -> UB, the bias Add, the activation, the cast to fp16 and the rows UB -> GM.
// Every instruction here is a step of the program.
#include "kernel_operator.h"

struct BaselineDwCubeTiling {
    uint32_t h, w, oh, ow, kh, kw, stride, padTop, padLeft, padRight;
    uint32_t c1, rows, groups, units, perCore, act, chunk;   // act: 0 none, 1 relu, 2 relu6
};

__aicore__ inline uint32_t CeilDivU(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

class KernelBaselineDwCube {
public:
    __aicore__ inline KernelBaselineDwCube() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w, GM_ADDR b, GM_ADDR y, const BaselineDwCubeTiling& t)
    {
        t_ = t;
        taps = t.kh * t.kw;
        const uint32_t planes = t.units / t.groups;
        const uint32_t inRowsMax = (t.rows - 1) * t.stride + t.kh;
        const uint32_t px16 = CeilDivU(t.rows * t.ow, 16) * 16;
        xGm.SetGlobalBuffer((__gm__ half*)x, planes * t.h * t.w * 16);
        wGm.SetGlobalBuffer((__gm__ half*)w, t.c1 * taps * 256);
        bGm.SetGlobalBuffer((__gm__ float*)b, t.c1 * 64);
        yGm.SetGlobalBuffer((__gm__ half*)y, planes * t.oh * t.ow * 16);
        pipe.InitBuffer(qX1, 2, inRowsMax * t.w * 16 * sizeof(half));
        pipe.InitBuffer(qW1, 2, taps * 256 * sizeof(half));
        pipe.InitBuffer(qB, 2, 64 * sizeof(float));
        pipe.InitBuffer(qA2, 2, t.chunk * taps * 16 * sizeof(half));
        pipe.InitBuffer(qB2, 1, taps * 256 * sizeof(half));
        pipe.InitBuffer(qCO1, 2, px16 * 16 * sizeof(float));
        pipe.InitBuffer(qAcc, 2, px16 * 16 * sizeof(float));
        pipe.InitBuffer(qY, 2, px16 * 16 * sizeof(half));
    }

@DW_UNITS@
    __aicore__ inline void CopyIn(uint32_t plane, uint32_t c1, uint32_t r0, uint32_t rows)
    {
        int32_t top, bot;
        Window(r0, rows, top, bot, lo, hi);
        padT = static_cast<uint32_t>(static_cast<int32_t>(lo) - top);
        padB = static_cast<uint32_t>(bot - static_cast<int32_t>(hi));
        AscendC::LocalTensor<half> x1 = qX1.AllocTensor<half>();   // rows [lo, hi), whole width
        AscendC::DataCopy(x1, xGm[(plane * t_.h + lo) * t_.w * 16], (hi - lo) * t_.w * 16);
        AscendC::LocalTensor<half> w1 = qW1.AllocTensor<half>();
        AscendC::DataCopy(w1, wGm[c1 * taps * 256], taps * 256);
        AscendC::LocalTensor<float> b = qB.AllocTensor<float>();
        AscendC::DataCopy(b, bGm[c1 * 64], 64);
        qX1.EnQue(x1);
        qW1.EnQue(w1);
        qB.EnQue(b);
    }

    __aicore__ inline void Compute(uint32_t rows)
    {
        AscendC::LocalTensor<half> x1 = qX1.DeQue<half>();
        AscendC::LocalTensor<half> w1 = qW1.DeQue<half>();
        const uint32_t px = rows * t_.ow, m1 = CeilDivU(px, 16);
        AscendC::LocalTensor<half> b2 = qB2.AllocTensor<half>();   // the taps' diagonal fractals
        AscendC::LoadData2DParams lb;
        lb.startIndex = 0;
        lb.repeatTimes = static_cast<uint8_t>(taps);
        lb.srcStride = 1;
        lb.ifTranspose = false;
        AscendC::LoadData(b2, w1, lb);
        qB2.EnQue(b2);
        b2 = qB2.DeQue<half>();
        AscendC::LocalTensor<float> c = qCO1.AllocTensor<float>();
        for (uint32_t m0 = 0; m0 < px; m0 += t_.chunk) {
            const uint32_t mc = px - m0 < t_.chunk ? px - m0 : t_.chunk;
            AscendC::LocalTensor<half> a2 = qA2.AllocTensor<half>();
            AscendC::LoadData3DParamsV2<half> p;   // img2col rows [m0, m0 + mc): (tap, c0) columns
            p.padList[0] = static_cast<uint8_t>(t_.padLeft);
            p.padList[1] = static_cast<uint8_t>(t_.padRight);
            p.padList[2] = static_cast<uint8_t>(padT);
            p.padList[3] = static_cast<uint8_t>(padB);
            p.l1H = static_cast<uint16_t>(hi - lo);
            p.l1W = static_cast<uint16_t>(t_.w);
            p.channelSize = 16;
            p.kExtension = static_cast<uint16_t>(taps * 16);
            p.mExtension = static_cast<uint16_t>(mc);
            p.mStartPt = static_cast<uint16_t>(m0);
            p.strideW = static_cast<uint8_t>(t_.stride);
            p.strideH = static_cast<uint8_t>(t_.stride);
            p.filterW = static_cast<uint8_t>(t_.kw);
            p.filterH = static_cast<uint8_t>(t_.kh);
            AscendC::LoadData(a2, x1, p);
            qA2.EnQue(a2);
            a2 = qA2.DeQue<half>();
            AscendC::MmadParams mp;
            mp.m = static_cast<uint16_t>(mc);
            mp.n = 16;
            mp.k = static_cast<uint16_t>(taps * 16);
            mp.cmatrixInitVal = true;
            mp.isBias = false;
            AscendC::Mmad(c[m0 * 16], a2, b2, mp);   // the chunk's rows of C (m0 is a multiple of 16)
            qA2.FreeTensor(a2);
        }
        qB2.FreeTensor(b2);
        qX1.FreeTensor(x1);
        qW1.FreeTensor(w1);
        qCO1.EnQue(c);
        c = qCO1.DeQue<float>();
        AscendC::LocalTensor<float> acc = qAcc.AllocTensor<float>();
        AscendC::DataCopyParams cp;
        cp.blockCount = 1;
        cp.blockLen = static_cast<uint16_t>(m1);   // whole 16 x 16 fractals
        AscendC::DataCopyEnhancedParams e;
        e.blockMode = AscendC::BlockMode::BLOCK_MODE_MATRIX;
        AscendC::DataCopy(acc, c, cp, e);
        qCO1.FreeTensor(c);
        qAcc.EnQue(acc);
        acc = qAcc.DeQue<float>();
        AscendC::LocalTensor<float> b = qB.DeQue<float>();
        // + bias: 4 pixels a repeat, the repeated bias read by every repeat (255 repeats an op)
        const uint32_t n = px * 16, reps = CeilDivU(n, 64);
        const AscendC::BinaryRepeatParams bias(1, 1, 1, 8, 8, 0);
        for (uint32_t r = 0; r < reps; r += 255) {
            const uint32_t k = reps - r < 255 ? reps - r : 255;
            AscendC::Add(acc[r * 64], acc[r * 64], b, static_cast<uint64_t>(64), static_cast<uint8_t>(k), bias);
        }
        qB.FreeTensor(b);
        if (t_.act == 1) {
            AscendC::Relu(acc, acc, static_cast<int32_t>(n));
        } else if (t_.act == 2) {
            AscendC::Maxs(acc, acc, 0.0f, static_cast<int32_t>(n));
            AscendC::Mins(acc, acc, 6.0f, static_cast<int32_t>(n));
        }
        AscendC::LocalTensor<half> y = qY.AllocTensor<half>();
        for (uint32_t r = 0; r < reps; r += 255) {   // fp32 -> fp16, 255 repeats an op
            const uint32_t k = n - r * 64 < 255 * 64 ? n - r * 64 : 255 * 64;
            AscendC::Cast(y[r * 64], acc[r * 64], AscendC::RoundMode::CAST_NONE, static_cast<int32_t>(k));
        }
        qAcc.FreeTensor(acc);
        qY.EnQue(y);
    }

    __aicore__ inline void CopyOut(uint32_t plane, uint32_t r0, uint32_t rows)
    {
        AscendC::LocalTensor<half> y = qY.DeQue<half>();
        AscendC::DataCopy(yGm[(plane * t_.oh + r0) * t_.ow * 16], y, rows * t_.ow * 16);
        qY.FreeTensor(y);
    }

    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::A1, 2> qX1;
    AscendC::TQue<AscendC::TPosition::B1, 2> qW1;
    AscendC::TQue<AscendC::TPosition::A2, 2> qA2;
    AscendC::TQue<AscendC::TPosition::B2, 1> qB2;
    AscendC::TQue<AscendC::TPosition::CO1, 2> qCO1;
    AscendC::TQue<AscendC::TPosition::CO2, 2> qAcc;
    AscendC::TQue<AscendC::TPosition::VECIN, 2> qB;
    AscendC::TQue<AscendC::TPosition::VECOUT, 2> qY;
    AscendC::GlobalTensor<half> xGm, wGm, yGm;
    AscendC::GlobalTensor<float> bGm;
    BaselineDwCubeTiling t_{};
    uint32_t taps = 0, lo = 0, hi = 0, padT = 0, padB = 0;
};

extern "C" __global__ __aicore__ void baseline_dw_cube(GM_ADDR x, GM_ADDR w, GM_ADDR b, GM_ADDR y, GM_ADDR workspace,
                                                       GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(BaselineDwCubeTiling, t, tiling);
    KernelBaselineDwCube op;
    op.Init(x, w, b, y, t);
    op.Process();
}
