// Cube unit: LoadData (L1 -> L0A/L0B), Mmad (L0A x L0B (+ bias) -> L0C), Fixpipe (L0C -> GM).
//
// Layouts (devkit Mmad page: "ABC矩阵的数据排布格式分别为ZZ,ZN,NZ"). C0 = 32 B / sizeof(input):
//   A in L0A, m x k, "small z big Z": 16 x C0 fractals, row-major inside, fractals row-major
//     A(i, kk) = ((i/16) * K1 + kk/C0) * 16*C0 + (i%16) * C0 + kk%C0,        K1 = ceil(k/C0)
//   B in L0B, k x n, "small n big Z": C0 x 16 fractals, column-major inside, fractals row-major
//     B(kk, j) = ((kk/C0) * N1 + j/16) * C0*16 + (j%16) * C0 + kk%C0,       N1 = ceil(n/16)
//   C in L0C, m x n, "small z big N": 16 x 16 fractals, row-major inside, fractals column-major
//     C(i, j) = ((j/16) * M1 + i/16) * 256 + (i%16) * 16 + j%16,            M1 = ceil(m/16)
// L1 holds operands as NZ (what DataCopy with Nd2NzParams writes: C0-wide column blocks of
// all rows); LoadData2D moves 512 B fractals from there, transposing each one on request.
#pragma once

#include <algorithm>

#include "atomic.h"
#include "tensor.h"

namespace AscendC {

struct LoadData2DParams {
    LoadData2DParams() {}
    LoadData2DParams(const uint16_t startIndexIn, const uint8_t repeatTimesIn, const uint16_t srcStrideIn,
                     const uint8_t sidIn, const uint16_t dstGapIn, const bool ifTransposeIn, const uint8_t addrModeIn)
        : startIndex(startIndexIn), dstGap(dstGapIn), srcStride(srcStrideIn), ifTranspose(ifTransposeIn),
          repeatTimes(repeatTimesIn), sid(sidIn), addrMode(addrModeIn)
    {}
    uint16_t startIndex = 0;  // first source fractal (512 B units)
    uint16_t dstGap = 0;      // destination gap between fractals, end-to-start, 512 B units
    uint16_t srcStride = 0;   // source stride between fractals, start-to-start, 512 B units
    bool ifTranspose = false; // transpose each fractal
    uint8_t repeatTimes = 0;  // fractals to move
    uint8_t sid = 0;
    uint8_t addrMode = 0;
};
using LoadData2dParams = LoadData2DParams;

struct MmadParams {
    MmadParams() {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const bool isBiasIn, const int32_t fmOffsetIn,
               const bool enSsparseIn, const bool enWinogradAIn, const bool enWinogradBIn)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn)
    {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const uint8_t unitFlagIn,
               const bool cmatrixSourceIn, const bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn), cmatrixInitVal(cmatrixInitValIn)
    {}
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;  // older flag: accumulate into C
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;   // initial C when not 0: false from L0C, true from the bias table (C2)
    bool cmatrixInitVal = true;   // true: C starts at 0 (unless isBias); false: C starts from cmatrixSource
};

enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };

struct FixpipeConfig {
    CO2Layout format;
    constexpr FixpipeConfig(CO2Layout format_) : format(format_) {}  // NOLINT
    constexpr FixpipeConfig(CO2Layout format_, bool) : format(format_) {}
};
inline constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
inline constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};
inline constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR};

struct FixpipeParamsV220 {
    FixpipeParamsV220() {}
    FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                      const uint32_t dstStrideIn, const bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn)
    {}
    FixpipeParamsV220(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint16_t srcStrideIn,
                      const uint32_t dstStrideIn, const bool reluEnIn, const QuantMode_t quantPreIn,
                      const int64_t deqScalarIn, const uint16_t ndNumIn, const uint16_t srcNdStrideIn,
                      const uint16_t dstNdStrideIn, const uint8_t unitFlagIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), quantPre(quantPreIn),
          deqScalar(deqScalarIn), ndNum(ndNumIn), srcNdStride(srcNdStrideIn), dstNdStride(dstNdStrideIn),
          reluEn(reluEnIn), unitFlag(unitFlagIn)
    {}
    uint16_t nSize = 0;      // N extent of the source NZ matrix
    uint16_t mSize = 0;      // M extent
    uint16_t srcStride = 0;  // start-to-start of adjacent N-fractal columns in L0C, units of 16 elements
    uint32_t dstStride = 0;  // ROW_MAJOR: elements per GM row; NZ: 32 B units between columns
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;  // 1024 B units
    uint16_t dstNdStride = 0;  // elements
    bool reluEn = false;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;
};

template <typename T>
void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    Core(loc);
    LocalAccess(src.ref_, sizeof(T), 0, 0, "LoadData", "src", loc);
    LocalAccess(dst.ref_, sizeof(T), 0, 0, "LoadData", "dst", loc);
    CheckMem(src.ref_, Mem::L1, "LoadData", "src", loc);
    if (dst.ref_.block->mem != Mem::L0A && dst.ref_.block->mem != Mem::L0B)
        Fail(loc, Str("LoadData: dst must be an A2 (L0A) or B2 (L0B) tensor, not ", PosName(dst.ref_.block->pos)));
    if (p.ifTranspose && sizeof(T) != 2)
        Fail(loc, "LoadData: ifTranspose with LoadData2DParams is for 16-bit types (use LoadDataWithTranspose)");
    if (p.repeatTimes == 0) return;
    CheckLocalAlign(src.ref_, 32, "LoadData", "src", loc);
    CheckLocalAlign(dst.ref_, 512, "LoadData", "dst", loc);
    constexpr uint64_t F = 512;  // fractal bytes
    const uint64_t r = p.repeatTimes;
    const uint8_t* s = LocalAccessBytes(src.ref_, 0, (p.startIndex + (r - 1) * p.srcStride + 1) * F, "LoadData", "src", loc);
    uint8_t* d = LocalAccessBytes(dst.ref_, 0, ((r - 1) * (1 + p.dstGap) + 1) * F, "LoadData", "dst", loc);
    for (uint64_t i = 0; i < r; ++i) {
        const uint8_t* sf = s + (p.startIndex + i * p.srcStride) * F;
        uint8_t* df = d + i * (1 + p.dstGap) * F;
        if (!p.ifTranspose) {
            PropagateCopy(df, sf, F, "LoadData", "src", loc);
        } else {  // 16 x 16 two-byte elements, transposed
            for (int row = 0; row < 16; ++row)
                for (int col = 0; col < 16; ++col)
                    PropagateElems(df + (col * 16 + row) * 2, 2, sf + (row * 16 + col) * 2, 2, 1, "LoadData", "src", loc);
        }
        if (!p.ifTranspose) {
            std::memmove(df, sf, F);
            continue;
        }
        uint8_t tmp[F];
        for (int row = 0; row < 16; ++row)
            for (int col = 0; col < 16; ++col) std::memcpy(tmp + (col * 16 + row) * 2, sf + (row * 16 + col) * 2, 2);
        std::memcpy(df, tmp, F);
    }
    Count(DMA_L1_TO_L0);
    Count(L1_TO_L0_BYTES, r * F);
}

template <typename T>
struct InitConstValueParams {
    InitConstValueParams() {}
    InitConstValueParams(const uint16_t repeatTimesIn, const uint16_t blockNumIn, const uint16_t dstGapIn,
                         const T initValueIn)
        : repeatTimes(repeatTimesIn), blockNum(blockNumIn), dstGap(dstGapIn), initValue(initValueIn)
    {}
    uint16_t repeatTimes = 0;  // iterations
    uint16_t blockNum = 0;     // (2201) blocks an iteration writes: 32 B in A1 / B1, 512 B in A2 / B2
    uint16_t dstGap = 0;       // (2201) blocks between iterations, end-to-start
    T initValue{};
};

// Fills an A1 / B1 (L1) or A2 / B2 (L0A / L0B) tensor with a constant (devkit InitConstValue).
// Arch 2002 (Atlas inference AI Core): half / int16_t / uint16_t, repeatTimes <= 255 iterations
// of 512 B; blockNum and dstGap are not configurable there (refused when set). Arch 2201:
// iterations of blockNum blocks, dstGap blocks apart.
template <typename T>
void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<T>& p,
                    megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    const char* api = "InitConstValue";
    Core(loc);
    LocalAccess(dst.ref_, sizeof(T), 0, 0, api, "dst", loc);
    const Mem m = dst.ref_.block->mem;
    if (m != Mem::L1 && m != Mem::L0A && m != Mem::L0B)
        Fail(loc, Str(api, ": dst must be an A1 / B1 / A2 / B2 tensor, not ", PosName(dst.ref_.block->pos)));
    const bool l1 = m == Mem::L1;
    CheckLocalAlign(dst.ref_, l1 ? 32 : 512, api, "dst", loc);
    uint64_t unit = 512, blocks = 1, gap = 0;
    if (IsArch2201()) {
        unit = l1 ? 32 : 512;
        blocks = p.blockNum;
        gap = p.dstGap;
    } else {
        if (!(std::is_same_v<T, half> || std::is_same_v<T, int16_t> || std::is_same_v<T, uint16_t>))
            Fail(loc, Str(api, ": ", TypeName<T>(), " is not supported on arch 2002 (half, int16_t, uint16_t)"));
        if (p.repeatTimes > 255) Fail(loc, Str(api, ": repeatTimes ", p.repeatTimes, " exceeds 255 on arch 2002"));
        if (p.blockNum != 0 || p.dstGap != 0)
            Fail(loc, Str(api, ": blockNum / dstGap are not configurable on arch 2002 (each iteration is 512 B)"));
    }
    if (p.repeatTimes == 0 || blocks == 0) return;
    const uint64_t run = blocks * unit, pitch = (blocks + gap) * unit;
    uint8_t* d = LocalAccessBytes(dst.ref_, 0, (p.repeatTimes - 1ull) * pitch + run, api, "dst", loc);
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        uint8_t* at = d + r * pitch;
        for (uint64_t i = 0; i < run / sizeof(T); ++i) std::memcpy(at + i * sizeof(T), &p.initValue, sizeof(T));
        MarkWritten(at, run);
    }
}

}  // namespace AscendC

namespace megafuse_emu {

// Where Mmad takes the initial C from.
enum class MmadInit : uint8_t { Zero, L0C, Bias };

inline void PropagateMmad(uint8_t* out, const uint8_t* a, const uint8_t* b, const uint8_t* bias, uint64_t m1,
                          uint64_t k1, uint64_t n1, uint64_t c0, uint64_t k, uint32_t out_es, uint32_t a_es,
                          uint32_t b_es, MmadInit init, const Loc& loc, bool gemv = false)
{
    const uint64_t rows = gemv ? 1 : m1 * 16, cols = n1 * 16;
    std::vector<uint8_t> row_st(rows, kWritten), col_st(cols, kWritten);
    auto fold = [&](uint8_t& acc, const uint8_t* e, uint32_t es, const char* operand) {
        const uint8_t st = ElemState(e, es);
        if (st == kNeverWritten) NoteOrigin(e, es, "Mmad", operand, loc);
        if (st != kWritten) acc = kDerived;
    };
    for (uint64_t i = 0; i < rows; ++i)
        for (uint64_t kk = 0; kk < k && row_st[i] == kWritten; ++kk)
            fold(row_st[i], a + (gemv ? kk : ((i / 16) * k1 + kk / c0) * 16 * c0 + (i % 16) * c0 + kk % c0) * a_es,
                 a_es, "fm (A2 / L0A)");
    for (uint64_t j = 0; j < cols; ++j) {
        for (uint64_t kk = 0; kk < k && col_st[j] == kWritten; ++kk)
            fold(col_st[j], b + (((kk / c0) * n1 + j / 16) * c0 * 16 + (j % 16) * c0 + kk % c0) * b_es, b_es,
                 "filter (B2 / L0B)");
        if (init == MmadInit::Bias && col_st[j] == kWritten) fold(col_st[j], bias + j * out_es, out_es, "bias");
    }
    for (uint64_t i = 0; i < rows; ++i)
        for (uint64_t j = 0; j < cols; ++j) {
            uint8_t* e = out + (((j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16) * out_es;
            uint8_t st = row_st[i] == kWritten && col_st[j] == kWritten ? kWritten : kDerived;
            if (init == MmadInit::L0C && st == kWritten) fold(st, e, out_es, "dst (CO1 / L0C, accumulated)");
            SetState(e, out_es, st);
        }
}

// crow[j] += av * b[j]: one rounding per product and per sum (plain x86-64 has no FMA to contract to).
template <typename Acc>
__attribute__((optimize("tree-vectorize"))) inline void MmadAxpy(Acc* __restrict crow, Acc av,
                                                                 const Acc* __restrict b, uint64_t n)
{
    for (uint64_t j = 0; j < n; ++j) crow[j] += av * b[j];
}

// C (+)= A x B over the valid m x n x k region; fractal padding is ignored, as documented. With
// MmadInit::Bias, C(i, j) starts at bias[j] (a row vector broadcast over the m rows).
template <typename T, typename U, typename S>
void MmadCore(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& fm,
              const AscendC::LocalTensor<S>& filter, const AscendC::MmadParams& p, MmadInit init,
              const uint8_t* bias, const Loc& loc)
{
    static_assert(std::is_same_v<U, S>, "Mmad: left and right matrices must have the same type here");
    static_assert((std::is_same_v<T, float> &&
                   (std::is_same_v<U, half> || std::is_same_v<U, float> || std::is_same_v<U, bfloat16_t>)) ||
                      (std::is_same_v<T, int32_t> && std::is_same_v<U, int8_t>),
                  "Mmad is emulated for half/bfloat16_t/float -> float and int8_t -> int32_t");
    CoreState& c = *g_core;
    if (p.m == 0 || p.n == 0 || p.k == 0) return;  // documented: not executed
    // GEMV (devkit "Mmad计算关键特性说明/GEMV"): m = 1 on arch 2201 reads A as K contiguous
    // elements of L0A (512 B aligned); C keeps its NZ layout, row 0 of each 16 x 16 fractal valid.
    const bool gemv = p.m == 1 && IsArch2201();
    (void)c;
    CheckLocalAlign(fm.ref_, 512, "Mmad", "fm", loc);
    CheckLocalAlign(filter.ref_, 512, "Mmad", "filter", loc);
    CheckLocalAlign(dst.ref_, 256 * sizeof(T), "Mmad", "dst", loc);
    const uint64_t c0 = 32 / sizeof(U);
    const uint64_t m1 = (p.m + 15) / 16, k1 = (p.k + c0 - 1) / c0, n1 = (p.n + 15) / 16;
    const uint8_t* a = LocalAccess(fm.ref_, sizeof(U), 0, gemv ? k1 * c0 : m1 * k1 * 16 * c0, "Mmad", "fm", loc);
    const uint8_t* b = LocalAccess(filter.ref_, sizeof(S), 0, k1 * n1 * 16 * c0, "Mmad", "filter", loc);
    uint8_t* out = LocalAccess(dst.ref_, sizeof(T), 0, m1 * n1 * 256, "Mmad", "dst", loc);
    using Acc = std::conditional_t<std::is_same_v<T, float>, float, int32_t>;
    // Uninitialized-read tracking (init_check.h): the cube writes whole 16 x 16 output fractals;
    // output (i, j) is "written" when row i of A and column j of B over the k used (and the
    // accumulated C or the bias) are, "derived" otherwise. Rows past m computed from never-
    // written padding are harmless until they are copied out, where the check fires.
    PropagateMmad(out, a, b, bias, m1, k1, n1, c0, p.k, sizeof(T), sizeof(U), sizeof(S), init, loc, gemv);
    // The operands unpacked once (A as m rows of k, B as k rows of n, in Acc), then C row by row:
    // c(i, j) = init + sum over kk in increasing order of a(i, kk) * b(kk, j) -- the additions of
    // one dot product per element in the same order, arranged so the inner loop runs over j.
    const uint64_t m = p.m, n = p.n, k = p.k;
    std::vector<Acc> av(m * k), bv(k * n), crow(n);
    for (uint64_t i = 0; i < m; ++i)
        for (uint64_t kk = 0; kk < k; ++kk)
            av[i * k + kk] = static_cast<Acc>(static_cast<CalcT<U>>(Ld<U>(
                a, gemv ? kk : ((i / 16) * k1 + kk / c0) * 16 * c0 + (i % 16) * c0 + kk % c0)));
    for (uint64_t kk = 0; kk < k; ++kk)
        for (uint64_t j = 0; j < n; ++j)
            bv[kk * n + j] = static_cast<Acc>(static_cast<CalcT<S>>(Ld<S>(
                b, ((kk / c0) * n1 + j / 16) * c0 * 16 + (j % 16) * c0 + kk % c0)));
    auto cidx = [&](uint64_t i, uint64_t j) { return ((j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16; };
    for (uint64_t i = 0; i < m; ++i) {
        for (uint64_t j = 0; j < n; ++j)
            crow[j] = init == MmadInit::L0C    ? static_cast<Acc>(Ld<T>(out, cidx(i, j)))
                      : init == MmadInit::Bias ? static_cast<Acc>(Ld<T>(bias, j))
                                               : Acc(0);
        for (uint64_t kk = 0; kk < k; ++kk) MmadAxpy(crow.data(), av[i * k + kk], &bv[kk * n], n);
        for (uint64_t j = 0; j < n; ++j) St<T>(out, cidx(i, j), static_cast<T>(crow[j]));
    }
    Count(MMAD_INSTRUCTIONS);
    Count(CUBE_FRACTALS, m1 * k1 * n1);
}

template <typename T, typename U, typename S>
void MmadOperands(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& fm,
                  const AscendC::LocalTensor<S>& filter, const Loc& loc)
{
    LocalAccess(dst.ref_, sizeof(T), 0, 0, "Mmad", "dst", loc);
    LocalAccess(fm.ref_, sizeof(U), 0, 0, "Mmad", "fm", loc);
    LocalAccess(filter.ref_, sizeof(S), 0, 0, "Mmad", "filter", loc);
    CheckMem(dst.ref_, Mem::L0C, "Mmad", "dst", loc);
    CheckMem(fm.ref_, Mem::L0A, "Mmad", "fm", loc);
    CheckMem(filter.ref_, Mem::L0B, "Mmad", "filter", loc);
}

}  // namespace megafuse_emu

namespace AscendC {

// Initial C as the devkit computes it on arch 2201 and 2002 alike: C starts at 0 when
// cmatrixInitVal && !isBias; otherwise from L0C (cmatrixSource = false) or, with cmatrixSource =
// true (arch 2201), from the bias row at the start of the bias table (C2 address 0).
template <typename T, typename U, typename S>
void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter, const MmadParams& p,
          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    CoreState& c = Core(loc);
    MmadOperands(dst, fm, filter, loc);
    const bool zero = p.cmatrixInitVal && !p.isBias;
    if (!zero && p.cmatrixSource) {
        if (!IsArch2201())
            Fail(loc, Str("Mmad: cmatrixSource = true (initial C from the bias table) is not available on ", c.soc_name,
                          " (arch ", c.soc.arch, " has no bias table)"));
        // No tensor names the bias: it is read from the start of the bias table (C2 address 0),
        // where the devkit's mmad sample (SCENARIO_NUM=1) puts it; the address is not documented.
        std::vector<uint8_t>& bt = c.mem[static_cast<int>(Mem::BT)];
        const uint64_t need = static_cast<uint64_t>(p.n) * sizeof(T);
        if (bt.empty()) Fail(loc, "Mmad: cmatrixSource = true but this core has no bias table");
        if (need > bt.size())
            Fail(loc, Str("Mmad: cmatrixSource = true reads ", p.n, " bias elements (", need, " B) from the bias table "
                          "of ", bt.size(), " B"));
        MmadCore(dst, fm, filter, p, MmadInit::Bias, p.m && p.k ? bt.data() : nullptr, loc);
        return;
    }
    MmadCore(dst, fm, filter, p, zero ? MmadInit::Zero : MmadInit::L0C, nullptr, loc);
}

// C = bias + A x B (arch 2201). bias in C2 (bias table): C(i, j) starts at bias[j] for every row
// i (n elements of the dst type: float for half/bfloat16_t/float inputs, int32_t for int8_t).
// The devkit takes cmatrixInitVal from params (true would start C at 0 and ignore the bias, so
// it is refused) and derives cmatrixSource from the bias position; a CO1 bias must be dst itself
// (accumulate in L0C).
template <typename T, typename U, typename S, typename V>
void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter, const LocalTensor<V>& bias,
          const MmadParams& p, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    static_assert(std::is_same_v<T, V>, "Mmad: the bias type must be the dst type (float, or int32_t for int8_t)");
    CoreState& c = Core(loc);
    MmadOperands(dst, fm, filter, loc);
    LocalAccess(bias.ref_, sizeof(V), 0, 0, "Mmad", "bias", loc);
    if (!IsArch2201())
        Fail(loc, Str("Mmad with a bias tensor is not available on ", c.soc_name, " (arch ", c.soc.arch,
                      " has no bias table): add the bias in UB after the CO1 -> CO2 copy"));
    if (p.cmatrixInitVal)
        Fail(loc, "Mmad with a bias tensor: cmatrixInitVal = true starts C at 0 and the bias is ignored; "
                  "set cmatrixInitVal = false");
    const Mem bm = bias.ref_.block->mem;
    if (bm == Mem::L0C) {
        if (LocalAddr(bias.ref_) != LocalAddr(dst.ref_))
            Fail(loc, "Mmad: a CO1 bias other than dst itself is not emulated (pass dst to accumulate in L0C)");
        MmadCore(dst, fm, filter, p, MmadInit::L0C, nullptr, loc);
        return;
    }
    if (bm != Mem::BT)
        Fail(loc, Str("Mmad: bias must be a C2 (bias table) or CO1 tensor, not ", PosName(bias.ref_.block->pos)));
    CheckLocalAlign(bias.ref_, 128, "Mmad", "bias", loc);
    const uint8_t* bp = p.m && p.n && p.k ? LocalAccess(bias.ref_, sizeof(V), 0, p.n, "Mmad", "bias", loc) : nullptr;
    MmadCore(dst, fm, filter, p, MmadInit::Bias, bp, loc);
}

// L0C (NZ, float/int32) -> GM, with optional ReLU and fp32 -> fp16/bf16 conversion; the
// config picks the GM layout: CFG_ROW_MAJOR (NZ2ND, default) or CFG_NZ.
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& p,
             megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using namespace megafuse_emu;
    static_assert(config.format != CO2Layout::COLUMN_MAJOR, "Fixpipe CFG_COLUMN_MAJOR is not emulated");
    CoreState& c = Core(loc);
    if (!IsArch2201())
        Fail(loc, Str("Fixpipe with FixpipeParamsV220 is not available on ", c.soc_name, " (arch ", c.soc.arch, ")"));
    LocalAccess(src.ref_, sizeof(U), 0, 0, "Fixpipe", "src", loc);
    CheckMem(src.ref_, Mem::L0C, "Fixpipe", "src", loc);
    CheckLocalAlign(src.ref_, 64, "Fixpipe", "src", loc);
    if (p.isChannelSplit) Fail(loc, "Fixpipe: isChannelSplit is not emulated");
    const QuantMode_t q = p.quantPre;
    if (q == QuantMode_t::NoQuant) {
        if (!std::is_same_v<T, U>)
            Fail(loc, Str("Fixpipe: NoQuant needs dst and src of the same type (", TypeName<T>(), " vs ", TypeName<U>(),
                          "); use quantPre F322F16/F322BF16 to convert"));
    } else if (q == QuantMode_t::F322F16) {
        if (!(std::is_same_v<U, float> && std::is_same_v<T, half>)) Fail(loc, "Fixpipe: F322F16 needs float src, half dst");
    } else if (q == QuantMode_t::F322BF16) {
        if (!(std::is_same_v<U, float> && std::is_same_v<T, bfloat16_t>))
            Fail(loc, "Fixpipe: F322BF16 needs float src, bfloat16_t dst");
    } else {
        Fail(loc, Str("Fixpipe: quantPre mode ", static_cast<int>(q), " is not emulated"));
    }
    const bool nz = config.format == CO2Layout::NZ;
    const uint64_t nd = nz ? 1 : p.ndNum;
    if (nd == 0 || p.mSize == 0 || p.nSize == 0) return;
    if (nz && p.nSize % 16 != 0) Fail(loc, Str("Fixpipe (NZ): nSize ", p.nSize, " must be a multiple of 16"));
    const uint64_t src_nd = p.srcNdStride * 1024ull / sizeof(U);
    auto src_index = [&](uint64_t t, uint64_t i, uint64_t j) {
        return t * src_nd + ((j / 16) * p.srcStride + i) * 16 + j % 16;
    };
    auto dst_index = [&](uint64_t t, uint64_t i, uint64_t j) {
        if (nz) return (j / 16) * p.dstStride * (32 / sizeof(T)) + i * 16 + j % 16;
        return t * p.dstNdStride + i * p.dstStride + j;
    };
    uint64_t src_hi = 0, dst_hi = 0;
    const uint64_t m_last = p.mSize - 1u, n_last = p.nSize - 1u;
    for (uint64_t t : {uint64_t(0), nd - 1})
        for (uint64_t i : {uint64_t(0), m_last})
            for (uint64_t j : {uint64_t(0), n_last}) {
                src_hi = std::max(src_hi, src_index(t, i, j));
                dst_hi = std::max(dst_hi, dst_index(t, i, j));
            }
    const uint8_t* s = LocalAccess(src.ref_, sizeof(U), 0, src_hi + 1, "Fixpipe", "src", loc);
    uint8_t* d = dst.Access(0, dst_hi + 1, "Fixpipe", loc);
    for (uint64_t t = 0; t < nd; ++t)
        for (uint64_t i = 0; i < p.mSize; ++i)
            for (uint64_t j = 0; j < p.nSize; ++j) {
                CheckWrittenAt(s, src_index(t, i, j), sizeof(U), "Fixpipe", "src (CO1 / L0C)", loc);
                U v = Ld<U>(s, src_index(t, i, j));
                if (p.reluEn && v < U(0)) v = U(0);
                const T out = static_cast<T>(v);
                GmStore(d + dst_index(t, i, j) * sizeof(T), reinterpret_cast<const uint8_t*>(&out), sizeof(T),
                        "Fixpipe", loc);
            }
    Count(DMA_L0C_TO_GM);
    Count(GM_WRITE_BYTES, nd * p.mSize * p.nSize * sizeof(T));
}

}  // namespace AscendC
