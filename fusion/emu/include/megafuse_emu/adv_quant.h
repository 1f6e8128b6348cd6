// Quantisation advanced APIs of arch 2201 (semantics from the devkit's API reference):
//   AscendQuant<T>(dst int8, src, [sharedTmpBuffer,] scale, offset, calCount)  per tensor:
//       dst = saturate_int8(rint(half(src * scale + offset)))
//   AscendDequant(dst, src int32, deqScale, DequantParams{m, n, calCount})  per channel:
//       dst[i][j] = src[i][j] * deqScale[j], j < calCount of each n-element row; scalar deqScale too
//   AscendAntiQuant<In, Out, isTranspose>(dst, src, offset, scale, sharedTmpBuffer, K)  per channel,
//       not transposed: src [K, N]; offset / scale [G, N] (G from the offset's ShapeInfo, else 1):
//       dst[i][j] = scale[i / (K / G)][j] * (src[i][j] + offset[i / (K / G)][j]).
//       Quant / Dequant lanes compute in float and round once; AntiQuant
//       rounds after the add and after the multiply (two vector ops in the output type).
#pragma once

#include "adv_reduce.h"

namespace AscendC {

struct DequantParams {
    uint32_t m = 0;
    uint32_t n = 0;
    uint32_t calCount = 0;
};

inline void GetAscendQuantMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, uint32_t& maxValue,
                                        uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 1, maxValue, minValue);
}
inline void GetAscendDequantMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, uint32_t& maxValue,
                                          uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 1, maxValue, minValue);
}
inline void GetAscendAntiQuantMaxMinTmpSize(const TensorShape& srcShape, const TensorShape&, bool,
                                            TensorDataType, TensorDataType outType, uint32_t& maxValue,
                                            uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(srcShape.GetShapeSize()), TensorDataTypeSize(outType), 1,
                              maxValue, minValue);
}

}  // namespace AscendC

namespace megafuse_emu {

template <typename T>
void QuantImpl(const AscendC::LocalTensor<int8_t>& dst, const AscendC::LocalTensor<T>& src,
               const AscendC::LocalTensor<uint8_t>* tmp, float scale, float offset, int64_t count, const Loc& loc)
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "AscendQuant takes half or float");
    Core(loc);
    if (tmp != nullptr) AdvCheckTmp("AscendQuant", tmp->ref_, 1, {&dst.ref_, &src.ref_}, loc);
    RunCount<2>("AscendQuant", {Op(dst, "dst"), Op(src, "src")}, count,
                UnaryLane<int8_t, T>([scale, offset](T x) {
                    const half h = static_cast<half>(static_cast<float>(x) * scale + offset);
                    return RoundToInt<int8_t>(static_cast<float>(h), AscendC::RoundMode::CAST_RINT);
                }),
                loc);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T, bool isReuseSource = false>
void AscendQuant(const LocalTensor<int8_t>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                 const float scale, const float offset, const uint32_t calCount,
                 megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::QuantImpl(dst, src, &sharedTmpBuffer, scale, offset, calCount, loc);
}
template <typename T, bool isReuseSource = false>
void AscendQuant(const LocalTensor<int8_t>& dst, const LocalTensor<T>& src, const float scale, const float offset,
                 const uint32_t calCount, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::QuantImpl(dst, src, static_cast<const LocalTensor<uint8_t>*>(nullptr), scale, offset, calCount, loc);
}
template <typename T, bool isReuseSource = false>
void AscendQuant(const LocalTensor<int8_t>& dst, const LocalTensor<T>& src, const float scale, const float offset,
                 megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::QuantImpl(dst, src, static_cast<const LocalTensor<uint8_t>*>(nullptr), scale, offset, src.GetSize(), loc);
}

// AscendDequant, per-channel tensor scale.
template <typename D, typename S>
void AscendDequant(const LocalTensor<D>& dst, const LocalTensor<int32_t>& src, const LocalTensor<S>& deqScale,
                   DequantParams p, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<D, half> || std::is_same_v<D, float> || std::is_same_v<D, bfloat16_t>,
                  "AscendDequant: dst is half, float or bfloat16_t");
    using namespace megafuse_emu;
    const char* api = "AscendDequant";
    Core(loc);
    if (p.calCount > p.n) Fail(loc, Str(api, ": calCount ", p.calCount, " exceeds n ", p.n));
    if ((static_cast<uint64_t>(p.n) * sizeof(int32_t)) % 32 != 0)
        Fail(loc, Str(api, ": n ", p.n, " int32 elements per row are not 32-byte aligned"));
    if (p.m == 0 || p.calCount == 0) return;
    Operand od{&dst.ref_, sizeof(D), 1, 8, "dst"}, os{&src.ref_, 4, 1, 8, "src"}, oc{&deqScale.ref_, sizeof(S), 1, 8, "deqScale"};
    uint8_t* db = VecOperand(od, static_cast<uint64_t>(p.m) * p.n, api, loc);
    const uint8_t* sb = VecOperand(os, static_cast<uint64_t>(p.m) * p.n, api, loc);
    const uint8_t* cb = VecOperand(oc, p.calCount, api, loc);
    for (uint64_t i = 0; i < p.m; ++i)
        for (uint64_t j = 0; j < p.calCount; ++j) {
            uint8_t st = kWritten;
            const double x = static_cast<double>(LdChecked<int32_t>(sb, i * p.n + j, st, api, "src", loc));
            const double c = static_cast<double>(LdChecked<S>(cb, j, st, api, "deqScale", loc));
            St<D>(db, i * p.n + j, static_cast<D>(static_cast<float>(x * c)));
            SetState(db + (i * p.n + j) * sizeof(D), sizeof(D), st);
        }
    CountVector(static_cast<uint64_t>(p.m) * p.n * 4, false);
}
// Per-tensor scalar scale.
template <typename D>
void AscendDequant(const LocalTensor<D>& dst, const LocalTensor<int32_t>& src, const float deqScale, DequantParams p,
                   megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    if (p.calCount > p.n) Fail(loc, Str("AscendDequant: calCount ", p.calCount, " exceeds n ", p.n));
    for (uint32_t i = 0; i < p.m; ++i)
        RunCount<2>("AscendDequant", {Op(dst[i * p.n], "dst"), Op(src[i * p.n], "src")}, p.calCount,
                    UnaryLane<D, int32_t>([deqScale](int32_t x) { return static_cast<D>(static_cast<float>(x) * deqScale); }),
                    loc);
}

template <typename In, typename Out, bool isTranspose>
void AscendAntiQuant(const LocalTensor<Out>& dst, const LocalTensor<In>& src, const LocalTensor<Out>& offset,
                     const LocalTensor<Out>& scale, const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t K,
                     megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<In, int8_t>, "AscendAntiQuant is emulated for int8_t input");
    static_assert(!isTranspose, "AscendAntiQuant with isTranspose = true is not emulated");
    using namespace megafuse_emu;
    const char* api = "AscendAntiQuant";
    Core(loc);
    AdvCheckTmp(api, sharedTmpBuffer.ref_, 1, {&dst.ref_, &src.ref_, &offset.ref_, &scale.ref_}, loc);
    if (K == 0 || src.GetSize() % K != 0)
        Fail(loc, Str(api, ": K ", K, " does not divide the ", src.GetSize(), " source elements"));
    const uint64_t n = src.GetSize() / K;
    const ShapeInfo si = offset.GetShapeInfo();
    const uint64_t groups = si.shapeDim == 2 ? si.shape[0] : 1;
    if (groups == 0 || K % groups != 0) Fail(loc, Str(api, ": offset rows ", groups, " do not divide K ", K));
    const uint64_t gsize = K / groups;
    Operand od{&dst.ref_, sizeof(Out), 1, 8, "dst"}, os{&src.ref_, 1, 1, 8, "src"}, oo{&offset.ref_, sizeof(Out), 1, 8, "offset"},
        oc{&scale.ref_, sizeof(Out), 1, 8, "scale"};
    uint8_t* db = VecOperand(od, K * n, api, loc);
    const uint8_t* sb = VecOperand(os, K * n, api, loc);
    const uint8_t* ob = VecOperand(oo, groups * n, api, loc);
    const uint8_t* cb = VecOperand(oc, groups * n, api, loc);
    for (uint64_t i = 0; i < K; ++i)
        for (uint64_t j = 0; j < n; ++j) {
            uint8_t st = kWritten;
            const uint64_t g = (i / gsize) * n + j;
            const float x = static_cast<float>(LdChecked<In>(sb, i * n + j, st, api, "src", loc));
            const float o = static_cast<float>(LdChecked<Out>(ob, g, st, api, "offset", loc));
            const float c = static_cast<float>(LdChecked<Out>(cb, g, st, api, "scale", loc));
            // two vector ops in Out precision: (src + offset) rounds to Out, then * scale
            const float t = static_cast<float>(static_cast<Out>(x + o));
            St<Out>(db, i * n + j, static_cast<Out>(c * t));
            SetState(db + (i * n + j) * sizeof(Out), sizeof(Out), st);
        }
    CountVector(K * n * sizeof(Out), false);
}

}  // namespace AscendC
