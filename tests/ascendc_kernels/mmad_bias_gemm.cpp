// C = A x B + bias on the cube core of arch 2201 (Ascend 910B, AIC only), the bias through the
// bias table:
//   GM (bias) --DataCopy--> C1 (L1) --DataCopy C1 -> C2--> C2 (bias table)
//   GM (A, B) --DataCopy(Nd2NzParams)--> A1/B1 --LoadData--> L0A/L0B
//   Mmad(c1, a2, b2, bias2, {cmatrixInitVal = false}) for the first K step: C starts at the bias
//   row broadcast over the m rows; Mmad(c1, a2, b2, {cmatrixInitVal = false}) for the others
//   (accumulate in L0C); Fixpipe -> GM (row-major).
//   gemm_bias_f32:      float bias, C1 -> C2 with the count form (n * 4 B, a multiple of 64 B);
//                       float out.
//   gemm_bias_relu_f16: half bias in GM, C1 (half) -> C2 (float) widened by the copy
//                       (DataCopyParams, blockLen in 64 B of the half source); Fixpipe applies
//                       ReLU and F322F16.
// m, n, k are multiples of 16 (n of 32 for the half bias) and kStep divides k.
#include "kernel_operator.h"

struct GemmBiasTiling {
    uint32_t m;
    uint32_t n;
    uint32_t k;
    uint32_t kStep;
};

template <typename BiasT, typename OutT>
class KernelGemmBias {
public:
    __aicore__ inline KernelGemmBias() {}

    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, const GemmBiasTiling& t)
    {
        m = t.m;
        n = t.n;
        k = t.k;
        kStep = t.kStep;
        aGm.SetGlobalBuffer((__gm__ half*)a, m * k);
        bGm.SetGlobalBuffer((__gm__ half*)b, k * n);
        biasGm.SetGlobalBuffer((__gm__ BiasT*)bias, n);
        cGm.SetGlobalBuffer((__gm__ OutT*)c, m * n);
        pipe.InitBuffer(inQueueA1, 1, m * k * sizeof(half));
        pipe.InitBuffer(inQueueB1, 1, k * n * sizeof(half));
        pipe.InitBuffer(inQueueC1, 1, n * sizeof(BiasT));
        pipe.InitBuffer(outQueueC2, 1, n * sizeof(float));  // bias table: 1 KiB on 910B
        pipe.InitBuffer(inQueueA2, 1, m * kStep * sizeof(half));
        pipe.InitBuffer(inQueueB2, 1, kStep * n * sizeof(half));
        pipe.InitBuffer(outQueueCO1, 1, m * n * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        CopyIn();
        SplitBias();
        AscendC::LocalTensor<half> a1 = inQueueA1.DeQue<half>();
        AscendC::LocalTensor<half> b1 = inQueueB1.DeQue<half>();
        AscendC::LocalTensor<float> bias2 = outQueueC2.DeQue<float>();
        AscendC::LocalTensor<float> c1 = outQueueCO1.AllocTensor<float>();
        for (uint32_t k0 = 0; k0 < k; k0 += kStep) {
            SplitA(a1, k0);
            SplitB(b1, k0);
            AscendC::LocalTensor<half> a2 = inQueueA2.DeQue<half>();
            AscendC::LocalTensor<half> b2 = inQueueB2.DeQue<half>();
            AscendC::MmadParams p;
            p.m = m;
            p.n = n;
            p.k = kStep;
            p.cmatrixInitVal = false;  // C starts from the bias (first step) or from L0C (the others)
            if (k0 == 0) {
                AscendC::Mmad(c1, a2, b2, bias2, p);
            } else {
                AscendC::Mmad(c1, a2, b2, p);
            }
            inQueueA2.FreeTensor(a2);
            inQueueB2.FreeTensor(b2);
        }
        outQueueCO1.EnQue(c1);
        inQueueA1.FreeTensor(a1);
        inQueueB1.FreeTensor(b1);
        outQueueC2.FreeTensor(bias2);
        CopyOut();
    }

private:
    static constexpr bool kHalf = std::is_same_v<OutT, half>;

    __aicore__ inline void CopyIn()
    {
        AscendC::LocalTensor<half> a1 = inQueueA1.AllocTensor<half>();
        AscendC::LocalTensor<half> b1 = inQueueB1.AllocTensor<half>();
        AscendC::LocalTensor<BiasT> bias1 = inQueueC1.AllocTensor<BiasT>();
        AscendC::Nd2NzParams pa;
        pa.ndNum = 1;
        pa.nValue = m;
        pa.dValue = k;
        pa.srcDValue = k;
        pa.dstNzC0Stride = m;
        pa.dstNzNStride = 1;
        AscendC::DataCopy(a1, aGm, pa);
        AscendC::Nd2NzParams pb;
        pb.ndNum = 1;
        pb.nValue = k;
        pb.dValue = n;
        pb.srcDValue = n;
        pb.dstNzC0Stride = k;
        pb.dstNzNStride = 1;
        AscendC::DataCopy(b1, bGm, pb);
        AscendC::DataCopy(bias1, biasGm, n);
        inQueueA1.EnQue(a1);
        inQueueB1.EnQue(b1);
        inQueueC1.EnQue(bias1);
    }

    __aicore__ inline void SplitBias()
    {
        AscendC::LocalTensor<BiasT> bias1 = inQueueC1.DeQue<BiasT>();
        AscendC::LocalTensor<float> bias2 = outQueueC2.AllocTensor<float>();
        if constexpr (kHalf) {
            // half -> float: blockLen counts 64 B of the half source (32 values).
            AscendC::DataCopy(bias2, bias1, {1, static_cast<uint16_t>(n * sizeof(half) / 64), 0, 0});
        } else {
            AscendC::DataCopy(bias2, bias1, n);  // count form: n * 4 B in 64 B units
        }
        outQueueC2.EnQue(bias2);
        inQueueC1.FreeTensor(bias1);
    }

    __aicore__ inline void SplitA(const AscendC::LocalTensor<half>& a1, uint32_t k0)
    {
        AscendC::LocalTensor<half> a2 = inQueueA2.AllocTensor<half>();
        const uint32_t m1 = m / 16, kSteps = kStep / 16;
        for (uint32_t mi = 0; mi < m1; ++mi) {
            AscendC::LoadData2DParams p;
            p.startIndex = (k0 / 16) * m1 + mi;
            p.repeatTimes = kSteps;
            p.srcStride = m1;
            AscendC::LoadData(a2[mi * kSteps * 256], a1, p);
        }
        inQueueA2.EnQue(a2);
    }

    __aicore__ inline void SplitB(const AscendC::LocalTensor<half>& b1, uint32_t k0)
    {
        AscendC::LocalTensor<half> b2 = inQueueB2.AllocTensor<half>();
        const uint32_t n1 = n / 16, k1 = k / 16;
        for (uint32_t kk = 0; kk < kStep / 16; ++kk) {
            AscendC::LoadData2DParams p;
            p.startIndex = k0 / 16 + kk;
            p.repeatTimes = n1;
            p.srcStride = k1;
            p.ifTranspose = true;
            AscendC::LoadData(b2[kk * n1 * 256], b1, p);
        }
        inQueueB2.EnQue(b2);
    }

    __aicore__ inline void CopyOut()
    {
        AscendC::LocalTensor<float> c1 = outQueueCO1.DeQue<float>();
        AscendC::FixpipeParamsV220 p;
        p.nSize = n;
        p.mSize = m;
        p.srcStride = m;
        p.dstStride = n;
        p.ndNum = 1;
        if constexpr (kHalf) {
            p.quantPre = QuantMode_t::F322F16;
            p.reluEn = true;
        }
        AscendC::Fixpipe<OutT, float, AscendC::CFG_ROW_MAJOR>(cGm, c1, p);
        outQueueCO1.FreeTensor(c1);
    }

    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::A1, 1> inQueueA1;
    AscendC::TQue<AscendC::TPosition::B1, 1> inQueueB1;
    AscendC::TQue<AscendC::TPosition::C1, 1> inQueueC1;
    AscendC::TQue<AscendC::TPosition::C2, 1> outQueueC2;
    AscendC::TQue<AscendC::TPosition::A2, 1> inQueueA2;
    AscendC::TQue<AscendC::TPosition::B2, 1> inQueueB2;
    AscendC::TQue<AscendC::TPosition::CO1, 1> outQueueCO1;
    AscendC::GlobalTensor<half> aGm, bGm;
    AscendC::GlobalTensor<BiasT> biasGm;
    AscendC::GlobalTensor<OutT> cGm;
    uint32_t m = 0, n = 0, k = 0, kStep = 0;
};

extern "C" __global__ __aicore__ void gemm_bias_f32(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR workspace,
                                                    GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GET_TILING_DATA_WITH_STRUCT(GemmBiasTiling, t, tiling);
    KernelGemmBias<float, float> op;
    op.Init(a, b, bias, c, t);
    op.Process();
}

extern "C" __global__ __aicore__ void gemm_bias_relu_f16(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c,
                                                         GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    GET_TILING_DATA_WITH_STRUCT(GemmBiasTiling, t, tiling);
    KernelGemmBias<half, half> op;
    op.Init(a, b, bias, c, t);
    op.Process();
}
