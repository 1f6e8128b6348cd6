// Where batch i of Matmul::IterateBatch lives (devkit IterateBatch / MatmulType LayoutMode pages):
// NORMAL keeps the batch's matrices one after the other (A: m x k, B: k x n, C: m x n per batch);
// BSNGD stores A as [B, S, N, G, D] (batch = (b, n, g), matrix S x D, rows N*G*D apart), B and
// C likewise ([B, S1, N, G, S2] for C). When batchA != batchB the smaller side is broadcast,
// batch i using A's i / (batchC / batchA). The bias is per batch (n floats each) when
// MatmulConfig.isBiasBatch, else one row shared by all batches.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernel_tiling/kernel_tiling.h"
#include "lib/matmul/matmul_config.h"

namespace megafuse_emu {

struct BatchView {
    uint64_t aOff = 0, bOff = 0, cOff = 0, biasOff = 0;
    int lda = 0, ldb = 0, ldc = 0;  // row strides of the stored A, B (as stored, i.e. transposed if so) and C
};

// Batch l of loop j (IterateNBatch runs `loop` IterateBatch calls one after the other; IterateBatch is loop 0).
inline BatchView BatchAt(LayoutMode la, LayoutMode lb, LayoutMode lc, const TCubeTiling& t, int m, int n, int k,
                         bool transA, bool transB, bool biasPerBatch, int j, int l, int batchA, int batchB)
{
    const int batchC = std::max(batchA, batchB);
    const int ia = j * batchA + l / std::max(1, batchC / std::max(1, batchA));
    const int ib = j * batchB + l / std::max(1, batchC / std::max(1, batchB));
    const int i = j * batchC + l;
    BatchView v;
    auto bsngd = [](int idx, int s, int ng, int d, uint64_t& off, int& ld) {
        off = uint64_t(idx / ng) * s * ng * d + uint64_t(idx % ng) * d;
        ld = ng * d;
    };
    if (la == LayoutMode::BSNGD) {
        bsngd(ia, t.ALayoutInfoS, t.ALayoutInfoN * t.ALayoutInfoG, t.ALayoutInfoD, v.aOff, v.lda);
    } else {
        v.aOff = uint64_t(ia) * m * k;
        v.lda = transA ? m : k;
    }
    if (lb == LayoutMode::BSNGD) {
        bsngd(ib, t.BLayoutInfoS, t.BLayoutInfoN * t.BLayoutInfoG, t.BLayoutInfoD, v.bOff, v.ldb);
    } else {
        v.bOff = uint64_t(ib) * k * n;
        v.ldb = transB ? k : n;
    }
    if (lc == LayoutMode::BSNGD) {
        bsngd(i, t.CLayoutInfoS1, t.CLayoutInfoN * t.CLayoutInfoG, t.CLayoutInfoS2, v.cOff, v.ldc);
    } else {
        v.cOff = uint64_t(i) * m * n;
        v.ldc = n;
    }
    v.biasOff = biasPerBatch ? uint64_t(i) * n : 0;
    return v;
}

}  // namespace megafuse_emu
