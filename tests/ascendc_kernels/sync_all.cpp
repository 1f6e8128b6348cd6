// SyncAll across the cores of one launch: every core doubles its slice of x into a GM
// workspace, then (after the barrier) copies its neighbour's slice to y -- correct only if
// the neighbour's write happened before the read. `mode` (a scalar argument) picks the
// variant: 0 soft SyncAll, 1 hard SyncAll (arch 2201), 2 core 0 returns before the barrier
// (a deadlock), 3 two rounds of soft SyncAll, 4 core 1 skips the second round.
#include "kernel_operator.h"

constexpr int32_t N = 128;  // halves per core

extern "C" __global__ __aicore__ void sync_all(GM_ADDR x, GM_ADDR y, GM_ADDR work, GM_ADDR sync, int64_t mode)
{
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> q;
    AscendC::TBuf<AscendC::TPosition::VECCALC> syncBuf;
    const int32_t n = AscendC::GetBlockNum();
    const int32_t me = AscendC::GetBlockIdx();
    pipe.InitBuffer(q, 1, N * sizeof(half));
    pipe.InitBuffer(syncBuf, n * 32);
    AscendC::GlobalTensor<half> xGm, yGm, wGm;
    AscendC::GlobalTensor<int32_t> sGm;
    xGm.SetGlobalBuffer((__gm__ half*)x, n * N);
    yGm.SetGlobalBuffer((__gm__ half*)y, n * N);
    wGm.SetGlobalBuffer((__gm__ half*)work, n * N);
    sGm.SetGlobalBuffer((__gm__ int32_t*)sync, n * 8);
    AscendC::LocalTensor<int32_t> ubSync = syncBuf.Get<int32_t>();

    AscendC::LocalTensor<half> t = q.AllocTensor<half>();
    AscendC::DataCopy(t, xGm[me * N], N);
    q.EnQue(t);
    t = q.DeQue<half>();
    AscendC::Muls(t, t, (half)2.0, N);
    AscendC::DataCopy(wGm[me * N], t, N);
    if (mode == 2 && me == 0) {
        q.FreeTensor(t);
        return;
    }
    if (mode == 1)
        AscendC::SyncAll();
    else
        AscendC::SyncAll(sGm, ubSync);
    if (mode == 3 || (mode == 4 && me != 1))
        AscendC::SyncAll(sGm, ubSync);
    AscendC::DataCopy(t, wGm[((me + 1) % n) * N], N);
    AscendC::DataCopy(yGm[me * N], t, N);
    q.FreeTensor(t);
}
