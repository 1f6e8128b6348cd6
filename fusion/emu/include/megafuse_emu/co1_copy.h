// DataCopy CO1 (L0C) -> GM with DataCopyCO12DstParams (devkit "DataCopy CO1->GM" / 随路量化
// pages, arch 2201), the registers it reads (SetFixpipePreQuantFlag, SetFixpipeNz2ndFlag) and
// the scalar quantisation it applies. Emulated: quantPre NoQuant, F322F16, F322BF16 and DEQF16
// (int32 -> half with the scalar of SetFixpipePreQuantFlag), reluPre 0 (none) / 1 (ReLU),
// NZ output or NZ2ND (nz2ndEn, ndNum = 1). The vector modes (VDEQF16, VQF322B8_PRE, VREQ8, read
// from the C2PIPE2GM buffer) and the int8 modes (QF322B8_PRE, REQ8) are refused.
//
// The DEQF16 scalar (bit fields as the devkit data_copy_l0c2gm sample's generator decodes them):
// bits [31:13] are the scale M1 as a 1-8-10 float (an fp32 with its low 13 mantissa bits
// dropped), [35:32] a right shift N and bit 36 its enable, [45:37] an offset added after the
// conversion, bit 46 the sign flag of int8 outputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "atomic.h"
#include "cube.h"
#include "init_check.h"
#include "vector_lanes.h"

namespace AscendC {

struct DataCopyCO12DstParams {
    DataCopyCO12DstParams() {}
    DataCopyCO12DstParams(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint32_t dstStrideIn,
                          const uint16_t srcStrideIn, const QuantMode_t quantPreIn, const uint8_t reluPreIn,
                          const bool channelSplitIn, const bool nz2ndEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), dstStride(dstStrideIn), srcStride(srcStrideIn), reluPre(reluPreIn),
          quantPre(quantPreIn), channelSplit(channelSplitIn), nz2ndEn(nz2ndEnIn)
    {}
    uint8_t sid = 0;
    uint16_t nSize = 0;      // N extent of the NZ source
    uint16_t mSize = 0;      // M extent
    uint32_t dstStride = 0;  // NZ: 32-byte blocks between 16-column blocks; ND: elements between rows
    uint16_t srcStride = 0;  // rows of a source 16-column block (>= mSize rounded to 16)
    uint8_t unitFlag = 0;
    uint8_t clipReluPre = 0;
    uint8_t eltWiseOp = 0;
    bool noWrapMode = false;
    uint8_t reluPre = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    bool channelSplit = false;
    bool nz2ndEn = false;
};

}  // namespace AscendC

namespace megafuse_emu {

// The fixpipe registers of the calling core (per thread; a value set by another core is unset).
struct FixpipeRegs {
    const void* core = nullptr;
    bool quant_set = false;
    uint64_t deq = 0;
    bool nd_set = false;
    uint16_t nd_num = 1, src_nd = 0, dst_nd = 0;
};

inline FixpipeRegs& FixRegs()
{
    static thread_local FixpipeRegs r;
    if (r.core != g_core) r = FixpipeRegs{g_core};
    return r;
}

inline float DeqScalarScale(uint64_t deq)
{
    const uint32_t bits = static_cast<uint32_t>(deq) & 0xFFFFE000u;  // [31:13]
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

}  // namespace megafuse_emu

namespace AscendC {

inline void SetFixpipePreQuantFlag(uint64_t config, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Core(loc);
    auto& r = megafuse_emu::FixRegs();
    r.quant_set = true;
    r.deq = config;
}

inline void SetFixpipeNz2ndFlag(uint16_t ndNum, uint16_t srcNdStride, uint16_t dstNdStride,
                                megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Core(loc);
    auto& r = megafuse_emu::FixRegs();
    r.nd_set = true;
    r.nd_num = ndNum;
    r.src_nd = srcNdStride;
    r.dst_nd = dstNdStride;
}

template <typename T, typename U>
void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyCO12DstParams& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "DataCopy (CO1 -> GM)";
    CoreState& c = Core(loc);
    if (!IsArch2201()) Fail(loc, Str(api, " with DataCopyCO12DstParams is not available on ", c.soc_name));
    LocalAccess(src.ref_, sizeof(U), 0, 0, api, "src", loc);
    CheckMem(src.ref_, Mem::L0C, api, "src", loc);
    CheckLocalAlign(src.ref_, 64, api, "src", loc);
    if (p.channelSplit) Fail(loc, Str(api, ": channelSplit is not emulated"));
    if (p.reluPre > 1) Fail(loc, Str(api, ": reluPre ", int(p.reluPre), " is not emulated (0: none, 1: ReLU)"));
    if (p.clipReluPre || p.eltWiseOp) Fail(loc, Str(api, ": clipReluPre / eltWiseOp are not emulated"));
    const QuantMode_t q = p.quantPre;
    FixpipeRegs& regs = FixRegs();
    float scale = 1.0f;
    int shift = -1;
    int offset = 0;
    if (q == QuantMode_t::NoQuant) {
        if (!std::is_same_v<T, U>) Fail(loc, Str(api, ": NoQuant needs dst and src of the same type"));
    } else if (q == QuantMode_t::F322F16 || q == QuantMode_t::F322BF16) {
        if (!std::is_same_v<U, float> || !(std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>))
            Fail(loc, Str(api, ": F322F16 / F322BF16 need float src and a half / bfloat16_t dst"));
    } else if (q == QuantMode_t::DEQF16) {
        if (!(std::is_same_v<U, int32_t> && std::is_same_v<T, half>)) Fail(loc, Str(api, ": DEQF16 needs int32_t src, half dst"));
        if (!regs.quant_set) Fail(loc, Str(api, ": DEQF16 reads the scalar of SetFixpipePreQuantFlag, never set on this core"));
        scale = DeqScalarScale(regs.deq);
        if ((regs.deq >> 36) & 1) shift = static_cast<int>((regs.deq >> 32) & 0xF);
        offset = static_cast<int>((regs.deq >> 37) & 0x1FF);
        if (offset >= 256) offset -= 512;  // a 9-bit signed offset
    } else {
        Fail(loc, Str(api, ": quantPre mode ", static_cast<int>(q), " is not emulated (NoQuant, F322F16, F322BF16, DEQF16 are)"));
    }
    if (p.mSize == 0 || p.nSize == 0) return;
    const bool nd = p.nz2ndEn;
    if (nd && (!regs.nd_set || regs.nd_num != 1))
        Fail(loc, Str(api, ": nz2ndEn needs SetFixpipeNz2ndFlag with ndNum = 1 on this core"));
    if (!nd && p.nSize % 16 != 0) Fail(loc, Str(api, " (NZ): nSize ", p.nSize, " must be a multiple of 16"));
    if constexpr (sizeof(T) < 2) {
        Fail(loc, Str(api, ": ", TypeName<T>(), " output is not emulated"));
    } else {
        auto src_index = [&](uint64_t i, uint64_t j) { return ((j / 16) * p.srcStride + i) * 16 + j % 16; };
        auto dst_index = [&](uint64_t i, uint64_t j) -> uint64_t {
            if (nd) return i * p.dstStride + j;
            return (j / 16) * p.dstStride * (32 / sizeof(T)) + i * 16 + j % 16;
        };
        const uint64_t mi = p.mSize - 1u, nj = p.nSize - 1u;
        const uint64_t src_hi = std::max({src_index(0, nj), src_index(mi, nj), src_index(mi, 0)});
        const uint64_t dst_hi = std::max({dst_index(0, nj), dst_index(mi, nj), dst_index(mi, 0)});
        const uint8_t* s = LocalAccess(src.ref_, sizeof(U), 0, src_hi + 1, api, "src", loc);
        uint8_t* d = dst.Access(0, dst_hi + 1, api, loc);
        for (uint64_t i = 0; i < p.mSize; ++i)
            for (uint64_t j = 0; j < p.nSize; ++j) {
                CheckWrittenAt(s, src_index(i, j), sizeof(U), api, "src (CO1 / L0C)", loc);
                const U v = Ld<U>(s, src_index(i, j));
                T out;
                if (q == QuantMode_t::DEQF16) {
                    int64_t x = static_cast<int64_t>(v);
                    if (shift >= 0) x >>= shift;
                    float f = static_cast<float>(x) * scale;
                    if (p.reluPre == 1 && f < 0) f = 0;
                    out = static_cast<T>(static_cast<float>(static_cast<half>(f)) + static_cast<float>(offset));
                } else {
                    U w = v;
                    if (p.reluPre == 1 && w < U(0)) w = U(0);
                    out = static_cast<T>(w);
                }
                GmStore(d + dst_index(i, j) * sizeof(T), reinterpret_cast<const uint8_t*>(&out), sizeof(T), api, loc);
            }
        Count(DMA_L0C_TO_GM);
        Count(GM_WRITE_BYTES, uint64_t(p.mSize) * p.nSize * sizeof(T));
    }
}

}  // namespace AscendC
