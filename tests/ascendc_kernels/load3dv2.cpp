// LoadData with LoadData3DParamsV2 (cube_extra.h), half, on one AIC.
// load3dv2_gemm: C (m x n, float) = A (m x k) . B (k x n); A and B go GM -> L1 (Nd2Nz) -> L0A /
// L0B through Load3Dv2 with l1H = 1 (a matrix as a 1 x W feature map); transA = 1 takes A from
// GM as k x m and loads it with enTranspose. load3dv2_im2col: a 1-channel-block feature map
// (H x W x 16 halves in GM, NC1HWC0) to L0A as the img2col matrix of a 3 x 3 filter with
// padding 1 (padValue 0) and stride 1, then Mmad with an identity B (16 x 16 per k block) and
// Fixpipe, so C is the img2col matrix itself (rows = output positions, cols = (kh, kw, c0)).
#include "kernel_operator.h"

constexpr int32_t M = 32, N = 32, K = 48;
constexpr int32_t H = 4, W = 4, KS = 3, ROWS = H * W, COLS = KS * KS * 16;

template <typename T>
__aicore__ inline void Nd2Nz(const AscendC::LocalTensor<T>& l1, const AscendC::GlobalTensor<T>& gm, int rows, int cols)
{
    AscendC::Nd2NzParams p;
    p.ndNum = 1;
    p.nValue = rows;
    p.dValue = cols;
    p.srcNdMatrixStride = 0;
    p.srcDValue = cols;
    p.dstNzC0Stride = rows;
    p.dstNzNStride = 1;
    p.dstNzMatrixStride = 0;
    AscendC::DataCopy(l1, gm, p);
}

__aicore__ inline void ToGm(const AscendC::GlobalTensor<float>& c, const AscendC::LocalTensor<float>& co1, int m, int n)
{
    AscendC::FixpipeParamsV220 f;
    f.nSize = n;
    f.mSize = m;
    f.srcStride = m;
    f.dstStride = n;
    f.ndNum = 1;
    AscendC::Fixpipe(c, co1, f);
}

extern "C" __global__ __aicore__ void load3dv2_gemm(GM_ADDR a, GM_ADDR b, GM_ADDR c, int64_t transA)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::A1> a1Buf;
    AscendC::TBuf<AscendC::TPosition::B1> b1Buf;
    AscendC::TBuf<AscendC::TPosition::A2> a2Buf;
    AscendC::TBuf<AscendC::TPosition::B2> b2Buf;
    AscendC::TBuf<AscendC::TPosition::CO1> cBuf;
    pipe.InitBuffer(a1Buf, M * K * 2);
    pipe.InitBuffer(b1Buf, K * N * 2);
    pipe.InitBuffer(a2Buf, M * K * 2);
    pipe.InitBuffer(b2Buf, K * N * 2);
    pipe.InitBuffer(cBuf, M * N * 4);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a, M * K);
    bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, M * N);
    auto a1 = a1Buf.Get<half>(), b1 = b1Buf.Get<half>(), a2 = a2Buf.Get<half>(), b2 = b2Buf.Get<half>();
    auto co1 = cBuf.Get<float>();
    Nd2Nz(a1, ag, transA ? K : M, transA ? M : K);
    Nd2Nz(b1, bg, K, N);
    AscendC::LoadData3DParamsV2<half> pa;
    pa.l1H = 1;
    pa.l1W = transA ? K : M;
    pa.channelSize = transA ? M : K;
    pa.kExtension = transA ? M : K;
    pa.mExtension = transA ? K : M;
    pa.enTranspose = transA != 0;
    AscendC::LoadData(a2, a1, pa);
    AscendC::LoadData3DParamsV2<half> pb;  // B (k x n) in L1 is a 1 x k map of n channels
    pb.l1H = 1;
    pb.l1W = K;
    pb.channelSize = N;
    pb.kExtension = N;
    pb.mExtension = K;
    AscendC::LoadData(b2, b1, pb);
    AscendC::MmadParams mp;
    mp.m = M;
    mp.n = N;
    mp.k = K;
    mp.cmatrixInitVal = true;
    AscendC::Mmad(co1, a2, b2, mp);
    ToGm(cg, co1, M, N);
}

extern "C" __global__ __aicore__ void load3dv2_im2col(GM_ADDR fm, GM_ADDR eye, GM_ADDR c)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::A1> a1Buf;
    AscendC::TBuf<AscendC::TPosition::B1> b1Buf;
    AscendC::TBuf<AscendC::TPosition::A2> a2Buf;
    AscendC::TBuf<AscendC::TPosition::B2> b2Buf;
    AscendC::TBuf<AscendC::TPosition::CO1> cBuf;
    pipe.InitBuffer(a1Buf, H * W * 16 * 2);
    pipe.InitBuffer(b1Buf, COLS * COLS * 2);
    pipe.InitBuffer(a2Buf, ROWS * COLS * 2);
    pipe.InitBuffer(b2Buf, COLS * COLS * 2);
    pipe.InitBuffer(cBuf, ROWS * COLS * 4);
    AscendC::GlobalTensor<half> fg, eg;
    AscendC::GlobalTensor<float> cg;
    fg.SetGlobalBuffer((__gm__ half*)fm, H * W * 16);
    eg.SetGlobalBuffer((__gm__ half*)eye, COLS * COLS);
    cg.SetGlobalBuffer((__gm__ float*)c, ROWS * COLS);
    auto a1 = a1Buf.Get<half>(), b1 = b1Buf.Get<half>(), a2 = a2Buf.Get<half>(), b2 = b2Buf.Get<half>();
    auto co1 = cBuf.Get<float>();
    AscendC::DataCopy(a1, fg, H * W * 16);  // already NC1HWC0 with C1 = 1
    Nd2Nz(b1, eg, COLS, COLS);
    AscendC::LoadData3DParamsV2<half> pa;
    pa.padList[0] = pa.padList[1] = pa.padList[2] = pa.padList[3] = 1;
    pa.l1H = H;
    pa.l1W = W;
    pa.channelSize = 16;
    pa.kExtension = COLS;
    pa.mExtension = ROWS;
    pa.filterW = KS;
    pa.filterH = KS;
    AscendC::LoadData(a2, a1, pa);
    AscendC::LoadData3DParamsV2<half> pb;
    pb.l1H = 1;
    pb.l1W = COLS;
    pb.channelSize = COLS;
    pb.kExtension = COLS;
    pb.mExtension = COLS;
    AscendC::LoadData(b2, b1, pb);
    AscendC::MmadParams mp;
    mp.m = ROWS;
    mp.n = COLS;
    mp.k = COLS;
    mp.cmatrixInitVal = true;
    AscendC::Mmad(co1, a2, b2, mp);
    ToGm(cg, co1, ROWS, COLS);
}
