// The user copy callbacks of MatmulCallBackFunc (devkit MatmulCallBackFunc page): CopyA1 /
// CopyB1 load one block of A / B from GM into L1 themselves. The rows x cols operand is cut
// into blocks of tileR x tileC (baseM * stepM x baseK * stepKa for A, baseK * stepKb x
// baseN * stepN for B); for block (r, c) the callback gets an L1 buffer, the operand's GM
// address, the block indices and valid sizes, and the SetUserDefInfo / SetSelfDefineData
// values, and must leave the block in L1 as NZ (C0-wide column blocks of the row count rounded
// up to 16, as DataCopy with Nd2NzParams writes it). What it left there is read back (checked
// like any L1 access) into a row-major copy of the operand.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_operator.h"

namespace megafuse_emu {

template <typename T, AscendC::TPosition POS, typename F>
std::vector<uint8_t> CopyThroughL1(F fn, AscendC::TPipe& pipe, AscendC::TBuf<POS>& buf, bool& ready, int rows, int cols,
                                   int tileR, int tileC, const __gm__ T* gm, uint64_t userDefInfo,
                                   uint64_t selfDefineData, const Loc& loc)
{
    constexpr int c0 = static_cast<int>(32 / sizeof(T));
    const int aR = (tileR + 15) / 16 * 16, aC = (tileC + c0 - 1) / c0 * c0;
    if (!ready) {
        pipe.InitBuffer(buf, static_cast<uint32_t>(aR * aC * sizeof(T)), loc);
        ready = true;
    }
    std::vector<uint8_t> out(size_t(rows) * cols * sizeof(T));
    for (int r = 0; r * tileR < rows; ++r)
        for (int c = 0; c * tileC < cols; ++c) {
            const int useR = std::min(tileR, rows - r * tileR), useC = std::min(tileC, cols - c * tileC);
            AscendC::LocalTensor<T> l1 = buf.template Get<T>();
            fn(l1.template ReinterpretCast<int8_t>(), reinterpret_cast<const __gm__ void*>(gm), r, c, useR, useC,
               userDefInfo, selfDefineData);
            const int alignR = (useR + 15) / 16 * 16;
            const uint8_t* p = LocalAccess(l1.ref_, sizeof(T), 0, uint64_t(aR) * aC,
                                           "Matmul (CopyA1/CopyB1 result in L1)", "L1", loc);
            for (int i = 0; i < useR; ++i)
                for (int j = 0; j < useC; ++j)
                    std::memcpy(&out[(size_t(r * tileR + i) * cols + c * tileC + j) * sizeof(T)],
                                p + ((size_t(j / c0) * alignR + i) * c0 + j % c0) * sizeof(T), sizeof(T));
        }
    return out;
}

}  // namespace megafuse_emu
