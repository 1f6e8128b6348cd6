// A 4:2 structured-sparse B (devkit SparseMatmulType / SetSparseIndex; layout facts from the
// devkit's matmul_sparse sample): B^T is stored dense as n rows of k/2 values (two per group of
// 4 k positions); the index matrix gives, per group, idx1 (place of the first value among the
// group's first three positions) and idx2 (the second one's place among the last three, i.e. at
// 1 + idx2), 2 bits each, four per byte from the low bits; the bytes are NZ in fractals of
// 16 rows x 8 bytes: byte (r, c) at ((c / 8) * alignN + r) * 8 + c % 8.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernel_operator.h"  // included by lib/matmul_intf.h after MatmulType

namespace AscendC {

// B of a 4:2 sparse Matmul (devkit SparseMatmulType): a MatmulType with the position of its
// index matrix (SetSparseIndex).
template <TPosition POSITION, TPosition INDEX_POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false,
          LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false>
struct SparseMatmulType : public MatmulType<POSITION, FORMAT, TYPE, ISTRANS, LAYOUT, IBSHARE> {
    constexpr static TPosition indexPosition = INDEX_POSITION;
    constexpr static bool isSparse = true;
};

template <class T, class = void>
struct IsSparseType : std::false_type {};
template <class T>
struct IsSparseType<T, std::void_t<decltype(T::isSparse)>> : std::bool_constant<T::isSparse> {};

}  // namespace AscendC

namespace megafuse_emu {

// Bytes of the index matrix a k x n block reads (from its first byte).
inline uint64_t SparseIndexSpan(int k, int n, uint64_t alignN)
{
    const int bytesPerRow = (k / 2 + 3) / 4;
    return (uint64_t(bytesPerRow - 1) / 8 * alignN + uint64_t(n - 1)) * 8 + uint64_t(bytesPerRow - 1) % 8 + 1;
}

// bk (k x n, row kk = B[kk][*]) from the dense values b (n rows, ldb apart) and the index bytes.
template <typename Acc, typename B>
void DensifySparseB(std::vector<Acc>& bk, const uint8_t* b, const uint8_t* idx, int k, int n, uint64_t ldb,
                    uint64_t alignN)
{
    std::fill(bk.begin(), bk.end(), Acc(0));
    for (int j = 0; j < n; ++j)
        for (int d = 0; d < k / 2; ++d) {
            const int c = d / 4;
            const uint8_t byte = idx[(uint64_t(c / 8) * alignN + j) * 8 + c % 8];
            const int code = (byte >> (2 * (d % 4))) & 3;
            const int kk = (d / 2) * 4 + (d % 2 == 0 ? code : code + 1);
            bk[size_t(kk) * n + j] = static_cast<Acc>(static_cast<CalcT<B>>(Ld<B>(b, uint64_t(j) * ldb + d)));
        }
}

}  // namespace megafuse_emu
