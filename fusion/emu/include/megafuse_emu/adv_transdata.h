// Layout (the devkit's 辅助数据结构 Layout pages: Shape / Stride are Std::tuple aliases,
// MakeShape / MakeStride / MakeLayout pack them, GetShape / GetStride / layout read them back) and
// the advanced TransData (its page), 16-bit types, C0 = N0 = 16:
//   TransData<TransDataConfig{src, dst}>(dst, src, [tmp,] TransDataParams<SrcLayout, DstLayout>{src, dst})
//   NCDHW [N, C, D, H, W]   <->  NDC1HWC0 [N, D, C1, H, W, C0]
//   NCDHW [N, C, D, H, W]   <->  FRACTAL_Z_3D [D, C1, H, W, N1, N0, C0]
// The layouts carry the original shapes (only their shapes are read). An NCDHW tensor holds each
// (n, c, d) row's H * W values padded to 32 bytes (the page: the caller pads an NCDHW input, the
// API pads an NCDHW output); the padding is not read, and not written on output ("invalid data").
// The C (and N) padding of NDC1HWC0 / FRACTAL_Z_3D is written as 0 on output and not read on input.
// The layouts' shapes must match the formats (their dimension count, C1 = ceil(C / 16), ...).
#pragma once

#include "adv_softmax_ext.h"  // SmOperand
#include "adv_std.h"
#include "coord_layout.h"

namespace AscendC {

// Shape, Stride, Layout, MakeShape / MakeStride / MakeLayout, is_layout: megafuse_emu/coord_layout.h

struct TransDataConfig {
    DataFormat srcFormat;
    DataFormat dstFormat;
};
template <typename T, typename U>
struct TransDataParams {
    T srcLayout;
    U dstLayout;
};

inline void GetTransDataMaxMinTmpSize(const TensorShape& s, const uint32_t typeSize, uint32_t& maxValue,
                                      uint32_t& minValue)
{
    megafuse_emu::AdvTmpSizes(static_cast<uint64_t>(s.GetShapeSize()), typeSize, 2, maxValue, minValue);
}

}  // namespace AscendC

namespace megafuse_emu {

template <typename Tuple>
std::vector<int64_t> ShapeDims(const Tuple& t)
{
    std::vector<int64_t> d;
    std::apply([&](const auto&... v) { (d.push_back(static_cast<int64_t>(v)), ...); }, t);
    return d;
}

inline const char* FormatName(AscendC::DataFormat f)
{
    switch (f) {
        case AscendC::DataFormat::NCDHW: return "NCDHW";
        case AscendC::DataFormat::NDC1HWC0: return "NDC1HWC0";
        case AscendC::DataFormat::FRACTAL_Z_3D: return "FRACTAL_Z_3D";
        default: return "another format";
    }
}

// The NCDHW dims [N, C, D, H, W] of the other side's shape, checked against the format.
inline std::vector<int64_t> NcdhwOf(const char* api, AscendC::DataFormat f, const std::vector<int64_t>& s,
                                    const Loc& loc)
{
    const auto bad = [&] { Fail(loc, Str(api, ": the layout's shape of ", s.size(), " dims does not fit ", FormatName(f))); };
    if (f == AscendC::DataFormat::NCDHW) {
        if (s.size() != 5) bad();
        return s;
    }
    if (f == AscendC::DataFormat::NDC1HWC0) {  // N D C1 H W C0: C is not recoverable beyond C1 * C0
        if (s.size() != 6 || s[5] != 16) bad();
        return {s[0], s[2] * 16, s[1], s[3], s[4]};
    }
    if (s.size() != 7 || s[5] != 16 || s[6] != 16) bad();  // D C1 H W N1 N0 C0
    return {s[4] * 16, s[1] * 16, s[0], s[2], s[3]};
}

template <typename T, typename SL, typename DL>
void TransDataImpl(AscendC::DataFormat sf, AscendC::DataFormat df, const AscendC::LocalTensor<T>& dst,
                   const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<uint8_t>* tmp,
                   const AscendC::TransDataParams<SL, DL>& p, const Loc& loc)
{
    static_assert(sizeof(T) == 2, "TransData takes int16_t, uint16_t, half or bfloat16_t");
    const char* api = "TransData";
    using F = AscendC::DataFormat;
    Core(loc);
    const bool toNcdhw = df == F::NCDHW;
    const F other = toNcdhw ? sf : df;
    if ((sf != F::NCDHW && df != F::NCDHW) || (other != F::NDC1HWC0 && other != F::FRACTAL_Z_3D))
        Fail(loc, Str(api, ": ", FormatName(sf), " -> ", FormatName(df), " is not one of the four conversions"));
    const std::vector<int64_t> sd = ShapeDims(p.srcLayout.GetShape()), dd = ShapeDims(p.dstLayout.GetShape());
    const std::vector<int64_t>& ns = toNcdhw ? dd : sd;
    const std::vector<int64_t>& os = toNcdhw ? sd : dd;
    if (ns.size() != 5) Fail(loc, Str(api, ": the NCDHW layout's shape has ", ns.size(), " dims, not 5"));
    const int64_t N = ns[0], C = ns[1], D = ns[2], H = ns[3], W = ns[4];
    if (N <= 0 || C <= 0 || D <= 0 || H <= 0 || W <= 0) Fail(loc, Str(api, ": the NCDHW shape has a zero dim"));
    const int64_t C1 = (C + 15) / 16, N1 = (N + 15) / 16, HW = H * W, HWP = (HW + 15) / 16 * 16;
    const std::vector<int64_t> want = NcdhwOf(api, other, os, loc);
    const bool fz = other == F::FRACTAL_Z_3D;
    if (want[1] != C1 * 16 || want[2] != D || want[3] != H || want[4] != W || (fz ? want[0] != N1 * 16 : want[0] != N))
        Fail(loc, Str(api, ": the ", FormatName(other), " layout's shape does not match NCDHW [", N, ", ", C, ", ", D,
                      ", ", H, ", ", W, "]"));
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 2, {&dst.ref_, &src.ref_}, loc);
    AdvNoOverlap(api, dst.ref_, src.ref_, "src", loc);
    const uint64_t ncdhwElems = static_cast<uint64_t>(N * C * D * HWP);
    const uint64_t otherElems = static_cast<uint64_t>(fz ? D * C1 * HW * N1 * 256 : N * D * C1 * HW * 16);
    const uint8_t* sb = SmOperand(src, toNcdhw ? otherElems : ncdhwElems, api, "src", loc);
    uint8_t* db = SmOperand(dst, toNcdhw ? ncdhwElems : otherElems, api, "dst", loc);
    // index of (n, c, d, hw) in the other format
    auto at = [&](int64_t n, int64_t c, int64_t d, int64_t hw) -> uint64_t {
        if (fz) return ((((d * C1 + c / 16) * HW + hw) * N1 + n / 16) * 16 + n % 16) * 16 + c % 16;
        return (((n * D + d) * C1 + c / 16) * HW + hw) * 16 + c % 16;
    };
    auto rowAt = [&](int64_t n, int64_t c, int64_t d, int64_t hw) -> uint64_t { return ((n * C + c) * D + d) * HWP + hw; };
    if (toNcdhw) {
        for (int64_t n = 0; n < N; ++n)
            for (int64_t c = 0; c < C; ++c)
                for (int64_t d = 0; d < D; ++d)
                    for (int64_t hw = 0; hw < HW; ++hw) {
                        uint8_t st = kWritten;
                        const uint64_t to = rowAt(n, c, d, hw);
                        St<T>(db, to, static_cast<T>(LdChecked<T>(sb, at(n, c, d, hw), st, api, "src", loc)));
                        SetState(db + to * 2, 2, st);
                    }
    } else {
        const int64_t NP = fz ? N1 * 16 : N;
        for (int64_t n = 0; n < NP; ++n)
            for (int64_t c = 0; c < C1 * 16; ++c)
                for (int64_t d = 0; d < D; ++d)
                    for (int64_t hw = 0; hw < HW; ++hw) {
                        uint8_t st = kWritten;
                        T v{};
                        if (n < N && c < C) v = static_cast<T>(LdChecked<T>(sb, rowAt(n, c, d, hw), st, api, "src", loc));
                        else std::memset(&v, 0, sizeof(T));
                        const uint64_t to = at(n, c, d, hw);
                        St<T>(db, to, v);
                        SetState(db + to * 2, 2, st);
                    }
    }
    CountVector(otherElems * 2 * 2, false);
}

}  // namespace megafuse_emu

namespace AscendC {

template <const TransDataConfig& config, typename T, typename U, typename S>
void TransData(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
               const LocalTensor<uint8_t>& sharedTmpBuffer, const TransDataParams<U, S>& params,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::TransDataImpl(config.srcFormat, config.dstFormat, dstTensor, srcTensor, &sharedTmpBuffer, params, loc);
}
template <const TransDataConfig& config, typename T, typename U, typename S>
void TransData(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const TransDataParams<U, S>& params,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::TransDataImpl(config.srcFormat, config.dstFormat, dstTensor, srcTensor,
                                static_cast<const LocalTensor<uint8_t>*>(nullptr), params, loc);
}

}  // namespace AscendC
