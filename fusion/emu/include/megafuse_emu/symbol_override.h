// LocalTensor operator overloads (devkit symbol override: `dst = src0 + src1` runs
// Add(dst, src0, src1, dst.GetSize()); likewise -, *, /), with every check of the op they stand
// for. An operator takes no source location, so an error names this header's line.
#pragma once

#include "tensor.h"
#include "vector.h"

namespace AscendC {

template <typename T, char OP>
struct SymbolOverride {
    static constexpr bool kSymbolOverride = true;
    LocalTensor<T> src0, src1;
    void Run(const LocalTensor<T>& dst) const
    {
        const int32_t n = static_cast<int32_t>(dst.GetSize());
        if constexpr (OP == '+') Add(dst, src0, src1, n);
        else if constexpr (OP == '-') Sub(dst, src0, src1, n);
        else if constexpr (OP == '*') Mul(dst, src0, src1, n);
        else Div(dst, src0, src1, n);
    }
};

template <typename T>
SymbolOverride<T, '+'> operator+(const LocalTensor<T>& a, const LocalTensor<T>& b) { return {a, b}; }
template <typename T>
SymbolOverride<T, '-'> operator-(const LocalTensor<T>& a, const LocalTensor<T>& b) { return {a, b}; }
template <typename T>
SymbolOverride<T, '*'> operator*(const LocalTensor<T>& a, const LocalTensor<T>& b) { return {a, b}; }
template <typename T>
SymbolOverride<T, '/'> operator/(const LocalTensor<T>& a, const LocalTensor<T>& b) { return {a, b}; }

}  // namespace AscendC
