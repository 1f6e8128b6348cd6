// The pointwise GEMM of a fused depthwise -> pointwise kernel on a coupled core (arch 2002,
// Ascend 310P): A (pixels x Cin) is produced in UB, as the depthwise stage leaves it, and goes
// to the cube through L1; the result comes back to UB for a vector epilogue.
//   UB (A, half) --DataCopy UB -> L1--> A1 (NZ)        GM (B) --DataCopy Nd2Nz--> B1 (NZ)
//      --LoadData--> L0A / L0B --Mmad (K in steps of kStep)--> L0C (CO1, NZ, float)
//      --DataCopy CO1 -> CO2 (DataCopyEnhancedParams, BLOCK_MODE_MATRIX)--> UB (NZ)
//      --vector epilogue--> UB --DataCopy NZ -> ND--> GM
// Each block computes m rows of C: rows [b*m, (b+1)*m) of A and C; B is shared.
//   gemm310_f32: A arrives as row-major float, is Cast to half in UB and moved UB -> L1 one
//                16-column block at a time (DataCopyParams doing ND -> NZ); L0C float -> UB
//                float; epilogue Relu(C + bias) with Adds/Relu; float out.
//   gemm310_f16: A arrives already in NZ (host-arranged) as half and moves GM -> UB -> L1 with
//                the count form; L0C float -> UB half with isRelu (ReLU and fp32 -> fp16 on the
//                way); epilogue Adds(bias) in half; half out.
//   gemm310_rows16: as gemm310_f32, but only the first 16 rows of each block's C come back:
//                CO1 -> CO2 with one burst per 16-column block (blockCount n/16, blockLen 1
//                fractal, srcGap m/16 - 1 fractals to skip the other row blocks, dstGap 2 x 32 B
//                between the column blocks in UB); C is written for those 16 rows only.
// m, n, k are multiples of 16 and kStep divides k.
#include "kernel_operator.h"

struct Gemm310Tiling {
    uint32_t m;  // rows of C per block
    uint32_t n;
    uint32_t k;
    uint32_t kStep;
    float bias;  // added to every element in the epilogue
};

template <typename OutT, bool kFirstRowBlock = false>
class KernelGemm310 {
public:
    __aicore__ inline KernelGemm310() {}

    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c, const Gemm310Tiling& t)
    {
        m = t.m;
        n = t.n;
        k = t.k;
        kStep = t.kStep;
        bias = t.bias;
        const uint32_t blk = AscendC::GetBlockIdx();
        aGmF.SetGlobalBuffer((__gm__ float*)a + blk * m * k, m * k);
        aGmH.SetGlobalBuffer((__gm__ half*)a + blk * m * k, m * k);
        bGm.SetGlobalBuffer((__gm__ half*)b, k * n);
        rowsOut = kFirstRowBlock ? 16 : m;
        ubBlock = kFirstRowBlock ? 16 * 16 + kDstGap * 32 / sizeof(OutT) : m * 16;
        cGm.SetGlobalBuffer((__gm__ OutT*)c + blk * rowsOut * n, rowsOut * n);
        // UB (VECIN/VECOUT/CO2), L1, L0A/L0B and L0C buffers in one block: the cores are coupled.
        pipe.InitBuffer(inQueueA, 1, m * k * (kHalfOut ? sizeof(half) : sizeof(float)));
        pipe.InitBuffer(outQueueAh, 1, m * k * sizeof(half));
        pipe.InitBuffer(inQueueA1, 1, m * k * sizeof(half));
        pipe.InitBuffer(inQueueB1, 1, k * n * sizeof(half));
        pipe.InitBuffer(inQueueA2, 1, m * kStep * sizeof(half));
        pipe.InitBuffer(inQueueB2, 1, kStep * n * sizeof(half));
        pipe.InitBuffer(outQueueCO1, 1, m * n * sizeof(float));
        pipe.InitBuffer(outQueueCO2, 1, ubBlock * (n / 16) * sizeof(OutT));
    }

    __aicore__ inline void Process()
    {
        if constexpr (kHalfOut) {
            CopyInANz();
        } else {
            CopyInA();
            CastA();
            CopyUbToL1Nz();
        }
        CopyBNd2Nz();
        AscendC::LocalTensor<half> a1 = inQueueA1.DeQue<half>();
        AscendC::LocalTensor<half> b1 = inQueueB1.DeQue<half>();
        AscendC::LocalTensor<float> c1 = outQueueCO1.AllocTensor<float>();
        for (uint32_t k0 = 0; k0 < k; k0 += kStep) {
            SplitA(a1, k0);
            SplitB(b1, k0);
            Compute(c1, k0 == 0);
        }
        outQueueCO1.EnQue(c1);
        inQueueA1.FreeTensor(a1);
        inQueueB1.FreeTensor(b1);
        CopyL0cToUb();
        Epilogue();
        CopyOut();
    }

private:
    static constexpr bool kHalfOut = std::is_same_v<OutT, half>;
    static constexpr uint16_t kDstGap = kFirstRowBlock ? 2 : 0;  // 32 B blocks between UB column blocks

    __aicore__ inline void CopyInA()
    {
        AscendC::LocalTensor<float> a = inQueueA.AllocTensor<float>();
        AscendC::DataCopy(a, aGmF, m * k);
        inQueueA.EnQue(a);
    }

    // The depthwise stage's output format: row-major half in UB.
    __aicore__ inline void CastA()
    {
        AscendC::LocalTensor<float> a = inQueueA.DeQue<float>();
        AscendC::LocalTensor<half> ah = outQueueAh.AllocTensor<half>();
        AscendC::Cast(ah, a, AscendC::RoundMode::CAST_NONE, m * k);
        outQueueAh.EnQue(ah);
        inQueueA.FreeTensor(a);
    }

    // UB (ND, m x k) -> L1 (NZ): the 16-column block kb is m bursts of one 32 B block, taken
    // every k/16 blocks (srcGap k/16 - 1) and written back to back at kb * m * 16.
    __aicore__ inline void CopyUbToL1Nz()
    {
        AscendC::LocalTensor<half> ah = outQueueAh.DeQue<half>();
        AscendC::LocalTensor<half> a1 = inQueueA1.AllocTensor<half>();
        AscendC::DataCopyParams p;
        p.blockCount = m;
        p.blockLen = 1;
        p.srcGap = k / 16 - 1;
        p.dstGap = 0;
        for (uint32_t kb = 0; kb < k / 16; ++kb) AscendC::DataCopy(a1[kb * m * 16], ah[kb * 16], p);
        inQueueA1.EnQue(a1);
        outQueueAh.FreeTensor(ah);
    }

    // A already NZ in GM: GM -> UB -> L1 with the count form (one contiguous burst each).
    __aicore__ inline void CopyInANz()
    {
        AscendC::LocalTensor<half> a = inQueueA.AllocTensor<half>();
        AscendC::DataCopy(a, aGmH, m * k);
        inQueueA.EnQue(a);
        a = inQueueA.DeQue<half>();
        AscendC::LocalTensor<half> a1 = inQueueA1.AllocTensor<half>();
        AscendC::DataCopy(a1, a, m * k);
        inQueueA1.EnQue(a1);
        inQueueA.FreeTensor(a);
    }

    __aicore__ inline void CopyBNd2Nz()
    {
        AscendC::LocalTensor<half> b1 = inQueueB1.AllocTensor<half>();
        AscendC::Nd2NzParams pb;
        pb.ndNum = 1;
        pb.nValue = k;
        pb.dValue = n;
        pb.srcDValue = n;
        pb.dstNzC0Stride = k;
        pb.dstNzNStride = 1;
        AscendC::DataCopy(b1, bGm, pb);
        inQueueB1.EnQue(b1);
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

    __aicore__ inline void Compute(const AscendC::LocalTensor<float>& c1, bool first)
    {
        AscendC::LocalTensor<half> a2 = inQueueA2.DeQue<half>();
        AscendC::LocalTensor<half> b2 = inQueueB2.DeQue<half>();
        AscendC::MmadParams p;
        p.m = m;
        p.n = n;
        p.k = kStep;
        p.cmatrixInitVal = first;  // later K steps accumulate into L0C
        AscendC::Mmad(c1, a2, b2, p);
        inQueueA2.FreeTensor(a2);
        inQueueB2.FreeTensor(b2);
    }

    // L0C (NZ) -> UB (CO2) in one burst of m * n / 256 fractals; UB then holds the same NZ image:
    // C(i, j) at (j / 16) * m * 16 + i * 16 + j % 16.
    __aicore__ inline void CopyL0cToUb()
    {
        AscendC::LocalTensor<float> c1 = outQueueCO1.DeQue<float>();
        AscendC::LocalTensor<OutT> c2 = outQueueCO2.AllocTensor<OutT>();
        AscendC::DataCopyParams p;
        if constexpr (kFirstRowBlock) {
            p.blockCount = n / 16;   // one burst per 16-column block
            p.blockLen = 1;          // its first 16 x 16 fractal (rows 0..15)
            p.srcGap = m / 16 - 1;   // skip the other row blocks of that column block
            p.dstGap = kDstGap;
        } else {
            p.blockCount = 1;
            p.blockLen = m * n / 256;
        }
        AscendC::DataCopyEnhancedParams e;
        e.blockMode = AscendC::BlockMode::BLOCK_MODE_MATRIX;
        e.isRelu = kHalfOut;  // the half variant applies ReLU on the way
        AscendC::DataCopy(c2, c1, p, e);
        outQueueCO2.EnQue(c2);
        outQueueCO1.FreeTensor(c1);
    }

    __aicore__ inline void Epilogue()
    {
        AscendC::LocalTensor<OutT> c2 = outQueueCO2.DeQue<OutT>();
        const uint32_t count = ubBlock * (n / 16);  // gap elements included: harmless
        AscendC::Adds(c2, c2, static_cast<OutT>(bias), count);
        if constexpr (!kHalfOut) AscendC::Relu(c2, c2, count);
        outQueueCO2.EnQue(c2);
    }

    // UB (NZ) -> GM (ND): the 16-column block jb is m rows of 16 elements, one GM row apart.
    __aicore__ inline void CopyOut()
    {
        AscendC::LocalTensor<OutT> c2 = outQueueCO2.DeQue<OutT>();
        constexpr uint32_t rowBlocks = 16 * sizeof(OutT) / 32;  // 32 B blocks per 16 elements
        AscendC::DataCopyParams p;
        p.blockCount = rowsOut;
        p.blockLen = rowBlocks;
        p.srcGap = 0;
        p.dstGap = n * sizeof(OutT) / 32 - rowBlocks;
        for (uint32_t jb = 0; jb < n / 16; ++jb) AscendC::DataCopy(cGm[jb * 16], c2[jb * ubBlock], p);
        outQueueCO2.FreeTensor(c2);
    }

    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> inQueueA;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQueueAh;
    AscendC::TQue<AscendC::TPosition::A1, 1> inQueueA1;
    AscendC::TQue<AscendC::TPosition::B1, 1> inQueueB1;
    AscendC::TQue<AscendC::TPosition::A2, 1> inQueueA2;
    AscendC::TQue<AscendC::TPosition::B2, 1> inQueueB2;
    AscendC::TQue<AscendC::TPosition::CO1, 1> outQueueCO1;
    AscendC::TQue<AscendC::TPosition::CO2, 1> outQueueCO2;
    AscendC::GlobalTensor<float> aGmF;
    AscendC::GlobalTensor<half> aGmH, bGm;
    AscendC::GlobalTensor<OutT> cGm;
    uint32_t m = 0, n = 0, k = 0, kStep = 0, rowsOut = 0, ubBlock = 0;
    float bias = 0.0f;
};

extern "C" __global__ __aicore__ void gemm310_f32(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(Gemm310Tiling, t, tiling);
    KernelGemm310<float> op;
    op.Init(a, b, c, t);
    op.Process();
}

extern "C" __global__ __aicore__ void gemm310_f16(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(Gemm310Tiling, t, tiling);
    KernelGemm310<half> op;
    op.Init(a, b, c, t);
    op.Process();
}

extern "C" __global__ __aicore__ void gemm310_rows16(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace,
                                                     GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(Gemm310Tiling, t, tiling);
    KernelGemm310<float, true> op;
    op.Init(a, b, c, t);
    op.Process();
}
