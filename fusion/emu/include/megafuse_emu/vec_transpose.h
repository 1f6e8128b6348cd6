// Transpose family (devkit Transpose and TransDataTo5HD pages), UB -> UB:
//   * Transpose(dst, src): one 16 x 16 matrix of a 2-byte type;
//   * Transpose(dst, src, sharedTmpBuffer, TransposeParamsExt): [N, C, H, W] <-> [N, H, W, C]
//     (TRANSPOSE_NCHW2NHWC / TRANSPOSE_NHWC2NCHW) of a 2- or 4-byte type; the scratch buffer must
//     be a UB tensor, its minimum size is not checked (the devkit transpose sample passes 2560 B
//     where the sizing rule in its own comment gives 3584 B); other transpose types are refused;
//   * TransDataTo5HD<T>(dstList, srcList, params): 16 UB addresses per side (GetPhyAddr
//     values); each repeat moves the 16 x 16 block whose row i is the 32-byte block at
//     srcList[i] + r * srcRepStride * 32 B into dst row i = dstList[i] + r * dstRepStride * 32 B,
//     transposed. 2-byte types only (the 8-bit high/low-half modes are refused).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "init_check.h"
#include "tensor.h"
#include "vector_lanes.h"

namespace AscendC {

enum class TransposeType : uint8_t {
    TRANSPOSE_TYPE_NONE = 0,
    TRANSPOSE_NZ2ND_0213,
    TRANSPOSE_NZ2NZ_0213,
    TRANSPOSE_NZ2NZ_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITH_N,
    TRANSPOSE_NZ2ND_012_WITHOUT_N,
    TRANSPOSE_NZ2NZ_012_WITHOUT_N,
    TRANSPOSE_ND2ND_ONLY,
    TRANSPOSE_ND_UB_GM,
    TRANSPOSE_GRAD_ND_UB_GM,
    TRANSPOSE_ND2ND_B16,
    TRANSPOSE_NCHW2NHWC,
    TRANSPOSE_NHWC2NCHW,
    TRANSPOSE_ND2ND_021,
    TRANSPOSE_ND2ND_102,
    TRANSPOSE_ND2ND_210,
};

struct TransposeParamsExt {
    uint16_t nSize = 0;
    uint16_t cSize = 0;
    uint16_t hSize = 0;
    uint16_t wSize = 0;
    TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

struct TransDataTo5HDParams {
    TransDataTo5HDParams() {}
    TransDataTo5HDParams(const bool dstHighHalfIn, const bool srcHighHalfIn, const uint8_t repeatTimesIn,
                         const uint16_t dstRepStrideIn, const uint16_t srcRepStrideIn)
        : dstHighHalf(dstHighHalfIn), srcHighHalf(srcHighHalfIn), repeatTimes(repeatTimesIn),
          dstRepStride(dstRepStrideIn), srcRepStride(srcRepStrideIn)
    {}
    bool dstHighHalf = false;
    bool srcHighHalf = false;
    uint8_t repeatTimes = 1;
    uint16_t dstRepStride = 0;
    uint16_t srcRepStride = 0;
};

}  // namespace AscendC

namespace megafuse_emu {

// dst element di <- src element si for every pair; both tensors in UB, checked and tracked.
template <typename T>
void PermuteUb(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, uint64_t n,
               const std::vector<std::pair<uint64_t, uint64_t>>& pairs, const char* api, const Loc& loc)
{
    for (const auto* t : {&dst.ref_, &src.ref_}) {
        CheckMem(*t, Mem::UB, api, t == &dst.ref_ ? "dst" : "src", loc);
        CheckLocalAlign(*t, 32, api, t == &dst.ref_ ? "dst" : "src", loc);
    }
    uint8_t* d = LocalAccess(dst.ref_, sizeof(T), 0, n, api, "dst", loc);
    const uint8_t* s = LocalAccess(src.ref_, sizeof(T), 0, n, api, "src", loc);
    std::vector<uint8_t> tmp(s, s + n * sizeof(T));  // dst may alias src
    std::vector<uint8_t> st(n * sizeof(T));
    const uint8_t* ws = ShadowOf(s);
    if (ws != nullptr) std::memcpy(st.data(), ws, st.size());
    for (const auto& [di, si] : pairs) {
        std::memcpy(d + di * sizeof(T), tmp.data() + si * sizeof(T), sizeof(T));
        bool clean = true;
        for (size_t b = 0; b < sizeof(T) && ws != nullptr; ++b) clean = clean && st[si * sizeof(T) + b] == kWritten;
        if (!clean && ws != nullptr && st[si * sizeof(T)] == kNeverWritten) NoteOrigin(s + si * sizeof(T), sizeof(T), api, "src", loc);
        SetState(d + di * sizeof(T), sizeof(T), clean ? kWritten : kDerived);
    }
    Count(VECTOR_INSTRUCTIONS);
    Count(VECTOR_REPEATS, (n * sizeof(T) + 255) / 256);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T>
void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    static_assert(sizeof(T) == 2, "Transpose(dst, src) moves one 16 x 16 matrix of a 2-byte type");
    Core(loc);
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    for (uint64_t i = 0; i < 16; ++i)
        for (uint64_t j = 0; j < 16; ++j) pairs.push_back({j * 16 + i, i * 16 + j});
    PermuteUb(dst, src, 256, pairs, "Transpose", loc);
}

template <typename T>
void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
               const TransposeParamsExt& p, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Transpose (TransposeParamsExt): 2- or 4-byte types");
    const char* api = "Transpose (TransposeParamsExt)";
    Core(loc);
    const bool to_nhwc = p.transposeType == TransposeType::TRANSPOSE_NCHW2NHWC;
    if (!to_nhwc && p.transposeType != TransposeType::TRANSPOSE_NHWC2NCHW)
        Fail(loc, Str(api, ": transposeType ", static_cast<int>(p.transposeType),
                      " is not emulated (TRANSPOSE_NCHW2NHWC / TRANSPOSE_NHWC2NCHW are)"));
    const uint64_t N = p.nSize, C = p.cSize, H = p.hSize, W = p.wSize;
    const uint64_t n = N * C * H * W;
    if (n == 0) Fail(loc, Str(api, ": a dimension is 0"));
    LocalAccess(sharedTmpBuffer.ref_, 1, 0, 0, api, "sharedTmpBuffer", loc);
    CheckMem(sharedTmpBuffer.ref_, Mem::UB, api, "sharedTmpBuffer", loc);
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    for (uint64_t a = 0; a < N; ++a)
        for (uint64_t c = 0; c < C; ++c)
            for (uint64_t hw = 0; hw < H * W; ++hw) {
                const uint64_t nchw = (a * C + c) * H * W + hw, nhwc = (a * H * W + hw) * C + c;
                pairs.push_back(to_nhwc ? std::make_pair(nhwc, nchw) : std::make_pair(nchw, nhwc));
            }
    PermuteUb(dst, src, n, pairs, api, loc);
}

template <typename T>
void TransDataTo5HD(const uint64_t dstList[], const uint64_t srcList[], const TransDataTo5HDParams& p,
                    megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "TransDataTo5HD";
    CoreState& c = Core(loc);
    if constexpr (sizeof(T) != 2) {
        Fail(loc, Str(api, ": ", TypeName<T>(), " is not emulated (2-byte types are)"));
    } else {
        std::vector<uint8_t>& ub = c.mem[static_cast<int>(Mem::UB)];
        if (ub.empty()) Fail(loc, Str(api, ": this core has no UB"));
        const uint64_t reps = p.repeatTimes;
        auto block = [&](uint64_t addr, const char* side) -> uint8_t* {
            if (addr % 32 != 0) Fail(loc, Str(api, ": ", side, " address ", addr, " is not 32-byte aligned"));
            if (addr + 32 > ub.size()) Fail(loc, Str(api, ": ", side, " address ", addr, " is outside UB"));
            return ub.data() + addr;
        };
        for (uint64_t r = 0; r < reps; ++r) {
            uint8_t tmp[512];
            std::array<uint8_t*, 16> dst_rows{};
            uint8_t st[512];
            for (int i = 0; i < 16; ++i) {
                const uint8_t* s = block(srcList[i] + r * p.srcRepStride * 32ull, "src");
                std::memcpy(tmp + i * 32, s, 32);
                std::memcpy(st + i * 32, ShadowOf(s), 32);
                dst_rows[i] = block(dstList[i] + r * p.dstRepStride * 32ull, "dst");
            }
            for (int i = 0; i < 16; ++i)
                for (int j = 0; j < 16; ++j) {  // dst row i, element j = src row j, element i
                    std::memcpy(dst_rows[i] + j * 2, tmp + j * 32 + i * 2, 2);
                    const bool clean = st[j * 32 + i * 2] == kWritten && st[j * 32 + i * 2 + 1] == kWritten;
                    if (st[j * 32 + i * 2] == kNeverWritten && c.uninit_origin.empty())
                        c.uninit_origin = Str(api, " at line ", loc.line(), " read a never-written UB element");
                    SetState(dst_rows[i] + j * 2, 2, clean ? kWritten : kDerived);
                }
        }
        Count(VECTOR_INSTRUCTIONS);
        Count(VECTOR_REPEATS, reps);
    }
}

}  // namespace AscendC
