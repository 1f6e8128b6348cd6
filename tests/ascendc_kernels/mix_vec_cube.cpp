// A MIX (AIC + AIV) kernel on arch 2201 in the devkit style: per block (one AIC and its AIVs)
//   AIVs:  A = x * 2 (half, in UB), each AIV its own rows  -> GM workspace   ; CrossCoreSetFlag<2>(0)
//   AIC:   CrossCoreWaitFlag(0); workspace -> L1 (ND2NZ) -> L0A, W -> L1 -> L0B; Mmad (float);
//          Fixpipe -> GM workspace                                         ; CrossCoreSetFlag<2>(1)
//   AIVs:  CrossCoreWaitFlag(1); y = C + bias (per row, float)             -> GM
// so y[b] = (2 x[b]) @ W + bias for every block b. x: [blocks][m][k] half, W: [k][n] half,
// bias: [n] float, y: [blocks][m][n] float; m, n, k multiples of 16, m / (AIVs per block) rows
// per AIV. The user workspace holds per block A (m x k half) then C (m x n float).
#include "kernel_operator.h"

struct MixTiling {
    uint32_t m;
    uint32_t n;
    uint32_t k;
};

constexpr uint16_t FLAG_A_READY = 0;  // AIVs -> AIC: A is in the workspace
constexpr uint16_t FLAG_C_READY = 1;  // AIC -> AIVs: C is in the workspace

class MixVectorPart {
public:
    __aicore__ inline MixVectorPart() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR bias, GM_ADDR y, GM_ADDR ws, const MixTiling& t,
                                AscendC::TPipe* pipe)
    {
        m = t.m;
        n = t.n;
        k = t.k;
        rows = m / AscendC::GetTaskRation();  // the AIVs of a block split its rows
        const uint32_t block = AscendC::GetBlockIdx() / AscendC::GetTaskRation();
        const uint32_t row0 = AscendC::GetSubBlockIdx() * rows;
        const uint32_t blocks = AscendC::GetBlockNum();
        xGm.SetGlobalBuffer((__gm__ half*)x + (block * m + row0) * k, rows * k);
        aGm.SetGlobalBuffer((__gm__ half*)ws + (block * m + row0) * k, rows * k);
        cGm.SetGlobalBuffer((__gm__ float*)(ws + blocks * m * k * sizeof(half)) + (block * m + row0) * n, rows * n);
        biasGm.SetGlobalBuffer((__gm__ float*)bias, n);
        yGm.SetGlobalBuffer((__gm__ float*)y + (block * m + row0) * n, rows * n);
        pipe->InitBuffer(inQueueX, 1, rows * k * sizeof(half));
        pipe->InitBuffer(outQueueA, 1, rows * k * sizeof(half));
        pipe->InitBuffer(inQueueC, 1, rows * n * sizeof(float));
        pipe->InitBuffer(outQueueY, 1, rows * n * sizeof(float));
        pipe->InitBuffer(biasBuf, n * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        Produce();
        AscendC::CrossCoreSetFlag<2, PIPE_MTE3>(FLAG_A_READY);  // after the MTE3 copy to GM
        AscendC::CrossCoreWaitFlag(FLAG_C_READY);
        Epilogue();
    }

private:
    __aicore__ inline void Produce()
    {
        AscendC::LocalTensor<half> xLocal = inQueueX.AllocTensor<half>();
        AscendC::DataCopy(xLocal, xGm, rows * k);
        inQueueX.EnQue(xLocal);
        xLocal = inQueueX.DeQue<half>();
        AscendC::LocalTensor<half> aLocal = outQueueA.AllocTensor<half>();
        AscendC::Muls(aLocal, xLocal, (half)2.0, rows * k);
        outQueueA.EnQue(aLocal);
        inQueueX.FreeTensor(xLocal);
        aLocal = outQueueA.DeQue<half>();
        AscendC::DataCopy(aGm, aLocal, rows * k);
        outQueueA.FreeTensor(aLocal);
    }

    __aicore__ inline void Epilogue()
    {
        AscendC::LocalTensor<float> biasLocal = biasBuf.Get<float>();
        AscendC::DataCopy(biasLocal, biasGm, n);
        AscendC::LocalTensor<float> cLocal = inQueueC.AllocTensor<float>();
        AscendC::DataCopy(cLocal, cGm, rows * n);
        inQueueC.EnQue(cLocal);
        cLocal = inQueueC.DeQue<float>();
        AscendC::LocalTensor<float> yLocal = outQueueY.AllocTensor<float>();
        for (uint32_t r = 0; r < rows; ++r) AscendC::Add(yLocal[r * n], cLocal[r * n], biasLocal, n);
        outQueueY.EnQue(yLocal);
        inQueueC.FreeTensor(cLocal);
        yLocal = outQueueY.DeQue<float>();
        AscendC::DataCopy(yGm, yLocal, rows * n);
        outQueueY.FreeTensor(yLocal);
    }

    AscendC::TQue<AscendC::TPosition::VECIN, 1> inQueueX, inQueueC;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQueueA, outQueueY;
    AscendC::TBuf<AscendC::TPosition::VECCALC> biasBuf;
    AscendC::GlobalTensor<half> xGm, aGm;
    AscendC::GlobalTensor<float> cGm, biasGm, yGm;
    uint32_t m = 0, n = 0, k = 0, rows = 0;
};

class MixCubePart {
public:
    __aicore__ inline MixCubePart() {}

    __aicore__ inline void Init(GM_ADDR w, GM_ADDR ws, const MixTiling& t, AscendC::TPipe* pipe)
    {
        m = t.m;
        n = t.n;
        k = t.k;
        const uint32_t block = AscendC::GetBlockIdx();
        const uint32_t blocks = AscendC::GetBlockNum();
        aGm.SetGlobalBuffer((__gm__ half*)ws + block * m * k, m * k);
        bGm.SetGlobalBuffer((__gm__ half*)w, k * n);
        cGm.SetGlobalBuffer((__gm__ float*)(ws + blocks * m * k * sizeof(half)) + block * m * n, m * n);
        pipe->InitBuffer(inQueueA1, 1, m * k * sizeof(half));
        pipe->InitBuffer(inQueueB1, 1, k * n * sizeof(half));
        pipe->InitBuffer(inQueueA2, 1, m * k * sizeof(half));
        pipe->InitBuffer(inQueueB2, 1, k * n * sizeof(half));
        pipe->InitBuffer(outQueueCO1, 1, m * n * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        AscendC::CrossCoreWaitFlag(FLAG_A_READY);  // both AIVs have written their rows of A
        CopyIn();
        Split();
        Compute();
        CopyOut();
        AscendC::CrossCoreSetFlag<2, PIPE_FIX>(FLAG_C_READY);  // after the Fixpipe to GM
    }

private:
    __aicore__ inline void CopyIn()
    {
        AscendC::LocalTensor<half> a1 = inQueueA1.AllocTensor<half>();
        AscendC::LocalTensor<half> b1 = inQueueB1.AllocTensor<half>();
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
        inQueueA1.EnQue(a1);
        inQueueB1.EnQue(b1);
    }

    __aicore__ inline void Split()
    {
        AscendC::LocalTensor<half> a1 = inQueueA1.DeQue<half>();
        AscendC::LocalTensor<half> b1 = inQueueB1.DeQue<half>();
        AscendC::LocalTensor<half> a2 = inQueueA2.AllocTensor<half>();
        AscendC::LocalTensor<half> b2 = inQueueB2.AllocTensor<half>();
        const uint32_t m1 = m / 16, k1 = k / 16, n1 = n / 16;
        for (uint32_t mi = 0; mi < m1; ++mi) {
            AscendC::LoadData2DParams p;
            p.startIndex = mi;
            p.repeatTimes = k1;
            p.srcStride = m1;
            p.ifTranspose = false;
            AscendC::LoadData(a2[mi * k1 * 256], a1, p);
        }
        for (uint32_t kk = 0; kk < k1; ++kk) {
            AscendC::LoadData2DParams p;
            p.startIndex = kk;
            p.repeatTimes = n1;
            p.srcStride = k1;
            p.ifTranspose = true;
            AscendC::LoadData(b2[kk * n1 * 256], b1, p);
        }
        inQueueA2.EnQue(a2);
        inQueueB2.EnQue(b2);
        inQueueA1.FreeTensor(a1);
        inQueueB1.FreeTensor(b1);
    }

    __aicore__ inline void Compute()
    {
        AscendC::LocalTensor<half> a2 = inQueueA2.DeQue<half>();
        AscendC::LocalTensor<half> b2 = inQueueB2.DeQue<half>();
        AscendC::LocalTensor<float> c1 = outQueueCO1.AllocTensor<float>();
        AscendC::MmadParams p;
        p.m = m;
        p.n = n;
        p.k = k;
        p.cmatrixInitVal = true;
        p.isBias = false;
        AscendC::Mmad(c1, a2, b2, p);
        outQueueCO1.EnQue(c1);
        inQueueA2.FreeTensor(a2);
        inQueueB2.FreeTensor(b2);
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
        AscendC::Fixpipe<float, float, AscendC::CFG_ROW_MAJOR>(cGm, c1, p);
        outQueueCO1.FreeTensor(c1);
    }

    AscendC::TQue<AscendC::TPosition::A1, 1> inQueueA1;
    AscendC::TQue<AscendC::TPosition::B1, 1> inQueueB1;
    AscendC::TQue<AscendC::TPosition::A2, 1> inQueueA2;
    AscendC::TQue<AscendC::TPosition::B2, 1> inQueueB2;
    AscendC::TQue<AscendC::TPosition::CO1, 1> outQueueCO1;
    AscendC::GlobalTensor<half> aGm, bGm;
    AscendC::GlobalTensor<float> cGm;
    uint32_t m = 0, n = 0, k = 0;
};

__aicore__ inline void MixVecCube(GM_ADDR x, GM_ADDR w, GM_ADDR bias, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(MixTiling, t, tiling);
    GM_ADDR ws = AscendC::GetUserWorkspace(workspace);
    AscendC::TPipe pipe;
    if ASCEND_IS_AIV {
        MixVectorPart op;
        op.Init(x, bias, y, ws, t, &pipe);
        op.Process();
    }
    if ASCEND_IS_AIC {
        MixCubePart op;
        op.Init(w, ws, t, &pipe);
        op.Process();
    }
}

extern "C" __global__ __aicore__ void mix_vec_cube(GM_ADDR x, GM_ADDR w, GM_ADDR bias, GM_ADDR y, GM_ADDR workspace,
                                                   GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    MixVecCube(x, w, bias, y, workspace, tiling);
}

extern "C" __global__ __aicore__ void mix_vec_cube_1_1(GM_ADDR x, GM_ADDR w, GM_ADDR bias, GM_ADDR y,
                                                       GM_ADDR workspace, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
    MixVecCube(x, w, bias, y, workspace, tiling);
}

// What each core sees: per block 3 slots (AIC, AIV0, AIV1) of 8 int32:
// GetBlockIdx, GetBlockNum, GetSubBlockIdx, GetTaskRation, GetSubBlockNum, g_coreType,
// ASCEND_IS_AIV, ASCEND_IS_AIC.
extern "C" __global__ __aicore__ void mix_ids(GM_ADDR out)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    AscendC::GlobalTensor<int32_t> o;
    o.SetGlobalBuffer((__gm__ int32_t*)out);
    int64_t slot = 0;
    if (ASCEND_IS_AIC) {
        slot = AscendC::GetBlockIdx() * 3;
    } else {
        slot = AscendC::GetBlockIdx() / AscendC::GetTaskRation() * 3 + 1 + AscendC::GetSubBlockIdx();
    }
    const int32_t v[8] = {static_cast<int32_t>(AscendC::GetBlockIdx()), static_cast<int32_t>(AscendC::GetBlockNum()),
                          static_cast<int32_t>(AscendC::GetSubBlockIdx()),
                          static_cast<int32_t>(AscendC::GetTaskRation()),
                          static_cast<int32_t>(AscendC::GetSubBlockNum()), g_coreType, ASCEND_IS_AIV ? 1 : 0,
                          ASCEND_IS_AIC ? 1 : 0};
    for (int i = 0; i < 8; ++i) o.SetValue(slot * 8 + i, v[i]);
}

// Modes 0 and 1 (the scalar GM accesses stand in for any GM traffic): every AIV writes its
// GetBlockIdx, a mode-0 barrier over all AIVs, then each reads its right neighbour's value
// (over the whole launch); the AIVs of a block then hand a value over with mode 1, and the AICs
// meet in a mode-0 barrier too. out: [2 * blocks] neighbours, [2 * blocks] partners, [blocks] AIC.
extern "C" __global__ __aicore__ void mix_sync_modes(GM_ADDR scratch, GM_ADDR out)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);
    AscendC::GlobalTensor<int32_t> s, o;
    s.SetGlobalBuffer((__gm__ int32_t*)scratch);
    o.SetGlobalBuffer((__gm__ int32_t*)out);
    const int32_t blocks = AscendC::GetBlockNum();
    const int32_t me = AscendC::GetBlockIdx();
    if ASCEND_IS_AIV {
        const int32_t aivs = blocks * 2;
        s.SetValue(me, 100 + me);
        AscendC::CrossCoreSetFlag<0, PIPE_MTE3>(3);
        AscendC::CrossCoreWaitFlag(3);
        o.SetValue(me, s.GetValue((me + 1) % aivs));
        s.SetValue(aivs + me, 1000 + me);
        AscendC::CrossCoreSetFlag<1, PIPE_MTE3>(4);
        AscendC::CrossCoreWaitFlag(4);
        o.SetValue(aivs + me, s.GetValue(aivs + (me ^ 1)));
    }
    if ASCEND_IS_AIC {
        s.SetValue(4 * blocks + me, 7 + me);
        AscendC::CrossCoreSetFlag<0, PIPE_FIX>(3);
        AscendC::CrossCoreWaitFlag(3);
        int32_t sum = 0;
        for (int32_t b = 0; b < blocks; ++b) sum += s.GetValue(4 * blocks + b);
        o.SetValue(4 * blocks + me, sum);
    }
}

// KERNEL_TYPE_MIX_AIV_1_0: block_dim AIVs with the cross-core scheduler (mode 0 only). Each AIV
// writes its index, all meet in a mode-0 barrier, each reads its left neighbour's value.
extern "C" __global__ __aicore__ void mix_aiv_barrier(GM_ADDR scratch, GM_ADDR out)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
    AscendC::GlobalTensor<int32_t> s, o;
    s.SetGlobalBuffer((__gm__ int32_t*)scratch);
    o.SetGlobalBuffer((__gm__ int32_t*)out);
    const int32_t n = AscendC::GetBlockNum();
    const int32_t me = AscendC::GetBlockIdx();
    s.SetValue(me, 10 * me);
    AscendC::CrossCoreSetFlag<0, PIPE_MTE3>(0);
    AscendC::CrossCoreWaitFlag(0);
    o.SetValue(me, s.GetValue((me + n - 1) % n));
}
