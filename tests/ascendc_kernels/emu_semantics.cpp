// Small probes of documented API semantics (tiling.mode picks one); each writes what it
// produced to `out` for the test to compare with the devkit's description.
#include "kernel_operator.h"

using namespace AscendC;

struct ProbeTiling {
    uint32_t mode;
};

extern "C" __global__ __aicore__ void emu_probe(GM_ADDR in, GM_ADDR out, GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(ProbeTiling, t, tiling);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 4096);
    switch (t.mode) {
        case 1: {  // DataCopyPad GM -> UB: 3 rows of 10 halves, 2 halves apart in GM, padded 2 left / 3 right with 7
            GlobalTensor<half> inGm, outGm;
            inGm.SetGlobalBuffer((__gm__ half*)in, 64);
            outGm.SetGlobalBuffer((__gm__ half*)out, 96);
            LocalTensor<half> u = buf.Get<half>();
            Duplicate(u, (half)0, 96);
            DataCopyPad(u, inGm, {3, 10 * sizeof(half), 2 * sizeof(half), 1, 0}, {true, 2, 3, (half)7});
            DataCopy(outGm, u, 96);
            break;
        }
        case 2: {  // Cast float -> half with each RoundMode: 16 inputs, mode m writes out[16 * m ...]
            GlobalTensor<float> inGm;
            GlobalTensor<half> outGm;
            inGm.SetGlobalBuffer((__gm__ float*)in, 16);
            outGm.SetGlobalBuffer((__gm__ half*)out, 16 * 7);
            LocalTensor<float> f = buf.Get<float>();
            LocalTensor<half> h = buf.Get<half>()[256];
            DataCopy(f, inGm, 16);
            const RoundMode modes[] = {RoundMode::CAST_NONE, RoundMode::CAST_RINT, RoundMode::CAST_FLOOR,
                                       RoundMode::CAST_CEIL, RoundMode::CAST_ROUND, RoundMode::CAST_TRUNC,
                                       RoundMode::CAST_ODD};
            for (int m = 0; m < 7; ++m) Cast(h[16 * m], f, modes[m], 16);
            DataCopy(outGm, h, 16 * 7);
            break;
        }
        case 3: {  // Cast float -> int32_t, RINT..TRUNC: mode m writes out[8 * (m - 1) ...]
            GlobalTensor<float> inGm;
            GlobalTensor<int32_t> outGm;
            inGm.SetGlobalBuffer((__gm__ float*)in, 8);
            outGm.SetGlobalBuffer((__gm__ int32_t*)out, 8 * 5);
            LocalTensor<float> f = buf.Get<float>();
            LocalTensor<int32_t> i = buf.Get<int32_t>()[64];
            DataCopy(f, inGm, 8);
            const RoundMode modes[] = {RoundMode::CAST_RINT, RoundMode::CAST_FLOOR, RoundMode::CAST_CEIL,
                                       RoundMode::CAST_ROUND, RoundMode::CAST_TRUNC};
            for (int m = 0; m < 5; ++m) Cast(i[8 * m], f, modes[m], 8);
            DataCopy(outGm, i, 8 * 5);
            break;
        }
        case 4: {  // repeat-form strides: 32 lanes (2 blocks), block stride 2, repeat stride 8, 2 repeats
            GlobalTensor<half> outGm;
            outGm.SetGlobalBuffer((__gm__ half*)out, 256);
            LocalTensor<half> u = buf.Get<half>();
            Duplicate(u, (half)0, 256);
            Duplicate(u, (half)5, 32, 2, 2, 8);
            uint64_t mask[2] = {0x5ull, 0};  // lanes 0 and 2
            Adds(u, u, (half)1, mask, 2, {1, 1, 8, 8});
            DataCopy(outGm, u, 256);
            break;
        }
        case 5: {  // Axpy half -> float (64 lanes), DataCopy with DataCopyParams gaps on both sides
            GlobalTensor<half> inGm;
            GlobalTensor<float> outGm;
            inGm.SetGlobalBuffer((__gm__ half*)in, 64);
            outGm.SetGlobalBuffer((__gm__ float*)out, 64);
            LocalTensor<half> h = buf.Get<half>();
            LocalTensor<float> f = buf.Get<float>()[256];
            DataCopy(h, inGm, {2, 1, 1, 0});  // halves [0,16) and [32,48) -> UB [0,32)
            Duplicate(f, 1.0f, 64);
            Axpy(f, h, (half)2, 32);  // f = 2 * h + 1
            DataCopy(outGm, f, {2, 2, 0, 2});  // floats [0,16) -> GM [0,16), [16,32) -> GM [32,48)
            break;
        }
        default: break;
    }
}
