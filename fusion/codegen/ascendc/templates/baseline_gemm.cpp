// The vendor-like GEMM of the baseline (schedules/baseline_program.gemm_program): a 1x1
// convolution of one image, fp16 NC1HWC0 (A = x: (K1, m, 16), B = w: (N1, K16, 16), y: (N1, m, 16)).
// The m x n16 output is split over npUsed column groups of cores; a core walks its sm x sn part in
// equal base blocks (<= 128 x 256) and each block's K in steps of 256: the A / B slices GM -> L1
// unless that operand's panel is resident (the program's L1 plan), then per base-K step (64)
// L1 -> L0A / L0B (LoadData, two buffers each) and the Mmad; after the last K step the epilogue: Fixpipe (fp32 -> fp16, relu) to GM (910B,
// COUPLED 0) or L0C -> UB (fp32 -> fp16 on the way), [+ residual], act, UB -> GM (310P, COUPLED 1).
#include "kernel_operator.h"

#define COUPLED @COUPLED@

struct BaselineGemmTiling {
    uint32_t m, k16, n16, sizeM, sizeN, npUsed, l1Half, l1, act, residual;
};

constexpr uint32_t kBaseM = 128, kBaseN = 256, kBaseK = 64, kStepK = 256;

__aicore__ inline uint32_t CeilDivU(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
__aicore__ inline uint32_t Align16(uint32_t a) { return CeilDivU(a, 16) * 16; }

class KernelBaselineGemm {
public:
    __aicore__ inline KernelBaselineGemm() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR w, GM_ADDR res, GM_ADDR y, const BaselineGemmTiling& t)
    {
        t_ = t;
        xGm.SetGlobalBuffer((__gm__ half*)x, t.k16 * t.m);
        wGm.SetGlobalBuffer((__gm__ half*)w, t.n16 * t.k16);
        yGm.SetGlobalBuffer((__gm__ half*)y, t.n16 * t.m);
        if (t.residual) resGm.SetGlobalBuffer((__gm__ half*)res, t.n16 * t.m);
        const uint32_t blk = AscendC::GetBlockIdx();
        m0 = (blk / t.npUsed) * t.sizeM;
        n0 = (blk % t.npUsed) * t.sizeN;
        sm = t.m - m0 < t.sizeM ? t.m - m0 : t.sizeM;
        sn = t.n16 - n0 < t.sizeN ? t.n16 - n0 : t.sizeN;
        bm = CeilDivU(sm, kBaseM);
        bn = CeilDivU(sn, kBaseN);
        mb = Align16(CeilDivU(sm, bm));
        nb = Align16(CeilDivU(sn, bn));
        // the program's L1 plan: a panel that fits half of L1 stays; the other operand's slices
        // of a block stay across the walk when they fit beside it
        const uint32_t aCore = sm * t.k16 * 2, bCore = sn * t.k16 * 2;
        mode = bCore <= t.l1Half ? 'b' : (aCore <= t.l1Half ? 'a' : 0);
        keep = mode == 'b' ? bCore + mb * t.k16 * 2 <= t.l1 : (mode == 'a' ? aCore + nb * t.k16 * 2 <= t.l1 : false);
        aRows = mode == 'a' ? Align16(sm) : mb;
        aK = (mode == 'a' || (mode == 'b' && keep)) ? t.k16 : kStepK;
        bCols = mode == 'b' ? sn : nb;
        bK = (mode == 'b' || (mode == 'a' && keep)) ? t.k16 : kStepK;
        pipe.InitBuffer(qA1, 1, aRows * aK * sizeof(half));
        pipe.InitBuffer(qB1, 1, bCols * bK * sizeof(half));
        pipe.InitBuffer(qA2, 2, mb * kBaseK * sizeof(half));
        pipe.InitBuffer(qB2, 2, kBaseK * nb * sizeof(half));
        pipe.InitBuffer(qCO1, 1, mb * nb * sizeof(float));
#if COUPLED
        pipe.InitBuffer(qCO2, 1, mb * nb * sizeof(half));
        if (t.residual) pipe.InitBuffer(qRes, 1, mb * nb * sizeof(half));
#endif
    }

    __aicore__ inline void Process()
    {
        if (sm == 0 || sn == 0) return;
        a1 = qA1.AllocTensor<half>();
        b1 = qB1.AllocTensor<half>();
        if (mode == 'a') {
            for (uint32_t j = 0; j < bn; ++j)
                for (uint32_t i = 0; i < bm; ++i) Block(i, j, j == 0, keep ? i == 0 : true);
        } else {
            for (uint32_t i = 0; i < bm; ++i)
                for (uint32_t j = 0; j < bn; ++j)
                    Block(i, j, mode == 'b' ? (keep ? j == 0 : true) : true, mode == 'b' ? i == 0 : true);
        }
        qA1.FreeTensor(a1);
        qB1.FreeTensor(b1);
    }

private:
    __aicore__ inline void Block(uint32_t i, uint32_t j, bool loadA, bool loadB)
    {
        const uint32_t r0 = i * mb, rows = sm - r0 < mb ? sm - r0 : mb, rows16 = Align16(rows);
        const uint32_t c0 = j * nb, cols = sn - c0 < nb ? sn - c0 : nb;
        const uint32_t rOff = mode == 'a' ? r0 : 0, cOff = mode == 'b' ? c0 : 0;
        AscendC::LocalTensor<float> c = qCO1.AllocTensor<float>();
        for (uint32_t k0 = 0; k0 < t_.k16; k0 += kStepK) {
            const uint32_t kk = t_.k16 - k0 < kStepK ? t_.k16 - k0 : kStepK;
            const uint32_t ka = aK == t_.k16 ? k0 : 0, kb = bK == t_.k16 ? k0 : 0;
            if (loadA) {   // (kk/16) bursts of `rows` pixels x 16 channels
                AscendC::DataCopyParams p;
                p.blockCount = static_cast<uint16_t>(kk / 16);
                p.blockLen = static_cast<uint16_t>(rows);
                p.srcStride = static_cast<uint16_t>(t_.m - rows);
                p.dstStride = static_cast<uint16_t>(aRows - rows);
                AscendC::DataCopy(a1[(ka / 16) * aRows * 16 + rOff * 16], xGm[(k0 / 16) * t_.m * 16 + (m0 + r0) * 16], p);
            }
            if (loadB) {   // (cols/16) bursts of kk rows x 16 output channels
                AscendC::DataCopyParams p;
                p.blockCount = static_cast<uint16_t>(cols / 16);
                p.blockLen = static_cast<uint16_t>(kk);
                p.srcStride = static_cast<uint16_t>(t_.k16 - kk);
                p.dstStride = static_cast<uint16_t>(bK - kk);
                AscendC::DataCopy(b1[(cOff / 16) * bK * 16 + kb * 16], wGm[((n0 + c0) / 16) * t_.k16 * 16 + k0 * 16], p);
            }
            if (loadA || loadB) {
                AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(0);
                AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(0);
            }
            // L0 in base-K steps (two buffers each: the next step's loads on MTE1 overlap this
            // step's Mmad -- what the simulator charges, fusion/cost/steps.mte1_stage)
            for (uint32_t ks = 0; ks < kk; ks += kBaseK) {
                const uint32_t kq = kk - ks < kBaseK ? kk - ks : kBaseK;
                AscendC::LocalTensor<half> a2 = qA2.AllocTensor<half>();
                for (uint32_t mi = 0; mi < rows16 / 16; ++mi) {   // L1 fractal (mi, ki) at ki * aRows/16 + mi
                    AscendC::LoadData2DParams p;
                    p.startIndex = static_cast<uint16_t>(((ka + ks) / 16) * (aRows / 16) + rOff / 16 + mi);
                    p.repeatTimes = static_cast<uint8_t>(kq / 16);
                    p.srcStride = static_cast<uint16_t>(aRows / 16);
                    p.ifTranspose = false;
                    AscendC::LoadData(a2[mi * (kq / 16) * 256], a1, p);
                }
                AscendC::LocalTensor<half> b2 = qB2.AllocTensor<half>();
                for (uint32_t ki = 0; ki < kq / 16; ++ki) {      // L1 fractal (ki, ni) at ni * bK/16 + ki
                    AscendC::LoadData2DParams p;
                    p.startIndex = static_cast<uint16_t>((cOff / 16) * (bK / 16) + (kb + ks) / 16 + ki);
                    p.repeatTimes = static_cast<uint8_t>(cols / 16);
                    p.srcStride = static_cast<uint16_t>(bK / 16);
                    p.ifTranspose = true;
                    AscendC::LoadData(b2[ki * (cols / 16) * 256], b1, p);
                }
                qA2.EnQue(a2);
                qB2.EnQue(b2);
                a2 = qA2.DeQue<half>();
                b2 = qB2.DeQue<half>();
                AscendC::MmadParams mp;
                mp.m = static_cast<uint16_t>(rows16);
                mp.n = static_cast<uint16_t>(cols);
                mp.k = static_cast<uint16_t>(kq);
                mp.cmatrixInitVal = k0 + ks == 0;
                mp.isBias = false;
                AscendC::Mmad(c, a2, b2, mp);
                qA2.FreeTensor(a2);
                qB2.FreeTensor(b2);
            }
        }
        qCO1.EnQue(c);
        c = qCO1.DeQue<float>();
        Epilogue(c, r0, rows, rows16, c0, cols);
        qCO1.FreeTensor(c);
    }

    __aicore__ inline void Epilogue(const AscendC::LocalTensor<float>& c, uint32_t r0, uint32_t rows, uint32_t rows16,
                                    uint32_t c0, uint32_t cols)
    {
        const uint32_t yOff = ((n0 + c0) / 16) * t_.m * 16 + (m0 + r0) * 16;
#if COUPLED
        AscendC::LocalTensor<half> r;
        if (t_.residual) {
            r = qRes.AllocTensor<half>();
            AscendC::DataCopyParams p;
            p.blockCount = static_cast<uint16_t>(cols / 16);
            p.blockLen = static_cast<uint16_t>(rows);
            p.srcStride = static_cast<uint16_t>(t_.m - rows);
            p.dstStride = static_cast<uint16_t>(rows16 - rows);
            AscendC::DataCopy(r, resGm[yOff], p);
            qRes.EnQue(r);
            r = qRes.DeQue<half>();
        }
        AscendC::LocalTensor<half> o = qCO2.AllocTensor<half>();
        AscendC::DataCopyParams p;
        p.blockCount = 1;
        p.blockLen = static_cast<uint16_t>(rows16 * cols / 256);   // whole fractals, fp32 -> fp16 on the way
        AscendC::DataCopyEnhancedParams e;
        e.blockMode = AscendC::BlockMode::BLOCK_MODE_MATRIX;
        AscendC::DataCopy(o, c, p, e);
        qCO2.EnQue(o);
        o = qCO2.DeQue<half>();
        const int32_t n = static_cast<int32_t>(rows16 * cols);
        if (t_.residual) {
            AscendC::Add(o, o, r, n);
            qRes.FreeTensor(r);
        }
        if (t_.act == 1) {
            AscendC::Relu(o, o, n);
        } else if (t_.act == 2) {
            AscendC::Maxs(o, o, static_cast<half>(0), n);
            AscendC::Mins(o, o, static_cast<half>(6), n);
        }
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(0);
        AscendC::DataCopyParams q;
        q.blockCount = static_cast<uint16_t>(cols / 16);
        q.blockLen = static_cast<uint16_t>(rows);
        q.srcStride = static_cast<uint16_t>(rows16 - rows);
        q.dstStride = static_cast<uint16_t>(t_.m - rows);
        AscendC::DataCopy(yGm[yOff], o, q);
        qCO2.FreeTensor(o);
#else
        AscendC::FixpipeParamsV220 p;
        p.nSize = static_cast<uint16_t>(cols);
        p.mSize = static_cast<uint16_t>(rows);
        p.srcStride = static_cast<uint16_t>(rows16);
        p.dstStride = t_.m;   // 32 B units between the output's 16-channel blocks
        p.quantPre = QuantMode_t::F322F16;
        p.reluEn = t_.act == 1;
        AscendC::Fixpipe<half, float, AscendC::CFG_NZ>(yGm[yOff], c, p);
#endif
    }

    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::A1, 1> qA1;
    AscendC::TQue<AscendC::TPosition::B1, 1> qB1;
    AscendC::TQue<AscendC::TPosition::A2, 2> qA2;
    AscendC::TQue<AscendC::TPosition::B2, 2> qB2;
    AscendC::TQue<AscendC::TPosition::CO1, 1> qCO1;
#if COUPLED
    AscendC::TQue<AscendC::TPosition::CO2, 1> qCO2;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> qRes;
#endif
    AscendC::LocalTensor<half> a1, b1;
    AscendC::GlobalTensor<half> xGm, wGm, yGm, resGm;
    BaselineGemmTiling t_{};
    uint32_t m0 = 0, n0 = 0, sm = 0, sn = 0, bm = 0, bn = 0, mb = 0, nb = 0;
    uint32_t aRows = 0, aK = 0, bCols = 0, bK = 0;
    char mode = 0;
    bool keep = false;
};

extern "C" __global__ __aicore__ void baseline_gemm(GM_ADDR x, GM_ADDR w, GM_ADDR res, GM_ADDR y, GM_ADDR workspace,
                                                    GM_ADDR tiling)
{
#if !COUPLED
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
#endif
    GET_TILING_DATA_WITH_STRUCT(BaselineGemmTiling, t, tiling);
    KernelBaselineGemm op;
    op.Init(x, w, res, y, t);
    op.Process();
}
