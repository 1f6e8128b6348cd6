// DataCopy / DataCopyPad between GM, UB, L1, the bias table and L0C, with the parameter structs
// of the devkit. Units (devkit "基础数据搬运", "增强数据搬运" and "DataCopyPad" pages):
//   DataCopyParams: blockLen and gaps in 32 B DataBlocks on both sides, gap = end-to-start;
//     except for dst in C2 (bias table, L1 -> BT): blockLen = source burst length in 64 B,
//     srcGap in 32 B, dstGap in 64 B; and for CO1 -> CO2 with BLOCK_MODE_MATRIX: blockLen and
//     srcGap in 16x16 fractals of the L0C type (1024 B for float/int32, 512 B for half),
//     dstGap in 32 B.
//   DataCopyExtParams (DataCopyPad): blockLen in bytes; the GM-side stride in bytes, the
//   UB-side stride in DataBlocks; each UB row is padded to 32 B.
//   Nd2NzParams (GM -> L1): dstNzC0Stride / dstNzNStride in 32 B, matrix strides in elements.
#pragma once

#include <algorithm>

#include "atomic.h"
#include "tensor.h"

namespace AscendC {

struct DataCopyParams {
    DataCopyParams() {}
    DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn, const uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcGap(srcStrideIn), dstGap(dstStrideIn)
    {}
    uint16_t blockCount = DEFAULT_DATA_COPY_NBURST;
    uint16_t blockLen = 0;
    union {  // srcStride is the older name of srcGap
        uint16_t srcGap = 0;
        uint16_t srcStride;
    };
    union {
        uint16_t dstGap = 0;
        uint16_t dstStride;
    };
};

struct DataCopyExtParams {
    DataCopyExtParams() {}
    DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn,
                      const uint32_t dstStrideIn, const uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn)
    {}
    uint16_t blockCount = DEFAULT_DATA_COPY_NBURST;
    uint32_t blockLen = 0;
    uint32_t srcStride = DEFAULT_DATA_COPY_STRIDE;
    uint32_t dstStride = DEFAULT_DATA_COPY_STRIDE;
    uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
    DataCopyPadExtParams() {}
    DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, T padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue)
    {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = 0;
};

struct Nd2NzParams {
    Nd2NzParams() {}
    Nd2NzParams(const uint16_t ndNumIn, const uint16_t nValueIn, const uint16_t dValueIn,
                const uint16_t srcNdMatrixStrideIn, const uint16_t srcDValueIn, const uint16_t dstNzC0StrideIn,
                const uint16_t dstNzNStrideIn, const uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn)
    {}
    uint16_t ndNum = 0;
    uint16_t nValue = 0;             // rows of each ND matrix
    uint16_t dValue = 0;             // columns (elements) of each ND matrix
    uint16_t srcNdMatrixStride = 0;  // elements between ND matrices in GM
    uint16_t srcDValue = 0;          // elements between rows in GM
    uint16_t dstNzC0Stride = 0;      // 32 B units between the C0-wide column blocks in L1
    uint16_t dstNzNStride = 0;       // 32 B units between rows in L1
    uint16_t dstNzMatrixStride = 0;  // elements between NZ matrices in L1
};

// On-the-fly processing of the CO1 -> CO2 (L0C -> UB) move of arch 2002; on every other path
// the devkit ignores it. Emulated: blockMode BLOCK_MODE_MATRIX, deqScale DEQ_NONE, isRelu.
struct DataCopyEnhancedParams {
    DataCopyEnhancedParams() {}
    DataCopyEnhancedParams(const BlockMode blockModeIn, const DeqScale deqScaleIn, const uint64_t deqValueIn,
                           const uint8_t sidStoreModeIn, const bool isReluIn, const pad_t padModeIn,
                           const uint64_t padValueIn)
        : blockMode(blockModeIn), deqScale(deqScaleIn), deqValue(deqValueIn), sidStoreMode(sidStoreModeIn),
          isRelu(isReluIn), padMode(padModeIn), padValue(padValueIn)
    {}
    BlockMode blockMode = BlockMode::BLOCK_MODE_NORMAL;  // MATRIX: the unit is one 16x16 fractal
    DeqScale deqScale = DeqScale::DEQ_NONE;
    uint64_t deqValue = 0;
    uint8_t sidStoreMode = 0;
    bool isRelu = false;
    pad_t padMode = pad_t::PAD_NONE;  // reserved in the devkit
    uint64_t padValue = 0;
    uint64_t deqTensorAddr = 0;
};

}  // namespace AscendC

namespace megafuse_emu {

inline const char* PadHint() { return IsArch2201() ? " (use DataCopyPad)" : " (pad the data to 32 B)"; }

// The GM <-> local paths DataCopy takes; returns the counter of the transfer.
inline Counter GmToLocalPath(const TensorRef& dst, const char* api, const Loc& loc)
{
    LocalAccess(dst, 1, 0, 0, api, "dst", loc);  // a usable tensor first
    switch (dst.block->mem) {
        case Mem::UB: return DMA_GM_TO_UB;
        case Mem::L1: return DMA_GM_TO_L1;
        case Mem::BT:
            Fail(loc, Str(api, ": GM -> C2 is not a DataCopy path (copy the bias GM -> C1 (L1), then C1 -> C2)"));
        default:
            Fail(loc, Str(api, ": GM -> ", PosName(dst.block->pos), " is not a DataCopy path (use LoadData for "
                          "L0A/L0B)"));
    }
}

inline void LocalToGmPath(const TensorRef& src, const char* api, const Loc& loc)
{
    LocalAccess(src, 1, 0, 0, api, "src", loc);
    // A1 / B1 -> GM on arch 2201: the devkit's data_copy_l1togm compatibility sample (Ascend 950
    // lacks it). Counted as GM bytes only (no transfer counter of its own).
    if (src.block->mem == Mem::L1 && IsArch2201()) return;
    if (src.block->mem != Mem::UB)
        Fail(loc, Str(api, ": ", PosName(src.block->pos), " -> GM is not a DataCopy path in this emulation "
                      "(UB -> GM, and L1 -> GM on arch 2201; L0C leaves through Fixpipe)"));
}

// Checks a DataCopyParams and returns the span in bytes of one side, or 0 for a no-op.
inline uint64_t ParamsSpan(const AscendC::DataCopyParams& p, uint16_t gap, const char* api, const Loc& loc)
{
    if (p.blockCount > 4095) Fail(loc, Str(api, ": blockCount ", p.blockCount, " exceeds 4095"));
    if (p.blockCount == 0 || p.blockLen == 0) return 0;  // documented NOP
    return (static_cast<uint64_t>(p.blockCount - 1) * (p.blockLen + gap) + p.blockLen) * 32;
}

// The local -> local paths of DataCopy (devkit 基础数据搬运 path tables and the arch 2002 / 2201
// DataCopy implementations).
enum class LocalPath : uint8_t { UbToUb, UbToL1, L1ToBt };

inline LocalPath LocalToLocalPath(const TensorRef& dst, const TensorRef& src, const char* api, const Loc& loc)
{
    LocalAccess(src, 1, 0, 0, api, "src", loc);  // usable tensors first
    LocalAccess(dst, 1, 0, 0, api, "dst", loc);
    const Mem s = src.block->mem, d = dst.block->mem;
    const CoreState& c = *g_core;
    if (s == Mem::UB && d == Mem::UB) return LocalPath::UbToUb;
    if (s == Mem::UB && d == Mem::L1) {
        if (IsArch2201())
            Fail(loc, Str(api, ": UB -> L1 (", PosName(src.block->pos), " -> ", PosName(dst.block->pos),
                          ") does not exist on ", c.soc_name, " (arch 2201): UB is on the AIV cores, L1 on the "
                          "AIC cores; move the data through GM (the TSCM path of mix kernels is not emulated)"));
        return LocalPath::UbToL1;
    }
    if (s == Mem::L1 && d == Mem::BT) return LocalPath::L1ToBt;
    if (s == Mem::L0C && d == Mem::UB)
        Fail(loc, Str(api, ": CO1 -> ", PosName(dst.block->pos), " (L0C -> UB) needs the DataCopy overload with "
                      "DataCopyEnhancedParams (blockMode = BlockMode::BLOCK_MODE_MATRIX)"));
    Fail(loc, Str(api, ": ", PosName(src.block->pos), " (", MemName(s), ") -> ", PosName(dst.block->pos), " (",
                  MemName(d), ") is not a local DataCopy path in this emulation (emulated: UB -> UB; UB -> A1/B1 "
                  "on arch 2002; A1/B1/C1 -> C2 on arch 2201; CO1 -> CO2 with DataCopyEnhancedParams on arch 2002)"));
}

// A strided local -> local move. UB -> UB and UB -> L1: 32 B units on both sides. L1 -> BT:
// blockLen counts 64 B of the source per burst, srcGap 32 B, dstGap 64 B; a half source is
// widened to float (the destination burst is twice as long).
inline void LocalCopy(const TensorRef& dst, const TensorRef& src, size_t dst_es, size_t src_es, LocalPath path,
                      const AscendC::DataCopyParams& p, const Loc& loc)
{
    const char* api = "DataCopy";
    if (p.blockCount > 4095) Fail(loc, Str(api, ": blockCount ", p.blockCount, " exceeds 4095"));
    if (path == LocalPath::L1ToBt) {
        // Types (devkit 基础数据搬运 tables 5 and 7): int32_t/float unchanged, half -> float.
        const bool same = dst_es == src_es && dst_es == 4, widen = dst_es == 4 && src_es == 2;
        if (!same && !widen) Fail(loc, "DataCopy C1 -> C2: the bias table takes float or int32_t (or half widened to float)");
    }
    if (p.blockCount == 0 || p.blockLen == 0) return;  // documented NOP
    const uint64_t src_unit = path == LocalPath::L1ToBt ? 64 : 32;
    const uint64_t src_len = p.blockLen * src_unit;
    const uint64_t dst_len = src_len / src_es * dst_es;
    const uint64_t src_pitch = src_len + p.srcGap * 32ull;
    const uint64_t dst_pitch = dst_len + p.dstGap * (path == LocalPath::L1ToBt ? 64ull : 32ull);
    CheckLocalAlign(src, 32, api, "src", loc);
    CheckLocalAlign(dst, path == LocalPath::L1ToBt ? 64 : 32, api, "dst", loc);
    const uint8_t* s = LocalAccessBytes(src, 0, (p.blockCount - 1ull) * src_pitch + src_len, api, "src", loc);
    uint8_t* d = LocalAccessBytes(dst, 0, (p.blockCount - 1ull) * dst_pitch + dst_len, api, "dst", loc);
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        if (dst_len == src_len) PropagateCopy(d + i * dst_pitch, s + i * src_pitch, src_len, api, "src", loc);
        else PropagateElems(d + i * dst_pitch, static_cast<uint32_t>(dst_es), s + i * src_pitch,
                            static_cast<uint32_t>(src_es), src_len / src_es, api, "src", loc);
        if (dst_es == src_es) {
            std::memmove(d + i * dst_pitch, s + i * src_pitch, src_len);
            continue;
        }
        for (uint64_t e = 0; e < src_len / 2; ++e) {  // half -> float, exact
            half h;
            std::memcpy(&h, s + i * src_pitch + e * 2, 2);
            const float f = static_cast<float>(h);
            std::memcpy(d + i * dst_pitch + e * 4, &f, 4);
        }
    }
    switch (path) {
        case LocalPath::UbToUb: Count(DMA_UB_TO_UB); break;
        case LocalPath::UbToL1:
            Count(DMA_UB_TO_L1);
            Count(UB_TO_L1_BYTES, src_len * p.blockCount);
            break;
        case LocalPath::L1ToBt:
            Count(DMA_L1_TO_BT);
            Count(L1_TO_BT_BYTES, src_len * p.blockCount);
            break;
    }
}

// The count form: count * sizeof(T) bytes in one burst (64 B units into the bias table).
inline AscendC::DataCopyParams CountParams(LocalPath path, uint64_t bytes, const Loc& loc)
{
    const uint64_t unit = path == LocalPath::L1ToBt ? 64 : 32;
    if (bytes % unit != 0)
        Fail(loc, Str("DataCopy of ", bytes, " bytes is not a multiple of ", unit, " B",
                      path == LocalPath::L1ToBt ? " (C1 -> C2 moves 64 B units)" : ""));
    if (bytes / unit > 65535) Fail(loc, Str("DataCopy of ", bytes, " bytes exceeds one burst of 65535 units"));
    AscendC::DataCopyParams p;
    p.blockCount = 1;
    p.blockLen = static_cast<uint16_t>(bytes / unit);
    return p;
}

// CO1 -> CO2 (L0C -> UB) of arch 2002 with BLOCK_MODE_MATRIX: blockCount bursts of blockLen
// 16x16 fractals; srcGap in fractals of the source type, dstGap in 32 B; optional ReLU and
// float -> half (round to nearest even) on the way.
template <typename T, typename U>
void L0cToUb(const TensorRef& dst, const TensorRef& src, const AscendC::DataCopyParams& p,
             const AscendC::DataCopyEnhancedParams& e, const Loc& loc)
{
    using AscendC::BlockMode;
    const char* api = "DataCopy CO1 -> CO2";
    const CoreState& c = Core(loc);
    LocalAccess(src, sizeof(U), 0, 0, api, "src", loc);
    LocalAccess(dst, sizeof(T), 0, 0, api, "dst", loc);
    if (IsArch2201())
        Fail(loc, Str(api, " (L0C -> UB) does not exist on ", c.soc_name, " (arch 2201): L0C leaves through Fixpipe"));
    CheckMem(src, Mem::L0C, api, "src", loc);
    CheckMem(dst, Mem::UB, api, "dst", loc);
    if (e.blockMode == BlockMode::BLOCK_MODE_VECTOR)
        Fail(loc, Str(api, ": blockMode BLOCK_MODE_VECTOR is not emulated (use BLOCK_MODE_MATRIX)"));
    if (e.blockMode != BlockMode::BLOCK_MODE_MATRIX)
        Fail(loc, Str(api, ": blockMode ", static_cast<int>(e.blockMode), " is not supported by the devkit for CO1 -> "
                      "CO2; use BlockMode::BLOCK_MODE_MATRIX"));
    if (e.deqScale != AscendC::DeqScale::DEQ_NONE)
        Fail(loc, Str(api, ": deqScale ", static_cast<int>(e.deqScale), " is not emulated (DEQ_NONE only)"));
    if (e.padMode != pad_t::PAD_NONE) Fail(loc, Str(api, ": padMode is reserved in the devkit; leave PAD_NONE"));
    constexpr bool same = std::is_same_v<T, U>;
    constexpr bool supported = (same && (std::is_same_v<T, float> || std::is_same_v<T, int32_t> ||
                                         std::is_same_v<T, uint32_t> || std::is_same_v<T, half>)) ||
                               (std::is_same_v<U, float> && std::is_same_v<T, half>);
    if (!supported)
        Fail(loc, Str(api, ": ", TypeName<U>(), " -> ", TypeName<T>(), " is not emulated (float, int32_t, uint32_t, "
                      "half unchanged, or float -> half)"));
    if (e.isRelu && std::is_same_v<U, uint32_t>) Fail(loc, Str(api, ": isRelu is not available for uint32_t"));
    if (p.blockCount > 4095) Fail(loc, Str(api, ": blockCount ", p.blockCount, " exceeds 4095"));
    if (p.blockCount == 0 || p.blockLen == 0) return;
    constexpr uint64_t src_frac = 256 * sizeof(U), dst_frac = 256 * sizeof(T);
    CheckLocalAlign(src, src_frac, api, "src", loc);  // whole fractals of L0C
    CheckLocalAlign(dst, 32, api, "dst", loc);
    const uint64_t n = p.blockLen * 256ull;  // elements per burst
    const uint64_t src_pitch = (p.blockLen + static_cast<uint64_t>(p.srcGap)) * src_frac;
    const uint64_t dst_pitch = p.blockLen * dst_frac + p.dstGap * 32ull;
    const uint8_t* s =
        LocalAccessBytes(src, 0, (p.blockCount - 1ull) * src_pitch + p.blockLen * src_frac, api, "src", loc);
    uint8_t* d = LocalAccessBytes(dst, 0, (p.blockCount - 1ull) * dst_pitch + p.blockLen * dst_frac, api, "dst", loc);
    for (uint64_t b = 0; b < p.blockCount; ++b) {
        PropagateElems(d + b * dst_pitch, sizeof(T), s + b * src_pitch, sizeof(U), n, api, "src (CO1 / L0C)", loc);
    }
    for (uint64_t b = 0; b < p.blockCount; ++b)
        for (uint64_t i = 0; i < n; ++i) {
            U v;
            std::memcpy(&v, s + b * src_pitch + i * sizeof(U), sizeof(U));
            if constexpr (!std::is_same_v<U, uint32_t>)
                if (e.isRelu && v < U(0)) v = U(0);
            const T out = static_cast<T>(v);
            std::memcpy(d + b * dst_pitch + i * sizeof(T), &out, sizeof(T));
        }
    Count(DMA_L0C_TO_UB);
    Count(L0C_TO_UB_BYTES, p.blockCount * p.blockLen * src_frac);
}

}  // namespace megafuse_emu

namespace AscendC {

// ---- contiguous copies: count elements; count * sizeof(T) must be a multiple of 32 B ------
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    const Counter path = GmToLocalPath(dst.ref_, "DataCopy", loc);
    if (bytes % 32 != 0)
        Fail(loc, Str("DataCopy of ", bytes, " bytes is not a multiple of 32 B", PadHint()));
    if (bytes == 0) return;
    CheckLocalAlign(dst.ref_, 32, "DataCopy", "dst", loc);
    uint8_t* d = LocalAccess(dst.ref_, sizeof(T), 0, count, "DataCopy", "dst", loc);
    std::memcpy(d, src.Access(0, count, "DataCopy", loc), bytes);
    MarkWritten(d, bytes);
    Count(path);
    Count(GM_READ_BYTES, bytes);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    LocalToGmPath(src.ref_, "DataCopy", loc);
    if (bytes % 32 != 0)
        Fail(loc, Str("DataCopy of ", bytes, " bytes is not a multiple of 32 B", PadHint()));
    if (bytes == 0) return;
    CheckLocalAlign(src.ref_, 32, "DataCopy", "src", loc);
    const uint8_t* s = LocalAccess(src.ref_, sizeof(T), 0, count, "DataCopy", "src", loc);
    CheckWritten(s, bytes, "DataCopy", "src", loc);
    GmStore(dst.Access(0, count, "DataCopy", loc), s, bytes, "DataCopy", loc);
    if (src.ref_.block->mem == Mem::UB) Count(DMA_UB_TO_GM);
    Count(GM_WRITE_BYTES, bytes);
}

// Local -> local: UB -> UB; UB (VECIN/VECOUT/VECCALC/CO2) -> A1/B1/C1 on arch 2002;
// A1/B1/C1 -> C2 (bias table) on arch 2201, where count * sizeof(T) must be a multiple of 64 B.
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    const LocalPath path = LocalToLocalPath(dst.ref_, src.ref_, "DataCopy", loc);
    const DataCopyParams p = CountParams(path, static_cast<uint64_t>(count) * sizeof(T), loc);
    LocalCopy(dst.ref_, src.ref_, sizeof(T), sizeof(T), path, p, loc);
}

// ---- strided copies with DataCopyParams ---------------------------------------------------
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    const Counter path = GmToLocalPath(dst.ref_, "DataCopy", loc);
    const uint64_t src_span = ParamsSpan(p, p.srcGap, "DataCopy", loc);
    const uint64_t dst_span = ParamsSpan(p, p.dstGap, "DataCopy", loc);
    if (src_span == 0) return;
    CheckLocalAlign(dst.ref_, 32, "DataCopy", "dst", loc);
    uint8_t* d = LocalAccessBytes(dst.ref_, 0, dst_span, "DataCopy", "dst", loc);
    const uint8_t* s = src.AccessBytes(0, src_span, "DataCopy", loc);
    const uint64_t len = p.blockLen * 32ull;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        std::memcpy(d + i * (len + p.dstGap * 32ull), s + i * (len + p.srcGap * 32ull), len);
        MarkWritten(d + i * (len + p.dstGap * 32ull), len);
    }
    Count(path);
    Count(GM_READ_BYTES, len * p.blockCount);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    LocalToGmPath(src.ref_, "DataCopy", loc);
    const uint64_t src_span = ParamsSpan(p, p.srcGap, "DataCopy", loc);
    const uint64_t dst_span = ParamsSpan(p, p.dstGap, "DataCopy", loc);
    if (src_span == 0) return;
    CheckLocalAlign(src.ref_, 32, "DataCopy", "src", loc);
    const uint8_t* s = LocalAccessBytes(src.ref_, 0, src_span, "DataCopy", "src", loc);
    uint8_t* d = dst.AccessBytes(0, dst_span, "DataCopy", loc);
    const uint64_t len = p.blockLen * 32ull;
    for (uint32_t i = 0; i < p.blockCount; ++i) {
        CheckWritten(s + i * (len + p.srcGap * 32ull), len, "DataCopy", "src", loc);
        GmStore(d + i * (len + p.dstGap * 32ull), s + i * (len + p.srcGap * 32ull), len, "DataCopy", loc);
    }
    if (src.ref_.block->mem == Mem::UB) Count(DMA_UB_TO_GM);
    Count(GM_WRITE_BYTES, len * p.blockCount);
}

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    const LocalPath path = LocalToLocalPath(dst.ref_, src.ref_, "DataCopy", loc);
    LocalCopy(dst.ref_, src.ref_, sizeof(T), sizeof(T), path, p, loc);
}

// Local -> local with different types: C1 (half) -> C2 (float) on arch 2201, widened exactly.
template <typename T, typename U>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyParams& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    static_assert(std::is_same_v<T, float> && std::is_same_v<U, half>,
                  "DataCopy between local tensors of different types: only half (C1) -> float (C2) is emulated");
    Core(loc);
    if (LocalToLocalPath(dst.ref_, src.ref_, "DataCopy", loc) != LocalPath::L1ToBt)
        Fail(loc, "DataCopy half -> float between local tensors exists only for C1 -> C2 (bias table)");
    LocalCopy(dst.ref_, src.ref_, sizeof(T), sizeof(U), LocalPath::L1ToBt, p, loc);
}

// ---- DataCopy with DataCopyEnhancedParams -----------------------------------------------
// The enhanced parameters act only on CO1 -> CO2 (L0C -> UB, arch 2002); on the other paths the
// call is the plain DataCopy (devkit 增强数据搬运 page).
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
              const DataCopyEnhancedParams&, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    DataCopy(dst, src, p, loc);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
              const DataCopyEnhancedParams&, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    DataCopy(dst, src, p, loc);
}

template <typename T>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
              const DataCopyEnhancedParams& e, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    LocalAccess(src.ref_, 1, 0, 0, "DataCopy", "src", loc);
    if (src.ref_.block->mem == Mem::L0C) {
        L0cToUb<T, T>(dst.ref_, src.ref_, p, e, loc);
        return;
    }
    DataCopy(dst, src, p, loc);
}

// CO1 (float) -> CO2 (half): the conversion rounds to nearest even; the UB side of each burst
// is half as long (blockLen still counts 16x16 fractals).
template <typename T, typename U>
void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyParams& p,
              const DataCopyEnhancedParams& e, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> && std::is_same_v<U, float>,
                  "DataCopy CO1 -> CO2 between different types: only float -> half is emulated");
    megafuse_emu::L0cToUb<T, U>(dst.ref_, src.ref_, p, e, loc);
}

// ---- GM (ND, row-major) -> L1 (NZ) with on-the-fly layout change ---------------------------
// Row j of ND matrix i goes to dst + i*dstNzMatrixStride elements + j*dstNzNStride*32 B; its
// k-th 32 B piece goes dstNzC0Stride*32 B further per k. A row tail short of 32 B is
// zero-filled in L1 (devkit copy_gm_to_cbuf_multi_nd2nz description).
template <typename T>
void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    if (GmToLocalPath(dst.ref_, "DataCopy (ND2NZ)", loc) != DMA_GM_TO_L1)
        Fail(loc, "DataCopy with Nd2NzParams is emulated for GM -> A1/B1 (L1) only");
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) return;
    CheckLocalAlign(dst.ref_, 32, "DataCopy (ND2NZ)", "dst", loc);
    const uint64_t es = sizeof(T);
    const uint64_t row_bytes = p.dValue * es;
    const uint64_t pieces = (row_bytes + 31) / 32;
    const uint64_t src_elems =
        static_cast<uint64_t>(p.ndNum - 1) * p.srcNdMatrixStride + (p.nValue - 1ull) * p.srcDValue + p.dValue;
    const uint64_t dst_bytes = (p.ndNum - 1ull) * p.dstNzMatrixStride * es + (p.nValue - 1ull) * p.dstNzNStride * 32 +
                               (pieces - 1) * p.dstNzC0Stride * 32 + 32;
    const uint8_t* s = src.Access(0, src_elems, "DataCopy (ND2NZ)", loc);
    uint8_t* d = LocalAccessBytes(dst.ref_, 0, dst_bytes, "DataCopy (ND2NZ)", "dst", loc);
    for (uint64_t i = 0; i < p.ndNum; ++i)
        for (uint64_t j = 0; j < p.nValue; ++j) {
            const uint8_t* srow = s + (i * p.srcNdMatrixStride + j * p.srcDValue) * es;
            uint8_t* drow = d + i * p.dstNzMatrixStride * es + j * p.dstNzNStride * 32;
            for (uint64_t k = 0; k < pieces; ++k) {
                const uint64_t n = std::min<uint64_t>(32, row_bytes - k * 32);
                uint8_t* dp = drow + k * p.dstNzC0Stride * 32;
                std::memcpy(dp, srow + k * 32, n);
                std::memset(dp + n, 0, 32 - n);
                MarkWritten(dp, 32);
            }
        }
    Count(DMA_GM_TO_L1);
    Count(GM_READ_BYTES, static_cast<uint64_t>(p.ndNum) * p.nValue * row_bytes);
}

// ---- DataCopyPad: byte-exact GM <-> UB for tails (arch 2201 only) ------------------------
// SetPadValue (devkit "SetPadValue" page): the value DataCopyPad writes into leftPadding /
// rightPadding when isPad is false. Per core state, like the hardware register it sets.
template <typename T>
void SetPadValue(T paddingValue, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(sizeof(T) <= 8, "SetPadValue takes a scalar");
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    c.pad_value = 0;
    std::memcpy(&c.pad_value, &paddingValue, sizeof(T));
    c.pad_value_bytes = sizeof(T);
}

template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                 const DataCopyPadExtParams<T>& pad, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    CoreState& c = Core(loc);
    if (!IsArch2201()) Fail(loc, Str("DataCopyPad is not available on ", c.soc_name, " (arch ", c.soc.arch, ")"));
    CheckMem(dst.ref_, Mem::UB, "DataCopyPad", "dst", loc);
    if (p.blockCount > 4095) Fail(loc, Str("DataCopyPad: blockCount ", p.blockCount, " exceeds 4095"));
    if (p.blockLen % sizeof(T) != 0)
        Fail(loc, Str("DataCopyPad: blockLen ", p.blockLen, " B is not a multiple of sizeof(", TypeName<T>(), ")"));
    if (pad.leftPadding * sizeof(T) > 32 || pad.rightPadding * sizeof(T) > 32)
        Fail(loc, "DataCopyPad: leftPadding and rightPadding may cover at most 32 B each");
    if (p.blockCount == 0 || p.blockLen == 0) return;  // documented NOP
    CheckLocalAlign(dst.ref_, 32, "DataCopyPad", "dst", loc);
    const uint64_t es = sizeof(T);
    const uint64_t left = pad.leftPadding * es;
    const uint64_t right = pad.rightPadding * es;
    const uint64_t row = (left + p.blockLen + right + 31) / 32 * 32;  // one UB row, 32 B aligned
    const uint64_t dst_pitch = row + p.dstStride * 32ull;
    const uint64_t src_pitch = p.blockLen + static_cast<uint64_t>(p.srcStride);
    const uint8_t* s = src.AccessBytes(0, (p.blockCount - 1ull) * src_pitch + p.blockLen, "DataCopyPad", loc);
    uint8_t* d = LocalAccessBytes(dst.ref_, 0, (p.blockCount - 1ull) * dst_pitch + row, "DataCopyPad", "dst", loc);
    // Fill per the devkit: without padding the dummy tail up to 32 B repeats the row's first
    // element; with padding and isPad the paddingValue; with padding and !isPad the value of
    // the last SetPadValue (never called: the pad bytes keep whatever UB held, and stay
    // "never written" for the uninitialized-read check).
    const bool no_pad = pad.leftPadding == 0 && pad.rightPadding == 0;
    const bool fill_set = no_pad || pad.isPad || c.pad_value_bytes != 0;
    if (!no_pad && !pad.isPad && c.pad_value_bytes != 0 && c.pad_value_bytes != es)
        Fail(loc, Str("DataCopyPad<", TypeName<T>(), ">: the pad value was set by SetPadValue with a ", c.pad_value_bytes,
                      "-byte type; call SetPadValue with a ", TypeName<T>(), " value"));
    for (uint64_t i = 0; i < p.blockCount; ++i) {
        uint8_t* drow = d + i * dst_pitch;
        const uint8_t* srow = s + i * src_pitch;
        std::memcpy(drow + left, srow, p.blockLen);
        MarkWritten(drow + left, p.blockLen);
        if (!fill_set) continue;
        T fill;
        if (no_pad) std::memcpy(&fill, srow, es);
        else if (pad.isPad) fill = pad.paddingValue;
        else std::memcpy(&fill, &c.pad_value, es);
        for (uint64_t b = 0; b < left; b += es) std::memcpy(drow + b, &fill, es);
        for (uint64_t b = left + p.blockLen; b + es <= row; b += es) std::memcpy(drow + b, &fill, es);
        MarkWritten(drow, left);
        MarkWritten(drow + left + p.blockLen, (row - left - p.blockLen) / es * es);
    }
    Count(DMA_GM_TO_UB);
    Count(GM_READ_BYTES, static_cast<uint64_t>(p.blockCount) * p.blockLen);
}

template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p,
                 megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    CoreState& c = Core(loc);
    if (!IsArch2201()) Fail(loc, Str("DataCopyPad is not available on ", c.soc_name, " (arch ", c.soc.arch, ")"));
    LocalToGmPath(src.ref_, "DataCopyPad", loc);
    if (src.ref_.block->mem != Mem::UB) Fail(loc, "DataCopyPad: the local -> GM path is VECOUT (UB) -> GM only");
    if (p.blockCount > 4095) Fail(loc, Str("DataCopyPad: blockCount ", p.blockCount, " exceeds 4095"));
    if (p.blockLen % sizeof(T) != 0)
        Fail(loc, Str("DataCopyPad: blockLen ", p.blockLen, " B is not a multiple of sizeof(", TypeName<T>(), ")"));
    if (p.blockCount == 0 || p.blockLen == 0) return;
    CheckLocalAlign(src.ref_, 32, "DataCopyPad", "src", loc);
    const uint64_t row = (p.blockLen + 31ull) / 32 * 32;
    const uint64_t src_pitch = row + p.srcStride * 32ull;
    const uint64_t dst_pitch = p.blockLen + static_cast<uint64_t>(p.dstStride);
    const uint8_t* s =
        LocalAccessBytes(src.ref_, 0, (p.blockCount - 1ull) * src_pitch + p.blockLen, "DataCopyPad", "src", loc);
    uint8_t* d = dst.AccessBytes(0, (p.blockCount - 1ull) * dst_pitch + p.blockLen, "DataCopyPad", loc);
    for (uint64_t i = 0; i < p.blockCount; ++i) CheckWritten(s + i * src_pitch, p.blockLen, "DataCopyPad", "src", loc);
    for (uint64_t i = 0; i < p.blockCount; ++i) GmStore(d + i * dst_pitch, s + i * src_pitch, p.blockLen, "DataCopyPad", loc);
    Count(DMA_UB_TO_GM);
    Count(GM_WRITE_BYTES, static_cast<uint64_t>(p.blockCount) * p.blockLen);
}

}  // namespace AscendC
