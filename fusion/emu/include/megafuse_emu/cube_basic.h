// Cube-side basic APIs of the devkit's 03_basic_api matrix samples (facts from the devkit
// reference pages named at each item).
#pragma once

#include <cstdint>
#include <cstring>

#include "cube.h"
#include "init_check.h"
#include "vector_lanes.h"

namespace AscendC {

// LoadDataWithTranspose (devkit LoadDataWithTranspose page): A1 / B1 -> A2 / B2, one square
// block per repeat, transposed. int8_t / uint8_t: two consecutive 16 x 32 fractals form a
// 32 x 32 square; half / bfloat16_t: one 16 x 16 fractal. startIndex and srcStride count
// squares (start-to-start); dstGap is the gap (512 B units) from the end of one repeat's first
// dst fractal to the next repeat's first; dstFracGap the gap between the fractals of a repeat.
// 32-bit types (two 16 x 8 fractals as one 16 x 16 square) and int4b_t are not emulated.
struct LoadData2dTransposeParams {
    LoadData2dTransposeParams() {}
    LoadData2dTransposeParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                              const uint16_t dstGapIn, const uint16_t dstFracGapIn, const uint8_t addrModeIn = 0)
        : startIndex(startIndexIn), repeatTimes(repeatTimesIn), srcStride(srcStrideIn), dstGap(dstGapIn),
          dstFracGap(dstFracGapIn), addrMode(addrModeIn)
    {}
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint8_t addrMode = 0;
};
using LoadData2DTransposeParams = LoadData2dTransposeParams;

template <typename T>
void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2dTransposeParams& p,
                           megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "LoadDataWithTranspose";
    Core(loc);
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "LoadDataWithTranspose: unsupported type");
    if constexpr (sizeof(T) == 4) {
        Fail(loc, Str(api, ": 32-bit types (", TypeName<T>(), ") are not emulated (their 16 x 16 square of two 16 x 8 "
                      "fractals)"));
    } else {
        LocalAccess(src.ref_, sizeof(T), 0, 0, api, "src", loc);
        LocalAccess(dst.ref_, sizeof(T), 0, 0, api, "dst", loc);
        CheckMem(src.ref_, Mem::L1, api, "src", loc);
        if (dst.ref_.block->mem != Mem::L0A && dst.ref_.block->mem != Mem::L0B)
            Fail(loc, Str(api, ": dst must be an A2 (L0A) or B2 (L0B) tensor, not ", PosName(dst.ref_.block->pos)));
        if (p.repeatTimes == 0) return;
        CheckLocalAlign(src.ref_, 32, api, "src", loc);
        CheckLocalAlign(dst.ref_, 512, api, "dst", loc);
        constexpr uint64_t F = 512;
        constexpr uint64_t nfrac = sizeof(T) == 1 ? 2 : 1;  // fractals per square
        constexpr uint64_t side = 32 / sizeof(T);           // square side in elements
        const uint64_t r = p.repeatTimes;
        const uint8_t* s =
            LocalAccessBytes(src.ref_, 0, (p.startIndex + (r - 1) * p.srcStride + 1) * nfrac * F, api, "src", loc);
        const uint64_t last_first = (r - 1) * (1 + p.dstGap) * F;
        const uint64_t dst_bytes = last_first + (nfrac - 1) * (1 + p.dstFracGap) * F + F;
        uint8_t* d = LocalAccessBytes(dst.ref_, 0, dst_bytes, api, "dst", loc);
        uint8_t tmp[2 * F];
        for (uint64_t i = 0; i < r; ++i) {
            const uint8_t* sq = s + (p.startIndex + i * p.srcStride) * nfrac * F;
            std::memcpy(tmp, sq, nfrac * F);  // the square may overlap its destination
            for (uint64_t f = 0; f < nfrac; ++f) {
                uint8_t* df = d + i * (1 + p.dstGap) * F + f * (1 + p.dstFracGap) * F;
                // dst fractal f holds rows [16 f, 16 f + 16) of the transposed square
                for (uint64_t row = 0; row < 16; ++row)
                    for (uint64_t col = 0; col < side; ++col) {
                        const uint64_t from = (col * side + f * 16 + row) * sizeof(T);
                        uint8_t* to = df + (row * side + col) * sizeof(T);
                        PropagateElems(to, sizeof(T), sq + from, sizeof(T), 1, api, "src", loc);
                        std::memcpy(to, tmp + from, sizeof(T));
                    }
            }
        }
        Count(DMA_L1_TO_L0);
        Count(L1_TO_L0_BYTES, r * nfrac * F);
    }
}

}  // namespace AscendC

namespace AscendC {

// SetFixPipeConfig (devkit SetFixPipeConfig page, arch 2201): loads the relu / quant parameter
// tensors of Fixpipe's per-channel (vector) quantisation, and with isUnitFlag clears the L0C
// unit flags. Neither exists here: vector quantisation modes of Fixpipe are refused, and the
// unit flags (Mmad / Fixpipe unitFlag) order nothing because instructions run in program order.
// So the call is checked (arch, an initialised tensor) and changes nothing. The documented
// position is C2PIPE2GM; the devkit's mmad_unitflag sample passes a CO1 tensor to clear the
// unit flags, which is harmless without a quantising Fixpipe, so the position is not checked.
template <typename T>
void SetFixPipeConfig(const LocalTensor<T>& reluPre, const LocalTensor<T>& quantPre, bool isUnitFlag = false,
                      megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    CoreState& c = Core(loc);
    (void)reluPre;
    (void)isUnitFlag;
    if (!IsArch2201()) Fail(loc, Str("SetFixPipeConfig is not available on ", c.soc_name));
    LocalAccess(quantPre.ref_, sizeof(T), 0, 0, "SetFixPipeConfig", "quantPre", loc);
}

template <typename T, bool setRelu = false>
void SetFixPipeConfig(const LocalTensor<T>& preTensor, bool isUnitFlag = false,
                      megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    CoreState& c = Core(loc);
    (void)isUnitFlag;
    if (!IsArch2201()) Fail(loc, Str("SetFixPipeConfig is not available on ", c.soc_name));
    LocalAccess(preTensor.ref_, sizeof(T), 0, 0, "SetFixPipeConfig", "preTensor", loc);
}

}  // namespace AscendC

namespace AscendC {

// Fixpipe L0C -> L1 (devkit Fixpipe page, arch 2201: CO1 -> A1 / B1 / C1): the same element
// mapping, ReLU and quantisation modes (NoQuant, F322F16, F322BF16) as the L0C -> GM Fixpipe
// (cube.h); with CFG_NZ dstStride counts 32-byte blocks between the 16-column blocks, with
// CFG_ROW_MAJOR elements between rows (ndNum / srcNdStride / dstNdStride as for GM).
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
void Fixpipe(const LocalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p,
             megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "Fixpipe (L0C -> L1)";
    static_assert(config.format != CO2Layout::COLUMN_MAJOR, "Fixpipe CFG_COLUMN_MAJOR is not emulated");
    CoreState& c = Core(loc);
    if (!IsArch2201())
        Fail(loc, Str("Fixpipe with FixpipeParamsV220 is not available on ", c.soc_name, " (arch ", c.soc.arch, ")"));
    LocalAccess(src.ref_, sizeof(U), 0, 0, api, "src", loc);
    LocalAccess(dst.ref_, sizeof(T), 0, 0, api, "dst", loc);
    CheckMem(src.ref_, Mem::L0C, api, "src", loc);
    CheckMem(dst.ref_, Mem::L1, api, "dst", loc);
    CheckLocalAlign(src.ref_, 64, api, "src", loc);
    CheckLocalAlign(dst.ref_, 32, api, "dst", loc);
    if (p.isChannelSplit) Fail(loc, Str(api, ": isChannelSplit is not emulated"));
    const QuantMode_t q = p.quantPre;
    if (q == QuantMode_t::NoQuant) {
        if (!std::is_same_v<T, U>) Fail(loc, Str(api, ": NoQuant needs dst and src of the same type"));
    } else if (q == QuantMode_t::F322F16) {
        if (!(std::is_same_v<U, float> && std::is_same_v<T, half>)) Fail(loc, Str(api, ": F322F16 needs float src, half dst"));
    } else if (q == QuantMode_t::F322BF16) {
        if (!(std::is_same_v<U, float> && std::is_same_v<T, bfloat16_t>))
            Fail(loc, Str(api, ": F322BF16 needs float src, bfloat16_t dst"));
    } else {
        Fail(loc, Str(api, ": quantPre mode ", static_cast<int>(q), " is not emulated"));
    }
    const bool nz = config.format == CO2Layout::NZ;
    const uint64_t nd = nz ? 1 : p.ndNum;
    if (nd == 0 || p.mSize == 0 || p.nSize == 0) return;
    if (nz && p.nSize % 16 != 0) Fail(loc, Str(api, " (NZ): nSize ", p.nSize, " must be a multiple of 16"));
    if constexpr (sizeof(T) != 2 && sizeof(T) != 4) {
        Fail(loc, Str(api, ": ", TypeName<T>(), " output is not emulated"));
    } else {
        const uint64_t src_nd = p.srcNdStride * 1024ull / sizeof(U);
        auto src_index = [&](uint64_t t, uint64_t i, uint64_t j) {
            return t * src_nd + ((j / 16) * p.srcStride + i) * 16 + j % 16;
        };
        auto dst_index = [&](uint64_t t, uint64_t i, uint64_t j) {
            if (nz) return (j / 16) * p.dstStride * (32 / sizeof(T)) + i * 16 + j % 16;
            return t * p.dstNdStride + i * p.dstStride + j;
        };
        uint64_t src_hi = 0, dst_hi = 0;
        for (uint64_t t : {uint64_t(0), nd - 1})
            for (uint64_t i : {uint64_t(0), uint64_t(p.mSize - 1u)})
                for (uint64_t j : {uint64_t(0), uint64_t(p.nSize - 1u)}) {
                    src_hi = std::max(src_hi, src_index(t, i, j));
                    dst_hi = std::max(dst_hi, dst_index(t, i, j));
                }
        const uint8_t* s = LocalAccess(src.ref_, sizeof(U), 0, src_hi + 1, api, "src", loc);
        uint8_t* d = LocalAccess(dst.ref_, sizeof(T), 0, dst_hi + 1, api, "dst", loc);
        for (uint64_t t = 0; t < nd; ++t)
            for (uint64_t i = 0; i < p.mSize; ++i)
                for (uint64_t j = 0; j < p.nSize; ++j) {
                    const uint64_t si = src_index(t, i, j), di = dst_index(t, i, j);
                    CheckWrittenAt(s, si, sizeof(U), api, "src (CO1 / L0C)", loc);
                    U v = Ld<U>(s, si);
                    if (p.reluEn && v < U(0)) v = U(0);
                    St<T>(d, di, static_cast<T>(v));
                    MarkWritten(d + di * sizeof(T), sizeof(T));
                }
    }
}

}  // namespace AscendC

namespace AscendC {

// BroadCastVecToMM (devkit BroadCastVecToMM(ISASI) page, Atlas inference AI Core = arch 2002):
// UB (VECIN / VECCALC / VECOUT) -> CO1; every 16 elements of a block are copied 16 times, i.e.
// each 16-element group fills one 16 x 16 fractal with 16 equal rows. blockLen counts 16-element
// groups, srcGap 32-byte blocks, dstGap 256-element fractals (end-to-start gaps).
template <typename T, typename U>
void BroadCastVecToMM(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t blockCount,
                      const uint8_t blockLen, const uint8_t srcGap, const uint8_t dstGap,
                      megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "BroadCastVecToMM";
    static_assert(std::is_same_v<T, U>, "BroadCastVecToMM: dst and src of one type");
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float> || std::is_same_v<T, int32_t>,
                  "BroadCastVecToMM: half, float or int32_t");
    CoreState& c = Core(loc);
    if (IsArch2201()) Fail(loc, Str(api, " is not available on ", c.soc_name, " (Atlas inference AI Core only)"));
    LocalAccess(src.ref_, sizeof(U), 0, 0, api, "src", loc);
    LocalAccess(dst.ref_, sizeof(T), 0, 0, api, "dst", loc);
    CheckMem(src.ref_, Mem::UB, api, "src", loc);
    CheckMem(dst.ref_, Mem::L0C, api, "dst", loc);
    CheckLocalAlign(src.ref_, 32, api, "src", loc);
    CheckLocalAlign(dst.ref_, 256 * sizeof(T), api, "dst", loc);
    if (blockCount < 1 || blockCount > 255) Fail(loc, Str(api, ": blockCount ", blockCount, " is outside [1, 255]"));
    if (blockLen == 0) Fail(loc, Str(api, ": blockLen 0 is outside [1, 255]"));
    const uint64_t src_pitch = blockLen * 16ull + srcGap * 32ull / sizeof(U);
    const uint64_t dst_pitch = (blockLen + uint64_t(dstGap)) * 256ull;
    const uint64_t n_src = (blockCount - 1) * src_pitch + blockLen * 16ull;
    const uint64_t n_dst = (blockCount - 1) * dst_pitch + blockLen * 256ull;
    const uint8_t* s = LocalAccess(src.ref_, sizeof(U), 0, n_src, api, "src", loc);
    uint8_t* d = LocalAccess(dst.ref_, sizeof(T), 0, n_dst, api, "dst", loc);
    for (int32_t b = 0; b < blockCount; ++b)
        for (uint64_t g = 0; g < blockLen; ++g)
            for (uint64_t r = 0; r < 16; ++r) {
                const uint8_t* from = s + (b * src_pitch + g * 16) * sizeof(U);
                uint8_t* to = d + (b * dst_pitch + g * 256 + r * 16) * sizeof(T);
                PropagateCopy(to, from, 16 * sizeof(T), api, "src", loc);
                std::memcpy(to, from, 16 * sizeof(T));
            }
    Count(VECTOR_INSTRUCTIONS);
    Count(VECTOR_REPEATS, static_cast<uint64_t>(blockCount) * blockLen);
}

}  // namespace AscendC
