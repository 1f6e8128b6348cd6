// A cube kernel with a bug the uninitialized-read check exists for: B is loaded into L0B, but
// the LoadData that should fill L0A with A was left out, so Mmad multiplies whatever L0A held
// (on hardware: the previous kernel's data; here: NaN). The emulator stops the kernel where the
// garbage product would leave the core (the Fixpipe to GM) and names the kernel, that line, the
// Mmad line that read L0A and the L0A tensor.
#include "kernel_operator.h"

constexpr uint32_t M = 16, K = 32, N = 16;

extern "C" __global__ __cube__ void mmad_uninit_l0a(GM_ADDR a, GM_ADDR b, GM_ADDR c)
{
    AscendC::GlobalTensor<half> aGm, bGm;
    AscendC::GlobalTensor<float> cGm;
    aGm.SetGlobalBuffer((__gm__ half*)a, M * K);
    bGm.SetGlobalBuffer((__gm__ half*)b, K * N);
    cGm.SetGlobalBuffer((__gm__ float*)c, M * N);
    AscendC::LocalMemAllocator<AscendC::Hardware::L1> l1;
    AscendC::LocalMemAllocator<AscendC::Hardware::L0A> l0a;
    AscendC::LocalMemAllocator<AscendC::Hardware::L0B> l0b;
    AscendC::LocalMemAllocator<AscendC::Hardware::L0C> l0c;
    AscendC::LocalTensor<half> a1 = l1.Alloc<AscendC::TPosition::A1, half, M * K>();
    AscendC::LocalTensor<half> b1 = l1.Alloc<AscendC::TPosition::B1, half, K * N>();
    AscendC::LocalTensor<half> a2 = l0a.Alloc<half, M * K>();  // never filled: the bug
    AscendC::LocalTensor<half> b2 = l0b.Alloc<half, K * N>();
    AscendC::LocalTensor<float> c1 = l0c.Alloc<float, M * N>();

    AscendC::Nd2NzParams pa;
    pa.ndNum = 1;
    pa.nValue = M;
    pa.dValue = K;
    pa.srcDValue = K;
    pa.dstNzC0Stride = M;
    pa.dstNzNStride = 1;
    AscendC::DataCopy(a1, aGm, pa);
    AscendC::Nd2NzParams pb;
    pb.ndNum = 1;
    pb.nValue = K;
    pb.dValue = N;
    pb.srcDValue = N;
    pb.dstNzC0Stride = K;
    pb.dstNzNStride = 1;
    AscendC::DataCopy(b1, bGm, pb);
    AscendC::SetFlag<AscendC::HardEvent::MTE2_MTE1>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (uint32_t kk = 0; kk < K / 16; ++kk) {
        AscendC::LoadData2DParams p;
        p.startIndex = kk;
        p.repeatTimes = N / 16;
        p.srcStride = K / 16;
        p.ifTranspose = true;
        AscendC::LoadData(b2[kk * (N / 16) * 256], b1, p);
    }
    AscendC::SetFlag<AscendC::HardEvent::MTE1_M>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE1_M>(EVENT_ID0);
    AscendC::MmadParams mp;
    mp.m = M;
    mp.n = N;
    mp.k = K;
    mp.cmatrixInitVal = true;
    AscendC::Mmad(c1, a2, b2, mp);  // MMAD_LINE: reads a2 (L0A) before anything wrote it
    AscendC::SetFlag<AscendC::HardEvent::M_FIX>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::M_FIX>(EVENT_ID0);
    AscendC::FixpipeParamsV220 fp;
    fp.nSize = N;
    fp.mSize = M;
    fp.srcStride = M;
    fp.dstStride = N;
    fp.ndNum = 1;
    AscendC::Fixpipe<float, float, AscendC::CFG_ROW_MAJOR>(cGm, c1, fp);  // FIXPIPE_LINE
}
