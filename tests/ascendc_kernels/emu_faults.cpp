// One kernel that breaks a chosen Ascend C rule (tiling.mode) for the emulator's tests. The
// offending line of each mode carries a "FAULT:<name>" marker the test looks up.
#include "kernel_operator.h"

using namespace AscendC;

struct FaultTiling {
    uint32_t mode;
    uint32_t length;  // elements of x
};

extern "C" __global__ __aicore__ void emu_fault(GM_ADDR x, GM_ADDR workspace, GM_ADDR tiling)
{
    REGISTER_TILING_DEFAULT(FaultTiling);
    GET_TILING_DATA(t, tiling);
    GlobalTensor<half> xGm;
    xGm.SetGlobalBuffer((__gm__ half*)x, t.length);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    TQue<TPosition::VECOUT, 1> q2;
    TBuf<TPosition::VECCALC> buf;
    switch (t.mode) {
        case 1: {  // two 96 KiB buffers: over 910B's usable UB, within 310P's
            TQue<TPosition::VECIN, 2> big;
            pipe.InitBuffer(big, 2, 96 * 1024);  // FAULT:ub_overflow
            break;
        }
        case 2: {
            pipe.InitBuffer(q, 1, 1024);
            LocalTensor<half> a = q.AllocTensor<half>();
            DataCopy(a, xGm, 10);  // FAULT:datacopy_misaligned
            break;
        }
        case 3: {
            pipe.InitBuffer(q, 1, 1024);
            LocalTensor<half> a = q.DeQue<half>();  // FAULT:deque_empty
            break;
        }
        case 4: {
            pipe.InitBuffer(buf, 1024);
            LocalTensor<half> a = buf.Get<half>();
            Adds(a, a, (half)1.0, 128, 300, {1, 1, 8, 8});  // FAULT:repeat_overflow
            break;
        }
        case 5: {
            pipe.InitBuffer(buf, 1024);  // 512 halves
            LocalTensor<half> a = buf.Get<half>();
            Add(a, a, a, 1024);  // FAULT:local_oob
            break;
        }
        case 6: {
            pipe.InitBuffer(buf, 1024);
            LocalTensor<half> a = buf.Get<half>();
            half v = a[600].GetValue(0);  // FAULT:local_view_oob
            (void)v;
            break;
        }
        case 7: {
            pipe.InitBuffer(q, 1, 1024);
            LocalTensor<half> a = q.AllocTensor<half>();
            DataCopy(a, xGm[t.length - 16], 32);  // FAULT:global_oob
            break;
        }
        case 8: {
            pipe.InitBuffer(q, 2, 1024);
            LocalTensor<half> a = q.AllocTensor<half>();
            LocalTensor<half> b = q.AllocTensor<half>();
            q.EnQue(a);
            q.EnQue(b);  // FAULT:enque_depth
            break;
        }
        case 9: {
            pipe.InitBuffer(q, 1, 1024);
            LocalTensor<half> a = q.AllocTensor<half>();
            LocalTensor<half> b = q.AllocTensor<half>();  // FAULT:alloc_beyond_num
            break;
        }
        case 10: {
            pipe.InitBuffer(q, 1, 1024);
            pipe.InitBuffer(q2, 1, 1024);
            LocalTensor<half> a = q.AllocTensor<half>();
            q2.FreeTensor(a);  // FAULT:free_foreign
            break;
        }
        case 11: {
            pipe.InitBuffer(q, 1, 1024);
            LocalTensor<half> a = q.AllocTensor<half>();
            q.FreeTensor(a);
            Duplicate(a, (half)0, 512);  // FAULT:use_after_free
            break;
        }
        case 12: {
            SetFlag<HardEvent::MTE2_V>(0);
            WaitFlag<HardEvent::MTE2_V>(0);
            WaitFlag<HardEvent::V_MTE3>(1);  // FAULT:waitflag_without_setflag
            break;
        }
        case 13: {
            pipe.InitBuffer(buf, 1024);
            LocalTensor<half> a = buf.Get<half>();
            uint64_t mask = 200;
            Add(a, a, a, mask, 1, {1, 1, 1, 8, 8, 8});  // FAULT:mask_overflow
            break;
        }
        case 14: {
            pipe.InitBuffer(q, 1, 1024);
            TQue<TPosition::A1, 1> l1q;
            pipe.InitBuffer(l1q, 1, 1024);  // FAULT:mix_ub_l1
            break;
        }
        case 15: {
            pipe.InitBuffer(q, 1, 1024);
            LocalTensor<half> a = q.AllocTensor<half>();
            DataCopyPad(a, xGm, {1, 20, 0, 0, 0}, {false, 0, 0, 0});  // FAULT:datacopypad
            break;
        }
        case 16: {
            pipe.InitBuffer(buf, 4096);
            LocalTensor<float> f = buf.Get<float>();
            LocalTensor<half> h = buf.Get<half>()[1024];
            Cast(f, h, RoundMode::CAST_RINT, 64);  // FAULT:cast_mode
            break;
        }
        case 17: {
            pipe.InitBuffer(q, 1, 1024);
            LocalTensor<half> a = q.AllocTensor<half>();
            q.EnQue(a);
            Duplicate(a, (half)0, 16);  // FAULT:use_while_enqueued
            break;
        }
        case 18: {
            pipe.InitBuffer(q, 1, 1024);
            LocalTensor<half> a = q.AllocTensor<half>();
            q.EnQue(a);
            LocalTensor<half> b = q.DeQue<half>();
            Add(b, a, b, 16);  // FAULT:stale_handle
            break;
        }
        case 19: {
            pipe.InitBuffer(buf, 1024);
            LocalTensor<half> a = buf.Get<half>();
            Add(a[3], a[3], a[3], 16);  // FAULT:misaligned_operand
            break;
        }
        case 20: {
            TQue<TPosition::A2, 1> a2;
            pipe.InitBuffer(a2, 1, 64 * 1024 + 512);  // FAULT:l0a_overflow
            break;
        }
        default: break;
    }
}
