// Inter-block sync through GM words (block_sync.h). `mode` (a scalar argument) picks the case:
// 0 IBSet / IBWait chain against the launch order: block b waits for block b + 1, so y is the
// suffix sum of x only if the waits really wait; 1 determine-compute: 3 rounds of
// WaitPreBlock / append own index to log / NotifyNextBlock, so log is 0..n-1 three times;
// 2 IBWait for an event nobody sets (a deadlock); 3 WaitPreTaskEnd twice (refused).
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void block_sync(GM_ADDR x, GM_ADDR y, GM_ADDR ws, GM_ADDR log, int64_t mode)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> ubBuf;
    const int32_t n = AscendC::GetBlockNum();
    const int32_t me = AscendC::GetBlockIdx();
    pipe.InitBuffer(ubBuf, n * 32 + 32);
    AscendC::LocalTensor<int32_t> ub = ubBuf.Get<int32_t>();
    AscendC::GlobalTensor<int32_t> xGm, yGm, wsGm, logGm;
    xGm.SetGlobalBuffer((__gm__ int32_t*)x, n);
    yGm.SetGlobalBuffer((__gm__ int32_t*)y, n);
    wsGm.SetGlobalBuffer((__gm__ int32_t*)ws);
    logGm.SetGlobalBuffer((__gm__ int32_t*)log);
    if (mode == 0) {
        int32_t acc = xGm.GetValue(me);
        if (me + 1 < n) {
            AscendC::IBWait(wsGm, ub, me + 1, 0);
            acc += yGm.GetValue(me + 1);
        }
        yGm.SetValue(me, acc);
        AscendC::IBSet(wsGm, ub, me, 0);
    } else if (mode == 1) {
        AscendC::InitDetermineComputeWorkspace(wsGm, ub);
        for (int r = 0; r < 3; ++r) {
            AscendC::WaitPreBlock(wsGm, ub);
            const int32_t at = logGm.GetValue(0);
            logGm.SetValue(1 + at, me);
            logGm.SetValue(0, at + 1);
            AscendC::NotifyNextBlock(wsGm, ub);
        }
    } else if (mode == 2) {
        if (me == 0) AscendC::IBWait(wsGm, ub, 1, 3);
    } else {
        AscendC::WaitPreTaskEnd();
        AscendC::WaitPreTaskEnd();
    }
}
