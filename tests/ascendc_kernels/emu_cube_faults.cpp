// One kernel that breaks a chosen rule of the cube data paths (tiling.mode) for the emulator's
// tests: UB -> L1 and CO1 -> CO2 (arch 2002), the bias table C2 and Mmad with bias (arch 2201).
// The offending line of each mode carries a "FAULT:<name>" marker the test looks up.
#include "kernel_operator.h"

using namespace AscendC;

struct CubeFaultTiling {
    uint32_t mode;
    uint32_t length;  // elements of x
};

extern "C" __global__ __aicore__ void emu_cube_fault(GM_ADDR x, GM_ADDR workspace, GM_ADDR tiling)
{
    REGISTER_TILING_DEFAULT(CubeFaultTiling);
    GET_TILING_DATA(t, tiling);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> ub;
    TQue<TPosition::A1, 1> l1;
    TQue<TPosition::C1, 1> c1;
    TQue<TPosition::C2, 1> bt;
    TQue<TPosition::A2, 1> a2;
    TQue<TPosition::B2, 1> b2;
    TQue<TPosition::CO1, 1> co1;
    TQue<TPosition::CO2, 1> co2;
    DataCopyEnhancedParams matrix;
    matrix.blockMode = BlockMode::BLOCK_MODE_MATRIX;
    switch (t.mode) {
        case 1: {  // 2 KiB: over the 1 KiB bias table of 910B
            pipe.InitBuffer(bt, 1, 2048);  // FAULT:bt_overflow
            break;
        }
        case 2: {  // a L0C view 16 floats in: not at a 1024 B fractal
            pipe.InitBuffer(co1, 1, 4096);
            pipe.InitBuffer(co2, 1, 4096);
            LocalTensor<float> c = co1.AllocTensor<float>();
            LocalTensor<float> u = co2.AllocTensor<float>();
            DataCopy(u, c[16], {1, 1, 0, 0}, matrix);  // FAULT:l0c_ub_misaligned
            break;
        }
        case 3: {  // the 310P code on 910B: UB and L1 in one block
            pipe.InitBuffer(ub, 1, 1024);
            pipe.InitBuffer(l1, 1, 1024);  // FAULT:ub_l1_on_2201
            break;
        }
        case 4: {
            pipe.InitBuffer(bt, 1, 256);  // FAULT:c2_on_2002
            break;
        }
        case 5: {  // the bias is ignored when cmatrixInitVal stays true
            pipe.InitBuffer(a2, 1, 512);
            pipe.InitBuffer(b2, 1, 512);
            pipe.InitBuffer(co1, 1, 1024);
            pipe.InitBuffer(bt, 1, 64);
            LocalTensor<half> a = a2.AllocTensor<half>();
            LocalTensor<half> b = b2.AllocTensor<half>();
            LocalTensor<float> c = co1.AllocTensor<float>();
            LocalTensor<float> bias = bt.AllocTensor<float>();
            MmadParams p;
            p.m = 16;
            p.n = 16;
            p.k = 16;
            Mmad(c, a, b, bias, p);  // FAULT:bias_init_val
            break;
        }
        case 6: {  // 8 floats = 32 B: the bias table moves 64 B units
            pipe.InitBuffer(c1, 1, 64);
            pipe.InitBuffer(bt, 1, 64);
            LocalTensor<float> s = c1.AllocTensor<float>();
            LocalTensor<float> d = bt.AllocTensor<float>();
            DataCopy(d, s, 8);  // FAULT:bt_count_units
            break;
        }
        case 7: {  // the default BLOCK_MODE_NORMAL on CO1 -> CO2
            pipe.InitBuffer(co1, 1, 1024);
            pipe.InitBuffer(co2, 1, 1024);
            LocalTensor<float> c = co1.AllocTensor<float>();
            LocalTensor<float> u = co2.AllocTensor<float>();
            DataCopyEnhancedParams normal;
            DataCopy(u, c, {1, 1, 0, 0}, normal);  // FAULT:blockmode_normal
            break;
        }
        case 8: {  // a second 32 B C2 buffer starts at byte 32 of the bias table
            TQue<TPosition::C2, 2> bt2;
            pipe.InitBuffer(c1, 1, 64);
            pipe.InitBuffer(bt2, 2, 32);
            LocalTensor<float> s = c1.AllocTensor<float>();
            LocalTensor<float> d0 = bt2.AllocTensor<float>();
            LocalTensor<float> d1 = bt2.AllocTensor<float>();
            DataCopy(d1, s, {1, 1, 0, 0});  // FAULT:bt_dst_misaligned
            (void)d0;
            break;
        }
        case 9: {  // arch 2002 has no bias table: not even a CO1 bias for Mmad
            pipe.InitBuffer(a2, 1, 512);
            pipe.InitBuffer(b2, 1, 512);
            pipe.InitBuffer(co1, 1, 1024);
            LocalTensor<half> a = a2.AllocTensor<half>();
            LocalTensor<half> b = b2.AllocTensor<half>();
            LocalTensor<float> c = co1.AllocTensor<float>();
            MmadParams p;
            p.m = 16;
            p.n = 16;
            p.k = 16;
            p.cmatrixInitVal = false;
            Mmad(c, a, b, c, p);  // FAULT:mmad_bias_on_2002
            break;
        }
        case 10: {  // m = 1 is GEMV on arch 2201
            pipe.InitBuffer(a2, 1, 512);
            pipe.InitBuffer(b2, 1, 512);
            pipe.InitBuffer(co1, 1, 1024);
            LocalTensor<half> a = a2.AllocTensor<half>();
            LocalTensor<half> b = b2.AllocTensor<half>();
            LocalTensor<float> c = co1.AllocTensor<float>();
            MmadParams p;
            p.m = 1;
            p.n = 16;
            p.k = 16;
            Mmad(c, a, b, p);  // FAULT:mmad_gemv
            break;
        }
        case 11: {  // 10 halves = 20 B UB -> L1
            pipe.InitBuffer(ub, 1, 1024);
            pipe.InitBuffer(l1, 1, 1024);
            LocalTensor<half> s = ub.AllocTensor<half>();
            LocalTensor<half> d = l1.AllocTensor<half>();
            DataCopy(d, s, 10);  // FAULT:ub_l1_count
            break;
        }
        case 12: {  // 2 fractals of 1024 B out of a 1 KiB L0C buffer
            pipe.InitBuffer(co1, 1, 1024);
            pipe.InitBuffer(co2, 1, 4096);
            LocalTensor<float> c = co1.AllocTensor<float>();
            LocalTensor<float> u = co2.AllocTensor<float>();
            DataCopy(u, c, {1, 2, 0, 0}, matrix);  // FAULT:l0c_ub_extent
            break;
        }
        case 13: {  // bias without cmatrixInitVal and a bias-table source in the plain overload
            pipe.InitBuffer(a2, 1, 512);
            pipe.InitBuffer(b2, 1, 512);
            pipe.InitBuffer(co1, 1, 1024);
            LocalTensor<half> a = a2.AllocTensor<half>();
            LocalTensor<half> b = b2.AllocTensor<half>();
            LocalTensor<float> c = co1.AllocTensor<float>();
            MmadParams p;
            p.m = 16;
            p.n = 16;
            p.k = 16;
            p.cmatrixInitVal = false;
            p.cmatrixSource = true;
            Mmad(c, a, b, p);  // FAULT:cmatrix_source
            break;
        }
        case 14: {  // L1 -> UB is not emulated
            pipe.InitBuffer(ub, 1, 1024);
            pipe.InitBuffer(l1, 1, 1024);
            LocalTensor<half> s = l1.AllocTensor<half>();
            LocalTensor<half> d = ub.AllocTensor<half>();
            DataCopy(d, s, 512);  // FAULT:l1_ub
            break;
        }
        case 15: {  // InitConstValue's blockNum / dstGap are A2 (910B) parameters
            pipe.InitBuffer(a2, 1, 2048);
            LocalTensor<half> a = a2.AllocTensor<half>();
            InitConstValue(a, InitConstValueParams<half>(2, 1, 0, static_cast<half>(1)));  // FAULT:init_blocknum
            break;
        }
        case 16: {  // constant fills are for L1 / L0A / L0B only
            pipe.InitBuffer(ub, 1, 1024);
            LocalTensor<half> u = ub.AllocTensor<half>();
            InitConstValue(u, InitConstValueParams<half>(1, 0, 0, static_cast<half>(0)));  // FAULT:init_ub
            break;
        }
        case 17: {  // 2 x 512 B fills into 1 KiB of L0A on 310P: legal
            pipe.InitBuffer(a2, 1, 1024);
            LocalTensor<half> a = a2.AllocTensor<half>();
            InitConstValue(a, InitConstValueParams<half>(2, 0, 0, static_cast<half>(1)));
            break;
        }
        case 18: {  // 3 x 512 B into 1 KiB
            pipe.InitBuffer(a2, 1, 1024);
            LocalTensor<half> a = a2.AllocTensor<half>();
            InitConstValue(a, InitConstValueParams<half>(3, 0, 0, static_cast<half>(1)));  // FAULT:init_extent
            break;
        }
        default: break;
    }
}
