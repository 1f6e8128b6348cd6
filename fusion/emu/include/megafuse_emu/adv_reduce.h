// Advanced (lib) reductions of the devkit (semantics from its API reference):
//   Sum(dst, src, sharedTmpBuffer, SumParams{outter, inner, n})   dst[i] = sum of src[i*inner .. +n)
//       inner (elements) must keep every row 32-byte aligned and n <= inner.
//   ReduceMax / ReduceMin / ReduceSum<T, Pattern::Reduce::AR|RA, isReuseSource>(dst, src
//       [, sharedTmpBuffer], srcShape[2], srcInnerPad): AR = {a, r} reduced along r (dst[a]),
//       RA = {r, a} reduced along r (dst[a]); with srcInnerPad the inner axis is stored padded
//       to 32 bytes.
//   CumSum<T, CumSumConfig{isLastAxis, isReuseSource, outputLastRow, algorithm}>(dst, lastRow, src,
//       sharedTmpBuffer, CumSumInfo{outter, inner}): running sums down the rows (isLastAxis =
//       false) or along each row (true), added one element at a time in T (the line-by-line
//       order; the binary algorithm's add order is not modelled); lastRow gets the last row.
// Host queries: GetSumMaxMinTmpSize, GetCumSumMaxMinTmpSize, GetReduce{Max,Min,Sum}MaxMinTmpSize (megafuse's model:
// adv_shape.h). Sums accumulate in double and round once to T.
#pragma once

#include "adv_math.h"
#include "vec_reduce.h"

namespace AscendC {

struct SumParams {
    uint32_t outter = 1;
    uint32_t inner = 0;
    uint32_t n = 0;
};

enum class TensorDataType : uint8_t {
    DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6, DT_UINT16 = 7,
    DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_BF16 = 27
};
enum class ReducePattern : uint8_t { AR = 0, RA };

namespace Pattern {
namespace Reduce {
struct AR {};
struct RA {};
}  // namespace Reduce
}  // namespace Pattern

inline void GetSumMaxMinTmpSize(const uint32_t n, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(n, typeSize, 1, maxValue, minValue);
}

inline uint32_t TensorDataTypeSize(TensorDataType t)
{
    switch (t) {
        case TensorDataType::DT_FLOAT: case TensorDataType::DT_INT32: case TensorDataType::DT_UINT32: return 4;
        case TensorDataType::DT_INT8: case TensorDataType::DT_UINT8: return 1;
        case TensorDataType::DT_INT64: case TensorDataType::DT_UINT64: return 8;
        default: return 2;
    }
}

#define MEGAFUSE_EMU_REDUCE_QUERY(NAME)                                                                          \
    inline void Get##NAME##MaxMinTmpSize(const TensorShape& srcShape, const TensorDataType dataType,             \
                                         const ReducePattern, const bool, const bool, uint32_t& maxValue,        \
                                         uint32_t& minValue)                                                     \
    {                                                                                                            \
        megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(srcShape.GetShapeSize()), TensorDataTypeSize(dataType), \
                                  1, maxValue, minValue);                                                        \
    }
MEGAFUSE_EMU_REDUCE_QUERY(ReduceMax)
MEGAFUSE_EMU_REDUCE_QUERY(ReduceMin)
MEGAFUSE_EMU_REDUCE_QUERY(ReduceSum)
#undef MEGAFUSE_EMU_REDUCE_QUERY

}  // namespace AscendC

namespace megafuse_emu {

// rows x n elements, row pitch `pitch`, reduced per row (along=1) or per column (along=0).
template <typename T>
void ReduceRowsCols(const char* api, AscendC::ReduceType type, const AscendC::LocalTensor<T>& dst,
                    const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<uint8_t>* tmp, uint64_t rows,
                    uint64_t cols, uint64_t pitch, bool along_rows, const Loc& loc)
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "takes half or float");
    Core(loc);
    AdvNoOverlap(api, dst.ref_, src.ref_, "src", loc);
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&dst.ref_, &src.ref_}, loc);
    if (rows == 0 || cols == 0) Fail(loc, Str(api, ": empty shape"));
    const uint64_t outs = along_rows ? rows : cols, inner = along_rows ? cols : rows;
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, os{&src.ref_, sizeof(T), 1, 8, "src"};
    uint8_t* db = VecOperand(od, outs, api, loc);
    const uint8_t* sb = VecOperand(os, (rows - 1) * pitch + cols, api, loc);
    for (uint64_t o = 0; o < outs; ++o) {
        ReduceResult res = ReduceLanes(type, inner, [&](uint64_t k, double& x, uint8_t& st) {
            const uint64_t i = along_rows ? o * pitch + k : k * pitch + o;
            x = static_cast<double>(LdChecked<T>(sb, i, st, api, "src", loc));
            return true;
        });
        St<T>(db, o, static_cast<T>(static_cast<CalcT<T>>(res.value)));
        SetState(db + o * sizeof(T), sizeof(T), res.st);
    }
    CountVector(rows * cols * sizeof(T), false);
}

template <typename T, typename P>
void AdvReduce(const char* api, AscendC::ReduceType type, const AscendC::LocalTensor<T>& dst,
               const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<uint8_t>* tmp, const uint32_t shape[],
               bool srcInnerPad, const Loc& loc)
{
    const uint64_t outer = shape[0], inner = shape[1];
    const uint64_t e = 32 / sizeof(T), pitch = srcInnerPad ? (inner + e - 1) / e * e : inner;
    ReduceRowsCols(api, type, dst, src, tmp, outer, inner, pitch, std::is_same_v<P, AscendC::Pattern::Reduce::AR>, loc);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T, bool isReuseSource = false, bool isBasicBlock = false>
void Sum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
         const SumParams& p, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    if (p.n > p.inner)
        megafuse_emu::Fail(loc, megafuse_emu::Str("Sum: n ", p.n, " exceeds inner ", p.inner));
    if ((static_cast<uint64_t>(p.inner) * sizeof(T)) % 32 != 0)
        megafuse_emu::Fail(loc, megafuse_emu::Str("Sum: inner ", p.inner, " * sizeof(T) is not a multiple of 32 bytes"));
    megafuse_emu::ReduceRowsCols("Sum", ReduceType::SUM, dst, src, &sharedTmpBuffer, p.outter, p.n, p.inner, true, loc);
}

enum class CumSumAlgorithm : uint8_t { LINE_BY_LINE = 0, BINARY };
struct CumSumConfig {
    bool isLastAxis = true;
    bool isReuseSource = false;
    bool outputLastRow = false;
    CumSumAlgorithm algorithm = CumSumAlgorithm::LINE_BY_LINE;
};
struct CumSumInfo {
    uint32_t outter = 0;
    uint32_t inner = 0;
};

inline void GetCumSumMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const bool, const bool,
                                   uint32_t& maxValue, uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 1, maxValue, minValue);
}

inline constexpr CumSumConfig kDefaultCumSumConfig{};

template <typename T, const CumSumConfig& config = kDefaultCumSumConfig>
void CumSum(const LocalTensor<T>& dst, const LocalTensor<T>& lastRow, const LocalTensor<T>& src,
            const LocalTensor<uint8_t>& sharedTmpBuffer, const CumSumInfo& info,
            megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "CumSum takes half or float");
    using namespace megafuse_emu;
    const char* api = "CumSum";
    Core(loc);
    AdvCheckTmp(api, sharedTmpBuffer.ref_, 1, {&dst.ref_, &src.ref_, &lastRow.ref_}, loc);
    const uint64_t rows = info.outter, cols = info.inner;
    if ((cols * sizeof(T)) % 32 != 0) Fail(loc, Str(api, ": inner ", cols, " is not 32-byte aligned"));
    if (rows == 0 || cols == 0) return;
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, os{&src.ref_, sizeof(T), 1, 8, "src"};
    uint8_t* db = VecOperand(od, rows * cols, api, loc);
    const uint8_t* sb = VecOperand(os, rows * cols, api, loc);
    const bool along_rows = config.isLastAxis;
    const uint64_t outs = along_rows ? rows : cols, len = along_rows ? cols : rows;
    for (uint64_t o = 0; o < outs; ++o) {
        CalcT<T> acc = 0;
        uint8_t st = kWritten;
        for (uint64_t k = 0; k < len; ++k) {
            const uint64_t i = along_rows ? o * cols + k : k * cols + o;
            acc = static_cast<CalcT<T>>(static_cast<T>(acc + LdChecked<T>(sb, i, st, api, "src", loc)));
            St<T>(db, i, static_cast<T>(acc));
            SetState(db + i * sizeof(T), sizeof(T), st);
        }
    }
    if (config.outputLastRow) {
        Operand ol{&lastRow.ref_, sizeof(T), 1, 8, "lastRow"};
        uint8_t* lb = VecOperand(ol, cols, api, loc);
        std::memcpy(lb, db + (rows - 1) * cols * sizeof(T), cols * sizeof(T));
        PropagateCopy(lb, db + (rows - 1) * cols * sizeof(T), cols * sizeof(T), api, "lastRow", loc);
    }
    CountVector(rows * cols * sizeof(T), false);
}

#define MEGAFUSE_EMU_ADV_REDUCE(NAME, TYPE)                                                                      \
    template <typename T, class pattern, bool isReuseSource = false>                                             \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
              const uint32_t srcShape[], bool srcInnerPad, megafuse_emu::Loc loc = megafuse_emu::Loc::current()) \
    {                                                                                                            \
        megafuse_emu::AdvReduce<T, pattern>(#NAME, TYPE, dst, src, &sharedTmpBuffer, srcShape, srcInnerPad, loc); \
    }                                                                                                            \
    template <typename T, class pattern, bool isReuseSource = false>                                             \
    void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t srcShape[], bool srcInnerPad, \
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())                                              \
    {                                                                                                            \
        megafuse_emu::AdvReduce<T, pattern>(#NAME, TYPE, dst, src, nullptr, srcShape, srcInnerPad, loc);         \
    }
MEGAFUSE_EMU_ADV_REDUCE(ReduceMax, ReduceType::MAX)
MEGAFUSE_EMU_ADV_REDUCE(ReduceMin, ReduceType::MIN)
MEGAFUSE_EMU_ADV_REDUCE(ReduceSum, ReduceType::SUM)
#undef MEGAFUSE_EMU_ADV_REDUCE

}  // namespace AscendC
