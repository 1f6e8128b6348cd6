// MIX (AIC + AIV) kernels that break a chosen rule (tiling.mode) for the emulator's tests. The
// offending line of each mode carries a "FAULT:<name>" marker the test looks up.
#include "kernel_operator.h"

using namespace AscendC;

struct MixFaultTiling {
    uint32_t mode;
    uint32_t length;  // halves in x
};

extern "C" __global__ __aicore__ void mix_fault(GM_ADDR x, GM_ADDR tiling)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);  // FAULT:declared_mix
    GET_TILING_DATA_WITH_STRUCT(MixFaultTiling, t, tiling);
    GlobalTensor<half> xGm;
    xGm.SetGlobalBuffer((__gm__ half*)x, t.length);
    TPipe pipe;
    switch (t.mode) {
        case 1:  // an AIV waits for a flag nobody sets
            if ASCEND_IS_AIV {
                CrossCoreWaitFlag(5);  // FAULT:wait_forever
            }
            break;
        case 2:  // vector code on the AIC (declaring the UB buffer is fine: it reserves addresses only)
            if ASCEND_IS_AIC {
                TBuf<TPosition::VECCALC> buf;
                pipe.InitBuffer(buf, 1024);
                LocalTensor<half> a = buf.Get<half>();
                Adds(a, a, (half)1.0, 512);  // FAULT:vector_on_aic
            }
            break;
        case 3:  // cube code on an AIV
            if ASCEND_IS_AIV {
                TQue<TPosition::A1, 1> a1;
                pipe.InitBuffer(a1, 1, 1024);
                LocalTensor<half> l1 = a1.AllocTensor<half>();
                DataCopy(l1, xGm, 512);  // FAULT:cube_on_aiv
                a1.FreeTensor(l1);
            }
            break;
        case 4:  // the AIC notifies its AIVs, which never wait
            if ASCEND_IS_AIC {
                CrossCoreSetFlag<2, PIPE_FIX>(2);  // FAULT:unpaired_set
            }
            break;
        case 5:  // the AIC runs 16 notifications ahead of its AIVs
            if ASCEND_IS_AIC {
                for (int i = 0; i < 16; ++i) {
                    CrossCoreSetFlag<2, PIPE_FIX>(2);  // FAULT:counter_overflow
                }
            }
            if ASCEND_IS_AIV {
                for (int i = 0; i < 16; ++i) CrossCoreWaitFlag(2);
            }
            break;
        case 6:  // an AIV breaks a rule while the AIC waits for it: that error is the launch's
            if ASCEND_IS_AIC {
                CrossCoreWaitFlag(0);
            }
            if ASCEND_IS_AIV {
                TQue<TPosition::VECIN, 1> q;
                pipe.InitBuffer(q, 1, 1024);
                LocalTensor<half> a = q.AllocTensor<half>();
                DataCopy(a, xGm[t.length - 16], 32);  // FAULT:error_while_waiting
                q.FreeTensor(a);
                CrossCoreSetFlag<2, PIPE_MTE3>(0);
            }
            break;
        case 7:  // the AIC waits for flag 1, its AIVs for flag 2: nobody sets either
            if ASCEND_IS_AIC {
                CrossCoreWaitFlag(1);  // FAULT:deadlock
                CrossCoreSetFlag<2, PIPE_FIX>(2);
            }
            if ASCEND_IS_AIV {
                CrossCoreWaitFlag(2);
                CrossCoreSetFlag<2, PIPE_MTE3>(1);
            }
            break;
        case 8:  // mode 1 is among the AIVs of a block
            if ASCEND_IS_AIC {
                CrossCoreSetFlag<1, PIPE_FIX>(0);  // FAULT:mode1_on_aic
            }
            break;
        case 9:
            if ASCEND_IS_AIV {
                CrossCoreSetFlag<2, PIPE_MTE3>(16);  // FAULT:flag_range
            }
            break;
        case 10:  // only AIV0 reports: the AIC's flag never rises
            if ASCEND_IS_AIC {
                CrossCoreWaitFlag(0);  // FAULT:half_reported
            }
            if ASCEND_IS_AIV {
                if (GetSubBlockIdx() == 0) CrossCoreSetFlag<2, PIPE_MTE3>(0);
            }
            break;
        case 11:
            if ASCEND_IS_AIV {
                CrossCoreSetFlag<2, PIPE_S>(0);  // FAULT:pipe_s
            }
            break;
        case 12:  // an AIV reports in mode 2 but the AIC never waits
            if ASCEND_IS_AIV {
                CrossCoreSetFlag<2, PIPE_MTE3>(6);  // FAULT:unpaired_aiv_set
            }
            break;
        default: break;
    }
}

// A MIX launch needs the kernel type declared.
extern "C" __global__ __aicore__ void mix_undeclared(GM_ADDR x)
{
    GlobalTensor<half> xGm;
    xGm.SetGlobalBuffer((__gm__ half*)x);
}

// Cross-core flags in a kernel that is not MIX.
extern "C" __global__ __aicore__ void aiv_crosscore(GM_ADDR x)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    CrossCoreSetFlag<0, PIPE_MTE3>(0);  // FAULT:not_mix
    CrossCoreWaitFlag(0);
}

// ASCEND_IS_AIV in a non-MIX launch before anything fixed the block's core type.
extern "C" __global__ __aicore__ void undecided_core(GM_ADDR x)
{
    if ASCEND_IS_AIV {  // FAULT:undecided
        GlobalTensor<half> xGm;
        xGm.SetGlobalBuffer((__gm__ half*)x);
    }
}

// AIV_ONLY with ASCEND_IS_AIV / ASCEND_IS_AIC: legal in a non-MIX launch once the type is known.
extern "C" __global__ __aicore__ void aiv_guarded(GM_ADDR x)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GlobalTensor<half> xGm;
    xGm.SetGlobalBuffer((__gm__ half*)x, 64);
    if ASCEND_IS_AIV {
        xGm.SetValue(GetBlockIdx(), (half)1.0);
    }
    if ASCEND_IS_AIC {
        xGm.SetValue(32 + GetBlockIdx(), (half)1.0);
    }
}

// Mode 2 needs an AIC and its AIVs: a MIX_AIV_1_0 kernel has only AIVs.
extern "C" __global__ __aicore__ void aiv10_mode2(GM_ADDR x)
{
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
    CrossCoreSetFlag<2, PIPE_MTE3>(0);  // FAULT:mode2_without_aic
    CrossCoreWaitFlag(0);
}
