// The advanced Transpose (ConfusionTranspose) of the devkit (its Transpose page, scenarios 1, 2, 7):
//   Transpose(dst, src, [tmp,] TransposeType, ConfusionTransposeTiling), 16-bit and 32-bit types,
//   the shape from the tiling (GetTransposeTilingInfo(srcShape, stack, typeSize, transposeTypeIn)):
//   TRANSPOSE_NZ2ND_0213 (1): src NZ [B, N, H/N/16, S/16, 16, 16] (origin [B, N, S, H/N]) ->
//       dst ND [B, S, N, H/N]; srcShape {B, N, S, H/N}, S and H/N multiples of 16.
//   TRANSPOSE_NZ2NZ_0213 (2): the same source -> dst NZ [B, S, H/N/16, N/16, 16, 16] (origin
//       [B, S, N, H/N]); N a multiple of 16 too.
//   TRANSPOSE_ND2ND_ONLY (7): a 2-D [H, W] tensor (the last two dims of srcShape) transposed,
//       H and W multiples of 16.
// In an NZ [R, C] matrix, element (r, c) is at ((c / 16) * (R / 16) + r / 16) * 256 + (r % 16) * 16 + c % 16.
// The other scenarios are not emulated (refused at the call); the tiling must be made for the
// type of the call. The tiling struct is megafuse's own (one struct for host and kernel); tmp sizes:
// adv_shape.h's model.
#pragma once

#include "adv_softmax_ext.h"  // SmOperand
#include "vec_transpose.h"     // TransposeType

struct ConfusionTransposeTiling {
    uint32_t transposeType = 0, b = 0, n = 0, s = 0, hnDiv = 0, stackBufferSize = 0, typeSize = 0, reserved = 0;
};
namespace optiling {
using ::ConfusionTransposeTiling;
}
namespace AscendC::tiling {
using ::ConfusionTransposeTiling;
}

namespace AscendC {

// TransposeType: megafuse_emu/vec_transpose.h (the basic Transpose shares it)
inline void GetTransposeMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const uint32_t,
                                      uint32_t& maxValue, uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 2, maxValue, minValue);
}
inline void GetConfusionTransposeMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, const uint32_t t,
                                               uint32_t& maxValue, uint32_t& minValue)
{
    GetTransposeMaxMinTmpSize(s, typeSize, t, maxValue, minValue);
}
inline void GetTransposeTilingInfo(const TensorShape& s, const uint32_t stackBufferSize, const uint32_t typeSize,
                                   const uint32_t transposeTypeIn, ConfusionTransposeTiling& t)
{
    t = ConfusionTransposeTiling{};
    t.transposeType = transposeTypeIn;
    t.stackBufferSize = stackBufferSize;
    t.typeSize = typeSize;
    const size_t d = s.GetDimNum();
    if (transposeTypeIn == 7 && d >= 2) {
        t.s = static_cast<uint32_t>(s.GetDim(d - 2));
        t.hnDiv = static_cast<uint32_t>(s.GetDim(d - 1));
        t.b = t.n = 1;
    } else if (d == 4) {
        t.b = static_cast<uint32_t>(s.GetDim(0));
        t.n = static_cast<uint32_t>(s.GetDim(1));
        t.s = static_cast<uint32_t>(s.GetDim(2));
        t.hnDiv = static_cast<uint32_t>(s.GetDim(3));
    }
}
inline void GetConfusionTransposeTilingInfo(const TensorShape& s, const uint32_t stackBufferSize,
                                            const uint32_t typeSize, const uint32_t transposeTypeIn,
                                            ConfusionTransposeTiling& t)
{
    GetTransposeTilingInfo(s, stackBufferSize, typeSize, transposeTypeIn, t);
}
inline void GetConfusionTransposeOnlyTilingInfo(const TensorShape& s, const uint32_t stackBufferSize,
                                                const uint32_t typeSize, ConfusionTransposeTiling& t)
{
    GetTransposeTilingInfo(s, stackBufferSize, typeSize, 7, t);
}

}  // namespace AscendC

namespace megafuse_emu {

inline uint64_t NzIndex(uint64_t r, uint64_t c, uint64_t rows)
{
    return ((c / 16) * (rows / 16) + r / 16) * 256 + (r % 16) * 16 + c % 16;
}

template <typename T>
void ConfusionTransposeImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                            const AscendC::LocalTensor<uint8_t>* tmp, AscendC::TransposeType type,
                            const ConfusionTransposeTiling& t, const Loc& loc)
{
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Transpose takes 16- or 32-bit types");
    const char* api = "Transpose";
    Core(loc);
    const uint32_t ty = static_cast<uint32_t>(type);
    if (ty != 1 && ty != 2 && ty != 7)
        Fail(loc, Str(api, ": TransposeType ", ty, " is not emulated (scenarios 1, 2 and 7 are)"));
    if (t.transposeType != ty)
        Fail(loc, Str(api, ": the tiling was made for transposeTypeIn ", t.transposeType, ", the call uses ", ty));
    if (t.typeSize != 0 && t.typeSize != sizeof(T))
        Fail(loc, Str(api, ": the tiling was made for ", t.typeSize, "-byte data, the tensors hold ", sizeof(T)));
    const uint64_t B = t.b, N = t.n, S = t.s, HN = t.hnDiv;
    if (B == 0 || N == 0 || S == 0 || HN == 0 || S % 16 != 0 || HN % 16 != 0 || (ty == 2 && N % 16 != 0))
        Fail(loc, Str(api, ": shape {B ", B, ", N ", N, ", S ", S, ", H/N ", HN, "} of the tiling is not valid for "
                           "scenario ", ty, " (S and H/N multiples of 16", ty == 2 ? ", N too" : "", ")"));
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 2, {&dst.ref_, &src.ref_}, loc);
    AdvNoOverlap(api, dst.ref_, src.ref_, "src", loc);
    const uint64_t total = B * N * S * HN;
    const uint8_t* sb = SmOperand(src, total, api, "src", loc);
    uint8_t* db = SmOperand(dst, total, api, "dst", loc);
    auto move = [&](uint64_t from, uint64_t to) {
        uint8_t st = kWritten;
        St<T>(db, to, static_cast<T>(LdChecked<T>(sb, from, st, api, "src", loc)));
        SetState(db + to * sizeof(T), sizeof(T), st);
    };
    if (ty == 7) {  // [S, HN] -> [HN, S]
        for (uint64_t r = 0; r < S; ++r)
            for (uint64_t c = 0; c < HN; ++c) move(r * HN + c, c * S + r);
    } else {
        for (uint64_t b = 0; b < B; ++b)
            for (uint64_t n = 0; n < N; ++n)
                for (uint64_t s = 0; s < S; ++s)
                    for (uint64_t h = 0; h < HN; ++h) {
                        const uint64_t from = (b * N + n) * S * HN + NzIndex(s, h, S);
                        const uint64_t to = ty == 1 ? ((b * S + s) * N + n) * HN + h : (b * S + s) * N * HN + NzIndex(n, h, N);
                        move(from, to);
                    }
    }
    CountVector(total * sizeof(T) * 2, false);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T>
void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
               TransposeType transposeType, ConfusionTransposeTiling& tiling,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::ConfusionTransposeImpl(dst, src, &sharedTmpBuffer, transposeType, tiling, loc);
}
template <typename T>
void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, TransposeType transposeType,
               ConfusionTransposeTiling& tiling, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::ConfusionTransposeImpl(dst, src, static_cast<const LocalTensor<uint8_t>*>(nullptr), transposeType,
                                         tiling, loc);
}

}  // namespace AscendC
