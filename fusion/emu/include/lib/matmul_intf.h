// The high-level Matmul API (devkit lib/matmul_intf.h) as far as the devkit's matmul samples use
// it with ND matrices in GM: Matmul<MatmulType<GM, ND, A>, ..B, ..C, ..Bias, CFG>, REGIST_MATMUL_OBJ,
// SetTensorA / SetTensorB (with transposes), SetBias / DisableBias, SetTail, SetOrgShape,
// SetSingleShape, IterateAll, Iterate + GetTensorC (to GM), End.
//
// What it models: the result. C (m x n) = A (m x k) . B (k x n) (+ bias row) over the single-core
// block (TCubeTiling singleCoreM/N/K, or SetTail / SetSingleShape), accumulated in float (int32 for
// int8), converted to C's type once (after SetQuantScalar / SetQuantVector for int32), written into
// GM with the org strides (ND, ND_ALIGN or NZ) or into UB. Every GM range is bounds-checked like a
// GlobalTensor access; enAtomic and the core's SetAtomicAdd combine with GM. Also: IterateBatch /
// IterateNBatch (matmul_batch.h), a 4:2 sparse B (matmul_sparse.h), CopyA1 / CopyB1 callbacks
// (matmul_callback.h), the triangle / NBuffer33 policies (matmul_policy.h), constant tilings
// (matmul_static_tiling.h). What it does not: the L1 / L0 data path the library drives (no cube
// counters, no buffer budget). On a MIX launch the AIC serves the AIVs' requests in the devkit;
// here each AIV computes its own request and REGIST_MATMUL_OBJ ends the AIC's part of the kernel,
// as the devkit's server loop does (with ASCENDC_CUBE_ONLY the registering core runs it).
#pragma once

#include <vector>

#include "kernel_operator.h"
#include "kernel_tiling/kernel_tiling.h"

#include "lib/matmul/matmul_config.h"
#include "lib/matmul/matmul_utils.h"
#include "lib/matmul/matmul_static_tiling.h"
#include "lib/matmul/matmul_policy.h"
#include "lib/matmul/matmul_batch.h"
#include "lib/matmul/matmul_callback.h"

// The devkit marks the kernel's workspace parameter with it (the KFC message area of a MIX
// Matmul); it changes nothing for the emulation.
#define __kfc_workspace__

namespace AscendC {

struct int4b_t;  // the devkit's 4-bit integer (megafuse_emu/int4.h): two per byte, low nibble first

using ::CubeFormat;
using ::LayoutMode;
using ::MatmulConfig;
using ::MatmulConfigMode;
using ::MatmulShapeParams;
using ::IterateOrder;
using ::ScheduleType;
using ::BatchMode;
using ::GetMMConfig;
using ::GetNormalConfig;
using ::GetMDLConfig;
using ::GetSpecialMDLConfig;
using ::GetIBShareNormConfig;
using ::GetBasicConfig;

template <TPosition POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false,
          LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false>
struct MatmulType {
    constexpr static TPosition pos = POSITION;
    constexpr static CubeFormat format = FORMAT;
    using T = TYPE;
    constexpr static bool isTrans = ISTRANS;
    constexpr static LayoutMode layout = LAYOUT;
    constexpr static bool ibShare = IBSHARE;
};

}  // namespace AscendC

#include "lib/matmul/matmul_sparse.h"  // SparseMatmulType (after MatmulType)

namespace AscendC {

inline __gm__ uint8_t*& SysWorkspace()
{
    static uint8_t token[32];
    static __gm__ uint8_t* ws = token;  // the devkit's launch sets it; non-null, never dereferenced here
    return ws;
}

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE, const auto& MM_CFG = CFG_NORM,
          class MM_CB = MatmulCallBackFunc<nullptr, nullptr, nullptr>,
          template <const auto& = MM_CFG, typename...> class MM_POLICY = Impl::Detail::MatmulPolicy>
class Matmul {
    static constexpr Impl::Detail::EmuPolicy kPolicy = MM_POLICY<MM_CFG>::kEmuPolicy;

    using A = typename A_TYPE::T;
    using B = typename B_TYPE::T;
    using C = typename C_TYPE::T;
    using Bias = typename BIAS_TYPE::T;
    static constexpr bool kInt4 = std::is_same_v<A, int4b_t>;
    using Acc = std::conditional_t<std::is_same_v<A, int8_t> || kInt4, int32_t, float>;
    // Element idx of an operand as Acc (int4b_t: nibble idx of the packed bytes, sign-extended).
    template <typename T>
    static Acc Elem(const uint8_t* base, uint64_t idx)
    {
        if constexpr (std::is_same_v<T, int4b_t>) {
            const int v = (idx % 2 ? base[idx / 2] >> 4 : base[idx / 2]) & 0xF;
            return static_cast<Acc>(v >= 8 ? v - 16 : v);
        } else {
            return static_cast<Acc>(static_cast<megafuse_emu::CalcT<T>>(megafuse_emu::Ld<T>(base, idx)));
        }
    }
    // GM elements of an operand to bounds-check for `elems` values (int4b_t: bytes).
    template <typename T>
    static uint64_t Span(uint64_t elems) { return std::is_same_v<T, int4b_t> ? (elems + 1) / 2 : elems; }

public:
    void Init(const TCubeTiling* tiling, TPipe* pipe = nullptr, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        megafuse_emu::Core(loc);
        static_assert(A_TYPE::pos == TPosition::GM && B_TYPE::pos == TPosition::GM &&
                          (C_TYPE::pos == TPosition::GM || C_TYPE::pos == TPosition::CO1 || kCInUb),
                      "the emulated Matmul takes A and B in GM, C in GM, CO1 or UB (VECIN / VECCALC / VECOUT)");
        if ((A_TYPE::format != CubeFormat::ND && A_TYPE::format != CubeFormat::VECTOR) || B_TYPE::format != CubeFormat::ND ||
            (C_TYPE::format != CubeFormat::ND && C_TYPE::format != CubeFormat::ND_ALIGN &&
             !(C_TYPE::format == CubeFormat::NZ && (C_TYPE::pos == TPosition::GM || C_TYPE::pos == TPosition::CO1))))
            megafuse_emu::Fail(loc, "Matmul: only ND matrices (A also VECTOR, C also ND_ALIGN or NZ in GM) are emulated "
                                    "(other NZ / scalar formats are not)");
        CheckConfig(loc);
        if constexpr (MM_CB::kCopyOut)
            megafuse_emu::Fail(loc, "Matmul: a MatmulCallBackFunc DataCopyOut (L0C -> GM) callback is not emulated "
                                    "(the emulated Matmul has no L0C result to hand it)");
        if constexpr (MM_CB::kCopyA1 || MM_CB::kCopyB1) {
            if (pipe == nullptr) megafuse_emu::Fail(loc, "Matmul: CopyA1 / CopyB1 callbacks need the TPipe of REGIST_MATMUL_OBJ");
            pipe_ = pipe;
        }
        if constexpr (kStatic) {
            // A constant tiling: its fields replace the runtime ones (a null tiling takes them all).
            constexpr const MatmulApiStaticTiling& st = MM_CFG;
            if (tiling == nullptr && (st.singleCoreM < 0 || st.singleCoreN < 0 || st.singleCoreK < 0 || st.baseM < 0 ||
                                      st.baseN < 0 || st.baseK < 0))
                megafuse_emu::Fail(loc, "Matmul: a null tiling needs a constant tiling with singleCoreM/N/K and "
                                        "baseM/N/K fixed (GetMatmulApiTiling of a config that sets them)");
            if (tiling != nullptr) t_ = *tiling;
            auto take = [](int32_t& f, int32_t v) { if (v >= 0) f = v; };
            take(t_.M, st.M); take(t_.N, st.N); take(t_.Ka, st.Ka); take(t_.Kb, st.Kb);
            take(t_.singleCoreM, st.singleCoreM); take(t_.singleCoreN, st.singleCoreN);
            take(t_.singleCoreK, st.singleCoreK);
            take(t_.baseM, st.baseM); take(t_.baseN, st.baseN); take(t_.baseK, st.baseK);
            take(t_.iterateOrder, st.iterateOrder);
            if (tiling == nullptr) { t_.M = t_.singleCoreM; t_.N = t_.singleCoreN; t_.Ka = t_.Kb = t_.singleCoreK; }
        } else {
            if (tiling == nullptr) megafuse_emu::Fail(loc, "Matmul: null tiling");
            t_ = *tiling;
        }
        if (CfgOrder() != IterateOrder::UNDEF) t_.iterateOrder = CfgOrder() == IterateOrder::ORDER_M ? 0 : 1;
        orgM_ = t_.M; orgN_ = t_.N; orgKa_ = t_.Ka; orgKb_ = t_.Kb;
        m_ = t_.singleCoreM; n_ = t_.singleCoreN; k_ = t_.singleCoreK;
        init_ = true;
    }
    void SetOrgShape(int orgM, int orgN, int orgK) { SetOrgShape(orgM, orgN, orgK, orgK); }
    void SetOrgShape(int orgM, int orgN, int orgKa, int orgKb, int = 0)
    {
        orgM_ = orgM; orgN_ = orgN; orgKa_ = orgKa; orgKb_ = orgKb;
    }
    void SetSingleShape(int m, int n, int k) { m_ = m; n_ = n; k_ = k; }
    void SetTail(int tailM = -1, int tailN = -1, int tailK = -1)
    {
        if (tailM > 0) m_ = tailM;
        if (tailN > 0) n_ = tailN;
        if (tailK > 0) k_ = tailK;
    }
    void SetTensorA(const GlobalTensor<A>& gm, bool isTransposeA = false) { a_ = gm; transA_ = isTransposeA; hasA_ = true; }
    void SetTensorB(const GlobalTensor<B>& gm, bool isTransposeB = false) { b_ = gm; transB_ = isTransposeB; hasB_ = true; }
    void SetBias(const GlobalTensor<Bias>& gm) { bias_ = gm; hasBias_ = true; }
    void DisableBias() { hasBias_ = false; }
    // The index matrix of a sparse B (SparseMatmulType): 2-bit positions, NZ in 16 x 8-byte fractals.
    void SetSparseIndex(const GlobalTensor<uint8_t>& index) { index_ = index; hasIndex_ = true; }
    // Dequantisation of an int32 result on its way out (devkit SetQuantScalar / SetQuantVector):
    // C = int32 * scale, the scale a float in the low 32 bits of each uint64 (one for all
    // columns, or one per column from GM); the fixpipe keeps its top 19 bits (sign, exponent,
    // 10 mantissa bits: the 0xFFFFE000 mask the devkit's quant sample applies to its golden).
    void SetQuantScalar(uint64_t scalar) { quant_ = 1; quantScalar_ = scalar; }
    void SetQuantVector(const GlobalTensor<uint64_t>& v) { quant_ = 2; quantVec_ = v; }
    // The two values handed to the CopyA1 / CopyB1 callbacks (tilingPtr, dataPtr).
    void SetUserDefInfo(uint64_t v) { userDefInfo_ = v; }
    void SetSelfDefineData(uint64_t v) { selfDefineData_ = v; }
    void ClearBias() { hasBias_ = false; }
    void SetWorkspace(__gm__ const uint8_t*, int) {}
    // The GM area the devkit's async Iterate / GetTensorC<false> stage blocks in; unused here.
    // (IterateNBatch writes C there.)
    template <typename W>
    void SetWorkspace(const GlobalTensor<W>& w)
    {
        if constexpr (std::is_same_v<W, C>) { ws_ = w; hasWs_ = true; }
    }

    template <bool sync = true>
    void IterateAll(const GlobalTensor<C>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    bool waitIterateAll = false, bool fakeMsg = false, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        (void)enSequentialWrite; (void)waitIterateAll; (void)fakeMsg;
        Compute(loc);
        if constexpr (kPolicy == Impl::Detail::EmuPolicy::TrianUpper || kPolicy == Impl::Detail::EmuPolicy::TrianLower) {
            // Only the base blocks on one side of the block diagonal (matmul_policy.h).
            const int mb = (m_ + t_.baseM - 1) / t_.baseM, nb = (n_ + t_.baseN - 1) / t_.baseN;
            for (int bm = 0; bm < mb; ++bm)
                for (int bn = 0; bn < nb; ++bn) {
                    if (kPolicy == Impl::Detail::EmuPolicy::TrianUpper ? bm > bn : bm < bn) continue;
                    const int r0 = bm * t_.baseM, c0 = bn * t_.baseN;
                    Store(gm, r0, c0, std::min(t_.baseM, m_ - r0), std::min(t_.baseN, n_ - c0), RowStrideC(), enAtomic, loc);
                }
        } else {
            Store(gm, 0, 0, m_, n_, RowStrideC(), enAtomic, loc);
        }
        iter_ = -1;
    }

    // IterateBatch: batchC = max(batchA, batchB) matmuls of the single-core shape, each from its
    // batch's place in A, B, C (and bias) by the MatmulTypes' layouts (matmul_batch.h).
    void IterateBatch(const GlobalTensor<C>& gm, uint32_t batchA, uint32_t batchB, bool enSequentialWrite,
                      uint32_t matrixStrideA = 0, uint32_t matrixStrideB = 0, uint32_t matrixStrideC = 0,
                      bool enPartialSum = false, uint8_t enAtomic = 0, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        (void)matrixStrideA; (void)matrixStrideB; (void)matrixStrideC; (void)enPartialSum;
        Batches(gm, 1, batchA, batchB, enSequentialWrite, enAtomic, loc);
    }
    // IterateNBatch (MatmulConfig.isNBatch): batchLoop IterateBatch calls over consecutive batches,
    // C into the SetWorkspace tensor; the asynchronous form computes at the call too, and each
    // GetBatchTensorC<false> then takes one loop's result (already in the workspace).
    template <bool sync = true>
    void IterateNBatch(uint32_t batchLoop, uint32_t batchA, uint32_t batchB, bool enSequentialWrite,
                       uint32_t matrixStrideA = 0, uint32_t matrixStrideB = 0, uint32_t matrixStrideC = 0,
                       megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        (void)matrixStrideA; (void)matrixStrideB; (void)matrixStrideC;
        if constexpr (!Cfg().isNBatch)
            megafuse_emu::Fail(loc, "Matmul::IterateNBatch needs a MatmulConfig with isNBatch = true");
        if (!hasWs_) megafuse_emu::Fail(loc, "Matmul::IterateNBatch: SetWorkspace(GlobalTensor) must give the C area first");
        Batches(ws_, int(batchLoop), batchA, batchB, enSequentialWrite, 0, loc);
        nbatchLeft_ = sync ? 0 : int(batchLoop);
    }
    template <bool sync = true>
    void GetBatchTensorC(uint32_t batchA, uint32_t batchB, bool enSequentialWrite = false,
                         megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        (void)batchA; (void)batchB; (void)enSequentialWrite;
        if (nbatchLeft_ <= 0)
            megafuse_emu::Fail(loc, "Matmul::GetBatchTensorC<false> without a pending IterateNBatch<false> loop");
        --nbatchLeft_;
    }

    void Batches(const GlobalTensor<C>& gm, int loops, uint32_t batchA, uint32_t batchB, bool enSequentialWrite,
                 uint8_t enAtomic, const megafuse_emu::Loc& loc)
    {
        if (batchA == 0 || batchB == 0 || (std::max(batchA, batchB) % std::min(batchA, batchB)) != 0)
            megafuse_emu::Fail(loc, megafuse_emu::Str("Matmul::IterateBatch: batchA ", batchA, " and batchB ", batchB,
                                                      " must be non-zero and one a multiple of the other"));
        const GlobalTensor<A> a0 = a_;
        const GlobalTensor<B> b0 = b_;
        const GlobalTensor<Bias> bias0 = bias_;
        const int saved[5] = {orgM_, orgKa_, orgN_, orgKb_, ldc_};
        const uint32_t batchC = std::max(batchA, batchB);
        for (uint32_t i = 0; i < batchC * uint32_t(loops); ++i) {
            const megafuse_emu::BatchView v = megafuse_emu::BatchAt(
                A_TYPE::layout, B_TYPE::layout, C_TYPE::layout, t_, m_, n_, k_, transA_, transB_, Cfg().isBiasBatch,
                int(i / batchC), int(i % batchC), int(batchA), int(batchB));
            a_ = a0[v.aOff];
            b_ = b0[v.bOff];
            if (hasBias_) bias_ = bias0[v.biasOff];
            (transA_ ? orgM_ : orgKa_) = v.lda;
            (transB_ ? orgKb_ : orgN_) = v.ldb;
            ldc_ = enSequentialWrite ? n_ : v.ldc;
            Compute(loc);
            Store(gm[enSequentialWrite ? uint64_t(i) * m_ * n_ : v.cOff], 0, 0, m_, n_, RowStrideC(), enAtomic, loc);
        }
        a_ = a0; b_ = b0; bias_ = bias0;
        orgM_ = saved[0]; orgKa_ = saved[1]; orgN_ = saved[2]; orgKb_ = saved[3]; ldc_ = saved[4];
        iter_ = -1;
    }

    // Iterate: the next baseM x baseN block of C (M first for iterateOrder 0, N first for 1).
    template <bool sync = true>
    bool Iterate(bool enPartialSum = false, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        (void)enPartialSum;
        static_assert(kPolicy == Impl::Detail::EmuPolicy::Default,
                      "Iterate is not supported with this MatmulPolicy (devkit: IterateAll only)");
        if constexpr (!sync) {
            // Asynchronous: one call starts every block; each GetTensorC<false> takes the next one.
            Compute(loc);
            iter_ = -1;
            async_ = 0;
            return true;
        }
        if (iter_ < 0) {
            Compute(loc);
            iter_ = 0;
        } else {
            ++iter_;
        }
        const int mb = (m_ + t_.baseM - 1) / t_.baseM, nb = (n_ + t_.baseN - 1) / t_.baseN;
        // isPartialOutput: every block in turn, each as baseK-wide partial sums, K chunk by chunk.
        const int kb = Cfg().isPartialOutput ? (k_ + t_.baseK - 1) / t_.baseK : 1;
        if (iter_ >= mb * nb * kb) {
            iter_ = -1;
            return false;
        }
        const int blk = iter_ / kb;
        bm_ = t_.iterateOrder == 0 ? blk % mb : blk / nb;
        bn_ = t_.iterateOrder == 0 ? blk / mb : blk % nb;
        if (Cfg().isPartialOutput) PartialBlock(iter_ % kb, loc);
        return true;
    }
    // Iterate with C in CO1 (pure Cube mode): the next baseM x baseN block goes into the given L0C
    // tensor in NZ (16 x 16 fractals, column blocks of Align16(baseM) rows); false when all are done.
    bool Iterate(bool enPartialSum, const LocalTensor<C>& co1, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        if constexpr (C_TYPE::pos != TPosition::CO1)
            megafuse_emu::Fail(loc, "Matmul::Iterate(enPartialSum, LocalTensor) needs C's MatmulType in CO1");
        if (!Iterate<true>(enPartialSum, loc)) return false;
        megafuse_emu::CheckMem(co1.ref_, megafuse_emu::Mem::L0C, "Matmul::Iterate", "C (CO1)", loc);
        const int r0 = bm_ * t_.baseM, c0 = bn_ * t_.baseN;
        const int rows = std::min(t_.baseM, m_ - r0), cols = std::min(t_.baseN, n_ - c0);
        const uint64_t alignM = (uint64_t(t_.baseM) + 15) / 16 * 16, alignN = (uint64_t(cols) + 15) / 16 * 16;
        uint8_t* out = megafuse_emu::LocalAccess(co1.ref_, sizeof(C), 0, alignM * alignN, "Matmul::Iterate", "C (CO1)", loc);
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j) {
                const uint64_t at = (uint64_t(j / 16) * alignM + i) * 16 + j % 16;
                megafuse_emu::St<C>(out, at, Out(r0 + i, c0 + j, loc));
                megafuse_emu::MarkWritten(out + at * sizeof(C), sizeof(C));
            }
        return true;
    }

    template <bool sync = true>
    void GetTensorC(const GlobalTensor<C>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        if (!sync) NextAsyncBlock(loc);
        if (iter_ < 0) megafuse_emu::Fail(loc, "Matmul::GetTensorC without a successful Iterate()");
        const int r0 = bm_ * t_.baseM, c0 = bn_ * t_.baseN;
        const int rows = std::min(t_.baseM, m_ - r0), cols = std::min(t_.baseN, n_ - c0);
        if (enSequentialWrite) Store(gm, r0, c0, rows, cols, t_.baseN, enAtomic, loc, true);
        else Store(gm, r0, c0, rows, cols, RowStrideC(), enAtomic, loc);
    }
    // The current baseM x baseN block into a UB tensor (C in VECIN / VECCALC / VECOUT), rows
    // baseN elements apart (ND), the tail block's valid rows x columns only.
    template <bool sync = true>
    void GetTensorC(const LocalTensor<C>& ub, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        (void)enSequentialWrite;
        if constexpr (!kCInUb)
            megafuse_emu::Fail(loc, "Matmul::GetTensorC into a LocalTensor needs C's MatmulType in VECIN / VECCALC / VECOUT");
        if (enAtomic != 0) megafuse_emu::Fail(loc, "Matmul::GetTensorC: enAtomic applies to GM outputs only");
        if (!sync) NextAsyncBlock(loc);
        if (iter_ < 0) megafuse_emu::Fail(loc, "Matmul::GetTensorC without a successful Iterate()");
        const int r0 = bm_ * t_.baseM, c0 = bn_ * t_.baseN;
        const int rows = std::min(t_.baseM, m_ - r0), cols = std::min(t_.baseN, n_ - c0);
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j)
                ub.SetValue(static_cast<uint32_t>(i * t_.baseN + j), Out(r0 + i, c0 + j, loc), loc);
    }
    void End() { iter_ = -1; async_ = -1; }

    // IterateAll<false>: the emulation finishes the work at the call, so there is nothing to wait for.
    void WaitIterateAll() {}

private:
    static constexpr bool kCInUb =
        C_TYPE::pos == TPosition::VECIN || C_TYPE::pos == TPosition::VECCALC || C_TYPE::pos == TPosition::VECOUT;

    // GetTensorC<false> after Iterate<false>: the next block in iterate order.
    void NextAsyncBlock(const megafuse_emu::Loc& loc)
    {
        if (async_ < 0) megafuse_emu::Fail(loc, "Matmul::GetTensorC<false> without Iterate<false>() before it");
        const int mb = (m_ + t_.baseM - 1) / t_.baseM, nb = (n_ + t_.baseN - 1) / t_.baseN;
        if (async_ >= mb * nb)
            megafuse_emu::Fail(loc, megafuse_emu::Str("Matmul::GetTensorC<false>: all ", mb * nb, " blocks were taken"));
        iter_ = async_++;
        bm_ = t_.iterateOrder == 0 ? iter_ % mb : iter_ / nb;
        bn_ = t_.iterateOrder == 0 ? iter_ / mb : iter_ % nb;
    }

    static constexpr bool kStatic = std::is_same_v<std::decay_t<decltype(MM_CFG)>, MatmulApiStaticTiling>;
    // The MatmulConfig: the template argument itself, or the cfg of a constant tiling.
    static constexpr const MatmulConfig& Cfg()
    {
        if constexpr (kStatic) return MM_CFG.cfg;
        else return MM_CFG;
    }
    static constexpr IterateOrder CfgOrder()
    {
        if constexpr (std::is_same_v<std::decay_t<decltype(MM_CFG)>, MatmulConfig> || kStatic) return Cfg().iterateOrder;
        else return IterateOrder::UNDEF;
    }
    // The MatmulConfig fields that change the result and are not emulated (matmul_config.h).
    static void CheckConfig(const megafuse_emu::Loc& loc)
    {
        if constexpr (std::is_same_v<std::decay_t<decltype(MM_CFG)>, MatmulConfig> || kStatic) {
            constexpr const MatmulConfig& cfg = Cfg();
            // Channel split is the 16 x 8 fractal of a float NZ output (devkit MatmulConfig page).
            const bool splitOk = C_TYPE::format == CubeFormat::NZ && std::is_same_v<C, float>;
            const char* what = cfg.isEnableChannelSplit && !splitOk ? "isEnableChannelSplit (other than a float NZ C)"
                               : cfg.enableRelu           ? "enableRelu"
                               : cfg.intraBlockPartSum    ? "intraBlockPartSum"
                               : cfg.decompMode != DecompressionMode::DECOMP_NONE ? "decompMode"
                                                                                     : nullptr;
            if (what != nullptr)
                megafuse_emu::Fail(loc, megafuse_emu::Str("Matmul: MatmulConfig.", what, " changes the result and is "
                                                          "not emulated"));
        } else {
            static_assert(std::is_same_v<std::decay_t<decltype(MM_CFG)>, MatmulConfig>,
                          "the emulated Matmul takes a MatmulConfig or a MatmulApiStaticTiling");
        }
    }

    // C's rows in GM: orgN apart, or for ND_ALIGN orgN rounded up to 32 B (devkit "矩阵乘输出的N方向对齐").
    int RowStrideC() const
    {
        if (ldc_ > 0) return ldc_;  // IterateBatch's batch layout
        constexpr int per32 = static_cast<int>(32 / sizeof(C));
        return C_TYPE::format == CubeFormat::ND_ALIGN ? (orgN_ + per32 - 1) / per32 * per32 : orgN_;
    }

    void Compute(const megafuse_emu::Loc& loc)
    {
        if (A_TYPE::format == CubeFormat::VECTOR && m_ != 1)
            megafuse_emu::Fail(loc, megafuse_emu::Str("Matmul: A in VECTOR format is a single row (GEMV), but M is ", m_));
        if (!init_) megafuse_emu::Fail(loc, "Matmul used before REGIST_MATMUL_OBJ / Init");
        if (!hasA_ || !hasB_) megafuse_emu::Fail(loc, "Matmul: SetTensorA and SetTensorB must come before Iterate");
        if (m_ <= 0 || n_ <= 0 || k_ <= 0) megafuse_emu::Fail(loc, "Matmul: empty single-core shape");
        const uint64_t aSpan = transA_ ? uint64_t(k_ - 1) * orgM_ + m_ : uint64_t(m_ - 1) * orgKa_ + k_;
        const uint64_t bSpan = IsSparseType<B_TYPE>::value ? uint64_t(n_ - 1) * (orgKb_ / 2) + k_ / 2
                               : transB_ ? uint64_t(n_ - 1) * orgKb_ + k_ : uint64_t(k_ - 1) * orgN_ + n_;
        // With a CopyA1 / CopyB1 callback the operand comes from what the callback left in L1.
        std::vector<uint8_t> aL1, bL1;
        if constexpr (MM_CB::kCopyA1) aL1 = ThroughL1<A, TPosition::A1>(MM_CB::CopyA1Ptr, m_, k_, t_.baseM * std::max(1, t_.stepM),
                                                                    t_.baseK * std::max(1, t_.stepKa), a_.GetPhyAddr(), loc);
        if constexpr (MM_CB::kCopyB1) bL1 = ThroughL1<B, TPosition::B1>(MM_CB::CopyB1Ptr, k_, n_, t_.baseK * std::max(1, t_.stepKb),
                                                                    t_.baseN * std::max(1, t_.stepN), b_.GetPhyAddr(), loc);
        const uint8_t* a = MM_CB::kCopyA1 ? aL1.data() : a_.Access(0, Span<A>(aSpan), "Matmul (A)", loc);
        const uint8_t* b = MM_CB::kCopyB1 ? bL1.data() : b_.Access(0, Span<B>(bSpan), "Matmul (B)", loc);
        const uint8_t* bias = hasBias_ ? bias_.Access(0, n_, "Matmul (bias)", loc) : nullptr;
        // B as Acc, row kk = B[kk][0..n); C row by row: c[i][j] = bias[j] + sum over kk in order of
        // a[i][kk] * b[kk][j] -- the same additions in the same order as a dot product per element,
        // arranged so the innermost loop runs over j (contiguous, vectorisable without reassociation).
        std::vector<Acc> bk(static_cast<size_t>(k_) * n_);
        if constexpr (IsSparseType<B_TYPE>::value) {
            SparseB(bk, b, loc);
        } else
        for (int kk = 0; kk < k_; ++kk)
            for (int j = 0; j < n_; ++j)
                bk[size_t(kk) * n_ + j] = Elem<B>(
                    b, MM_CB::kCopyB1 ? uint64_t(kk) * n_ + j : transB_ ? uint64_t(j) * orgKb_ + kk : uint64_t(kk) * orgN_ + j);
        std::vector<Acc> brow(n_, Acc(0));
        if (bias)
            for (int j = 0; j < n_; ++j)
                brow[j] = static_cast<Acc>(static_cast<megafuse_emu::CalcT<Bias>>(megafuse_emu::Ld<Bias>(bias, j)));
        c_.assign(size_t(m_) * n_, Acc(0));
        for (int i = 0; i < m_; ++i) {
            Acc* crow = &c_[size_t(i) * n_];
            for (int j = 0; j < n_; ++j) crow[j] = brow[j];
            for (int kk = 0; kk < k_; ++kk) {
                const Acc av = Elem<A>(
                    a, MM_CB::kCopyA1 ? uint64_t(i) * k_ + kk : transA_ ? uint64_t(kk) * orgM_ + i : uint64_t(i) * orgKa_ + kk);
                AxpyRow(crow, av, &bk[size_t(kk) * n_], n_);
            }
        }
    }

    // A user copy callback's operand, through an L1 buffer (matmul_callback.h).
    template <typename T, TPosition POS, typename F>
    std::vector<uint8_t> ThroughL1(F fn, int rows, int cols, int tileR, int tileC, const __gm__ T* gm,
                                   const megafuse_emu::Loc& loc)
    {
        TBuf<POS>& buf = [this]() -> TBuf<POS>& {
            if constexpr (POS == TPosition::A1) return l1A_;
            else return l1B_;
        }();
        return megafuse_emu::CopyThroughL1<T>(fn, *pipe_, buf, POS == TPosition::A1 ? l1AInit_ : l1BInit_, rows, cols,
                                               tileR, tileC, gm, userDefInfo_, selfDefineData_, loc);
    }

    // A 4:2 sparse B from its dense-packed values and index matrix (matmul_sparse.h).
    void SparseB(std::vector<Acc>& bk, const uint8_t* b, const megafuse_emu::Loc& loc)
    {
        if (!transB_ || k_ % 4 != 0)
            megafuse_emu::Fail(loc, "Matmul (sparse B): only a transposed B with K a multiple of 4 is emulated");
        if (!hasIndex_) megafuse_emu::Fail(loc, "Matmul (sparse B): SetSparseIndex must come before Iterate");
        const uint64_t alignN = (uint64_t(orgN_) + 15) / 16 * 16;
        const uint8_t* idx = index_.Access(0, megafuse_emu::SparseIndexSpan(k_, n_, alignN), "Matmul (sparse index)", loc);
        megafuse_emu::DensifySparseB<Acc, B>(bk, b, idx, k_, n_, uint64_t(orgKb_) / 2, alignN);
    }

    // The current block's C as the partial sum over K chunk kc (baseK wide), no bias (isPartialOutput).
    void PartialBlock(int kc, const megafuse_emu::Loc& loc)
    {
        const int r0 = bm_ * t_.baseM, c0 = bn_ * t_.baseN, k0 = kc * t_.baseK;
        const int rows = std::min(t_.baseM, m_ - r0), cols = std::min(t_.baseN, n_ - c0), ks = std::min(t_.baseK, k_ - k0);
        const uint64_t aSpan = transA_ ? uint64_t(k_ - 1) * orgM_ + m_ : uint64_t(m_ - 1) * orgKa_ + k_;
        const uint64_t bSpan = transB_ ? uint64_t(n_ - 1) * orgKb_ + k_ : uint64_t(k_ - 1) * orgN_ + n_;
        const uint8_t* a = a_.Access(0, Span<A>(aSpan), "Matmul (A)", loc);
        const uint8_t* b = b_.Access(0, Span<B>(bSpan), "Matmul (B)", loc);
        for (int i = r0; i < r0 + rows; ++i)
            for (int j = c0; j < c0 + cols; ++j) {
                Acc s = Acc(0);
                for (int kk = k0; kk < k0 + ks; ++kk)
                    s += Elem<A>(a, transA_ ? uint64_t(kk) * orgM_ + i : uint64_t(i) * orgKa_ + kk) *
                         Elem<B>(b, transB_ ? uint64_t(j) * orgKb_ + kk : uint64_t(kk) * orgN_ + j);
                c_[size_t(i) * n_ + j] = s;
            }
    }

    // Element (i, j) of C in C's type (after the dequantisation, if one is set).
    C Out(int i, int j, const megafuse_emu::Loc& loc) const
    {
        const Acc v = c_[size_t(i) * n_ + j];
        if constexpr (std::is_same_v<Acc, int32_t>) {
            if (quant_ != 0) {
                uint64_t bits = quantScalar_;
                if (quant_ == 2) {
                    const uint8_t* q = quantVec_.Access(uint64_t(j), 1, "Matmul (quant vector)", loc);
                    std::memcpy(&bits, q, sizeof(bits));
                }
                const uint32_t f = static_cast<uint32_t>(bits) & 0xFFFFE000u;
                float scale;
                std::memcpy(&scale, &f, sizeof(scale));
                return static_cast<C>(static_cast<float>(v) * scale);
            }
        }
        return static_cast<C>(v);
    }

    // crow[j] += av * b[j], one rounding per product and per sum as before (no contraction: the
    // emulator builds for plain x86-64, which has no FMA).
    __attribute__((optimize("tree-vectorize"))) static void AxpyRow(Acc* __restrict crow, Acc av,
                                                                   const Acc* __restrict b, int n)
    {
        for (int j = 0; j < n; ++j) crow[j] += av * b[j];
    }

    void Store(const GlobalTensor<C>& gm, int r0, int c0, int rows, int cols, int ld, uint8_t enAtomic,
               const megafuse_emu::Loc& loc, bool sequential = false)
    {
        if (rows <= 0 || cols <= 0) return;
        if constexpr (C_TYPE::format == CubeFormat::NZ) {
            StoreNz(gm, r0, c0, rows, cols, enAtomic, sequential, loc);
            return;
        }
        const uint64_t first = sequential ? 0 : uint64_t(r0) * ld + c0;
        const uint64_t span = uint64_t(rows - 1) * ld + cols;
        uint8_t* d = gm.Access(first, span, "Matmul (C)", loc);
        StoreTile(d, r0, c0, rows, cols, enAtomic, [&](int i, int j) { return uint64_t(i) * ld + j; }, loc);
    }

    // rows x cols of C from (r0, c0) to GM at d + off(i, j) elements, under the enAtomic mode
    // (1 add, 2 max, 3 min; the core's atomic state restored afterwards)
    template <typename Off>
    void StoreTile(uint8_t* d, int r0, int c0, int rows, int cols, uint8_t enAtomic, Off off,
                   const megafuse_emu::Loc& loc)
    {
        megafuse_emu::AtomicState saved = megafuse_emu::Core(loc).atomic;
        if (enAtomic == 1) SetAtomicAdd<C>(loc);
        if (enAtomic == 2) SetAtomicMax<C>(loc);
        if (enAtomic == 3) SetAtomicMin<C>(loc);
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j) {
                const C v = Out(r0 + i, c0 + j, loc);
                megafuse_emu::GmStore(d + off(i, j) * sizeof(C), reinterpret_cast<const uint8_t*>(&v),
                                      sizeof(C), "Matmul", loc);
            }
        megafuse_emu::Core(loc).atomic = saved;
        megafuse_emu::Count(megafuse_emu::GM_WRITE_BYTES, uint64_t(rows) * cols * sizeof(C));
    }

    // C in NZ (GM): column blocks of W columns (16, or 8 for a float C with isEnableChannelSplit),
    // each holding the org M rows rounded up to 16, row-major inside: element (i, j) of the org
    // matrix sits at ((j / W) * alignM + i) * W + j % W. Only the valid m x n elements are written.
    void StoreNz(const GlobalTensor<C>& gm, int r0, int c0, int rows, int cols, uint8_t enAtomic, bool sequential,
                 const megafuse_emu::Loc& loc)
    {
        if (sequential) megafuse_emu::Fail(loc, "Matmul::GetTensorC: enSequentialWrite with an NZ C is not emulated");
        constexpr uint64_t w = ChannelSplit() ? 8 : 16;
        const uint64_t alignM = (uint64_t(orgM_) + 15) / 16 * 16;
        auto at = [&](int i, int j) { return (uint64_t(j) / w * alignM + uint64_t(i)) * w + uint64_t(j) % w; };
        const uint64_t first = at(r0, c0), last = at(r0 + rows - 1, c0 + cols - 1);
        uint8_t* d = gm.Access(first, last - first + 1, "Matmul (C)", loc);
        StoreTile(d, r0, c0, rows, cols, enAtomic, [&](int i, int j) { return at(r0 + i, c0 + j) - first; }, loc);
    }
    static constexpr bool ChannelSplit()
    {
        if constexpr (std::is_same_v<std::decay_t<decltype(MM_CFG)>, MatmulConfig> || kStatic) return Cfg().isEnableChannelSplit;
        else return false;
    }

    TPipe* pipe_ = nullptr;
    TBuf<TPosition::A1> l1A_;
    TBuf<TPosition::B1> l1B_;
    bool l1AInit_ = false, l1BInit_ = false;
    uint64_t userDefInfo_ = 0, selfDefineData_ = 0;
    GlobalTensor<uint8_t> index_;
    bool hasIndex_ = false;
    int quant_ = 0;
    uint64_t quantScalar_ = 0;
    GlobalTensor<uint64_t> quantVec_;
    GlobalTensor<C> ws_;
    bool hasWs_ = false;
    int nbatchLeft_ = 0;
    TCubeTiling t_{};
    bool init_ = false, hasA_ = false, hasB_ = false, hasBias_ = false, transA_ = false, transB_ = false;
    int orgM_ = 0, orgN_ = 0, orgKa_ = 0, orgKb_ = 0, m_ = 0, n_ = 0, k_ = 0, ldc_ = 0;
    int iter_ = -1, bm_ = 0, bn_ = 0, async_ = -1;
    GlobalTensor<A> a_;
    GlobalTensor<B> b_;
    GlobalTensor<Bias> bias_;
    std::vector<Acc> c_;
};

}  // namespace AscendC

inline __gm__ uint8_t* GetSysWorkSpacePtr() { return AscendC::SysWorkspace(); }
inline void SetSysWorkspace(__gm__ uint8_t* ws) { AscendC::SysWorkspace() = ws; }
namespace AscendC {
using ::GetSysWorkSpacePtr;
using ::SetSysWorkspace;
}

namespace megafuse_emu {

// The AIC of a MIX launch serves the AIVs' matmul requests in the devkit and does nothing else.
inline bool MatmulServerCore()
{
    return g_core != nullptr && g_core->mix != nullptr && g_core->kind == CoreKind::Cube;
}
// A kernel of a MIX Matmul program (launch.h MatmulMixProgram) that declared no type has the
// type the devkit's compiler gives it.
inline void MatmulDeclareMix(const Loc& loc)
{
    if (g_core != nullptr && g_core->mix != nullptr && !g_core->kind_declared && MatmulMixProgram() &&
        g_core->launch_type == KernelType::MixAic1_2)
        DeclareKernelType(KERNEL_TYPE_MIX_AIC_1_2, loc);
}
inline void RegistMatmul(const Loc&, AscendC::TPipe*, __gm__ uint8_t*) {}
template <class M, class... Rest>
void RegistMatmul(const Loc& loc, AscendC::TPipe* pipe, __gm__ uint8_t* ws, M& mm, const TCubeTiling* tiling,
                  Rest&&... rest)
{
    mm.Init(tiling, pipe, loc);
    RegistMatmul(loc, pipe, ws, rest...);
}

}  // namespace megafuse_emu

#ifndef ASCENDC_CUBE_ONLY
namespace megafuse_emu {
inline const bool kMatmulMixProgram = (MatmulMixProgram() = true);  // launch.h
}
#endif

// The devkit's samples write `using namespace matmul;` and matmul::MatmulType / matmul::Matmul.
namespace matmul {
using namespace AscendC;
}

#ifdef ASCENDC_CUBE_ONLY
// Pure Cube mode (devkit: ASCENDC_CUBE_ONLY before lib/matmul_intf.h): the Matmul runs on the
// core that registers it, e.g. the AIC of a MIX kernel that then syncs its AIVs by hand.
#define REGIST_MATMUL_OBJ(pipe, workspace, ...)                                               \
    ::megafuse_emu::RegistMatmul(::std::source_location::current(), pipe, (__gm__ uint8_t*)(workspace), __VA_ARGS__)
#else
#define REGIST_MATMUL_OBJ(pipe, workspace, ...)                                               \
    ::megafuse_emu::MatmulDeclareMix(::std::source_location::current());                      \
    if (::megafuse_emu::MatmulServerCore()) return;                                           \
    ::megafuse_emu::RegistMatmul(::std::source_location::current(), pipe, (__gm__ uint8_t*)(workspace), __VA_ARGS__)
#endif
