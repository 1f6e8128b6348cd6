// Cube-side additions of the devkit API (constants and parameter structs) used by the matrix
// samples. Facts from the devkit reference pages named at each item.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cube.h"

namespace AscendC {

// The C0 block of the cube data paths in bytes (32 B; DataCopyParams' block units).
constexpr uint32_t DEFAULT_C0_SIZE = 32;

// LoadData (卷积数据搬运) v2 (devkit LoadData_3D page, table 4): img2col from a feature map in
// L1 (A1 / B1, NC1HWC0: C0 = 32 B of channels, then W, then H, then C1) into L0A / L0B. The
// img2col matrix has one row per output position (row r: oh = r / Wo, ow = r % Wo, Wo = (W +
// padL + padR - dilW (filterW - 1) - 1) / strideW + 1) and one column per (c1, kh, kw, c0) in
// that nesting order; positions in the padding read padValue. Rows [mStartPt, +mExtension) x
// columns [kStartPt, +kExtension) are written:
//   * into L0A as A (m = row, k = column) in its 16 x C0 fractals, or with enTranspose (A2 and
//     16- and 32-bit types) as A (m = column, k = row);
//   * into L0B as B (k = row, n = column) in its fractal layout (the L1 -> L0B path always
//     transposes; enTranspose has no effect there).
// l1H / l1W / channelSize / kExtension / mExtension = 0 make it a NOP (documented).
template <typename T>
struct LoadData3DParamsV2 {
    uint8_t padList[4] = {0, 0, 0, 0};
    uint16_t l1H = 0;
    uint16_t l1W = 0;
    uint16_t channelSize = 0;
    uint16_t kExtension = 0;
    uint16_t mExtension = 0;
    uint16_t kStartPt = 0;
    uint16_t mStartPt = 0;
    uint8_t strideW = 1;
    uint8_t strideH = 1;
    uint8_t filterW = 1;
    uint8_t filterH = 1;
    uint8_t dilationFilterW = 1;
    uint8_t dilationFilterH = 1;
    bool enTranspose = false;
    bool enSmallK = false;
    T padValue = 0;
    bool filterSizeW = false;
    bool filterSizeH = false;
    bool fMatrixCtrl = false;
};

template <typename T, typename U = T>
void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData3DParamsV2<U>& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    static_assert(std::is_same_v<T, U>, "LoadData3DParamsV2<U>: U must be the tensors' type");
    const char* api = "LoadData (LoadData3DParamsV2)";
    Core(loc);
    LocalAccess(src.ref_, sizeof(T), 0, 0, api, "src", loc);
    LocalAccess(dst.ref_, sizeof(T), 0, 0, api, "dst", loc);
    CheckMem(src.ref_, Mem::L1, api, "src", loc);
    const bool toA = dst.ref_.block->mem == Mem::L0A;
    if (!toA && dst.ref_.block->mem != Mem::L0B)
        Fail(loc, Str(api, ": dst must be an A2 (L0A) or B2 (L0B) tensor, not ", PosName(dst.ref_.block->pos)));
    if (p.fMatrixCtrl) Fail(loc, Str(api, ": fMatrixCtrl = true is not supported (documented: false only)"));
    // The reference page lists half for enTranspose; the devkit's mmad_load3dv2 sample transposes
    // float (b32) on arch 2201 too. 8-bit types are not transposed on the L1 -> L0A path.
    if (p.enTranspose && toA && sizeof(T) == 1)
        Fail(loc, Str(api, ": enTranspose into A2 is not available for 8-bit types"));
    const uint32_t kw = p.filterW + (p.filterSizeW ? 256u : 0u), kh = p.filterH + (p.filterSizeH ? 256u : 0u);
    if (p.l1H == 0 || p.l1W == 0 || p.channelSize == 0 || p.kExtension == 0 || p.mExtension == 0 || kw == 0 || kh == 0)
        return;  // documented NOP
    if (p.strideW == 0 || p.strideH == 0 || p.dilationFilterW == 0 || p.dilationFilterH == 0)
        Fail(loc, Str(api, ": stride and dilation must be at least 1"));
    constexpr uint32_t c0 = 32 / sizeof(T);
    if (p.kStartPt % c0 != 0)
        Fail(loc, Str(api, ": kStartPt ", p.kStartPt, " is not a multiple of ", c0, " (C0 of ", TypeName<T>(), ")"));
    CheckLocalAlign(src.ref_, 32, api, "src", loc);
    CheckLocalAlign(dst.ref_, 512, api, "dst", loc);
    const int64_t W = p.l1W, H = p.l1H, C = p.channelSize;
    const int64_t c1n = (C + c0 - 1) / c0;
    const int64_t wo = (W + p.padList[0] + p.padList[1] - int64_t(p.dilationFilterW) * (kw - 1) - 1) / p.strideW + 1;
    const int64_t ho = (H + p.padList[2] + p.padList[3] - int64_t(p.dilationFilterH) * (kh - 1) - 1) / p.strideH + 1;
    if (wo <= 0 || ho <= 0) Fail(loc, Str(api, ": the filter does not fit the padded feature map"));
    if (int64_t(p.mStartPt) + p.mExtension > ho * wo)
        Fail(loc, Str(api, ": rows [", p.mStartPt, ", ", p.mStartPt + p.mExtension, ") exceed the ", ho * wo,
                      " output positions of the feature map"));
    if (int64_t(p.kStartPt) + p.kExtension > c1n * kh * kw * c0)
        Fail(loc, Str(api, ": columns [", p.kStartPt, ", ", p.kStartPt + p.kExtension, ") exceed the ",
                      c1n * kh * kw * c0, " of C1 x filterH x filterW x C0"));
    const uint8_t* s = LocalAccessBytes(src.ref_, 0, uint64_t(c1n) * H * W * 32, api, "src", loc);
    // dst as a matrix of R rows x Q columns (the fractal layout of the operand it becomes)
    // the operand's second dimension: A's k (its columns), B's n
    const uint32_t kDim = toA && p.enTranspose ? p.mExtension : p.kExtension;
    const uint64_t k1 = (kDim + c0 - 1) / c0, n1 = (kDim + 15) / 16;
    // the operand's element offset of img2col element (r, q): A (i, kk) or B (kk, j)
    auto offset = [&](uint64_t r, uint64_t q) -> uint64_t {
        if (toA) {
            const uint64_t i = p.enTranspose ? q : r, kk = p.enTranspose ? r : q;
            return ((i / 16) * k1 + kk / c0) * 16 * c0 + (i % 16) * c0 + kk % c0;
        }
        return ((r / c0) * n1 + q / 16) * c0 * 16 + (q % 16) * c0 + r % c0;
    };
    // the offset grows with r and with q: the last element written is the highest
    uint8_t* d = LocalAccess(dst.ref_, sizeof(T), 0, offset(p.mExtension - 1u, p.kExtension - 1u) + 1, api, "dst", loc);
    const T pad = p.padValue;
    for (uint32_t r = 0; r < p.mExtension; ++r) {
        const int64_t pos = p.mStartPt + r, oh = pos / wo, ow = pos % wo;
        for (uint32_t q = 0; q < p.kExtension; ++q) {
            const int64_t col = p.kStartPt + q, cc0 = col % c0, t = col / c0;
            const int64_t kwi = t % kw, khi = (t / kw) % kh, c1 = t / (int64_t(kw) * kh);
            const int64_t h = oh * p.strideH - p.padList[2] + khi * p.dilationFilterH;
            const int64_t w = ow * p.strideW - p.padList[0] + kwi * p.dilationFilterW;
            const uint64_t at = offset(r, q);
            uint8_t* de = d + at * sizeof(T);
            const bool inside = h >= 0 && h < H && w >= 0 && w < W && c1 * c0 + cc0 < C;
            if (inside) {
                const uint8_t* se = s + ((uint64_t(c1) * H * W + uint64_t(h) * W + uint64_t(w)) * c0 + cc0) * sizeof(T);
                PropagateCopy(de, se, sizeof(T), api, "src", loc);
                std::memmove(de, se, sizeof(T));
            } else {
                std::memcpy(de, &pad, sizeof(T));
                MarkWritten(de, sizeof(T));
            }
        }
    }
    Count(DMA_L1_TO_L0);
    Count(L1_TO_L0_BYTES, uint64_t(p.mExtension) * p.kExtension * sizeof(T));
}

}  // namespace AscendC
