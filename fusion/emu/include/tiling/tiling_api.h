// Host tiling API of the devkit samples: the op tiling definition macros and the matmul host
// tiling (matmul_tiling::MultiCoreMatmulTiling / MatmulApiTiling) as far as the samples use it.
// The split is megafuse's own (the devkit's tiling search is not reproduced): the M x N output
// is cut into at most SetDim(...) single-core blocks of whole 16-row / 16-column fractals,
// base blocks of at most 128 x 256 x 64; K stays whole per core. Any split the kernel reads
// back through TCubeTiling is consistent with it, which is what the samples' kernels rely on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iostream>  // the devkit header brings it; the samples print with std::cout

#include "kernel_tiling/kernel_tiling.h"
#include "register/tilingdata_base.h"
#include "tiling/platform/platform_ascendc.h"
#include "megafuse_emu/adv_shape.h"  // TensorShape and the advanced APIs' tmp-size queries
#include "securec.h"  // memcpy_s: the devkit headers bring securec into host code
#include "tiling/matmul_split.h"

namespace matmul_tiling {

enum class TPosition { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, TSCM, SPM };
enum class CubeFormat { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR, ROW_MAJOR = ND, COLUMN_MAJOR = 8 };
enum class DataType {
    DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6, DT_UINT16 = 7,
    DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_DOUBLE = 11, DT_BOOL = 12, DT_BF16 = 27, DT_INT4 = 29,
    DT_FLOAT8_E5M2 = 35, DT_FLOAT8_E4M3FN = 36
};
enum class DequantType { SCALAR = 0, TENSOR = 1 };  // SetDequantType: chosen in the kernel, no tiling field
enum class MatrixTraverse { NOSET = 0, FIRSTM = 1, FIRSTN = 2 };
enum class ScheduleType { INNER_PRODUCT = 0, OUTER_PRODUCT = 1, N_BUFFER_33 = 2 };

// The template / schedule choice of the devkit's tiling (SetMatmulConfigParams page): only the
// traverse order reaches TCubeTiling here (iterateOrder); the rest picks data paths the
// emulated Matmul does not model.
struct MatmulConfigParams {
    int32_t mmConfigType;
    bool enableL1CacheUB;
    ScheduleType scheduleType;
    MatrixTraverse traverse;
    bool enVecND2NZ;
    MatmulConfigParams(int32_t type = 1, bool l1CacheUB = false, ScheduleType schedule = ScheduleType::INNER_PRODUCT,
                       MatrixTraverse order = MatrixTraverse::NOSET, bool vecND2NZ = false)
        : mmConfigType(type), enableL1CacheUB(l1CacheUB), scheduleType(schedule), traverse(order), enVecND2NZ(vecND2NZ)
    {}
};

class MatmulApiTiling {
public:
    // MatmulApiTiling is the single-core tiling (devkit "Matmul Tiling类": singleCore = the shape);
    // MultiCoreMatmulTiling splits over SetDim cores (by default the platform's AIC count).
    MatmulApiTiling() = default;
    explicit MatmulApiTiling(const platform_ascendc::PlatformAscendC&) {}
    int32_t SetAType(TPosition, CubeFormat f, DataType d, bool trans = false) { aFmt_ = f; transA_ = trans; aBits_ = Bits(d); return 0; }
    int32_t SetBType(TPosition, CubeFormat f, DataType d, bool trans = false) { bFmt_ = f; transB_ = trans; bBits_ = Bits(d); return 0; }
    int32_t SetCType(TPosition, CubeFormat f, DataType) { cFmt_ = f; return 0; }
    int32_t SetBiasType(TPosition, CubeFormat, DataType) { return 0; }
    int32_t SetOrgShape(int m, int n, int k) { return SetOrgShape(m, n, k, k); }
    int32_t SetOrgShape(int m, int n, int ka, int kb) { m_ = m; n_ = n; ka_ = ka; kb_ = kb; return 0; }
    int32_t SetShape(int m, int n, int k) { sm_ = m; sn_ = n; sk_ = k; return 0; }
    int32_t SetSingleShape(int m, int n, int k) { cm_ = m; cn_ = n; ck_ = k; return 0; }
    int32_t EnableBias(bool on = false) { bias_ = on; return 0; }
    int32_t SetBias(bool on = false) { bias_ = on; return 0; }
    int32_t SetBufferSpace(int = -1, int = -1, int = -1, int = -1) { return 0; }
    int32_t SetFixSplit(int bm = -1, int bn = -1, int bk = -1) { fixM_ = bm; fixN_ = bn; fixK_ = bk; return 0; }
    int32_t SetTraverse(MatrixTraverse t) { order_ = t == MatrixTraverse::FIRSTN ? 1 : 0; return 0; }
    int32_t SetDim(int cores) { cores_ = cores; return 0; }
    void EnableMultiCoreSplitK(bool on) { splitK_ = on; }
    int32_t SetDequantType(DequantType) { return 0; }
    int32_t SetSparse(bool) { return 0; }  // a 4:2 sparse B: the kernel's SparseMatmulType decides
    // Batch matmul (devkit SetALayout / SetBLayout / SetCLayout / SetBatchNum /
    // SetBatchInfoForNormal): the layouts reach TCubeTiling's *LayoutInfo* fields and BatchNum.
    int32_t SetALayout(int b, int s, int n, int g, int d) { aL_[0] = b; aL_[1] = s; aL_[2] = n; aL_[3] = g; aL_[4] = d; return 0; }
    int32_t SetBLayout(int b, int s, int n, int g, int d) { bL_[0] = b; bL_[1] = s; bL_[2] = n; bL_[3] = g; bL_[4] = d; return 0; }
    int32_t SetCLayout(int b, int s1, int n, int g, int s2) { cL_[0] = b; cL_[1] = s1; cL_[2] = n; cL_[3] = g; cL_[4] = s2; return 0; }
    int32_t SetBatchNum(int num) { batchNum_ = num; return 0; }
    int32_t SetBatchInfoForNormal(int batchA, int batchB, int m, int n, int k)
    {
        batchNum_ = std::max(batchA, batchB);
        SetOrgShape(m, n, k);
        return SetShape(m, n, k);
    }
    void SetMatmulConfigParams(const MatmulConfigParams& p)
    {
        if (p.traverse != MatrixTraverse::NOSET) SetTraverse(p.traverse);
        nbuffer33_ = p.scheduleType == ScheduleType::N_BUFFER_33;
    }
    void SetMatmulConfigParams(int32_t type = 1, bool l1CacheUB = false,
                               ScheduleType schedule = ScheduleType::INNER_PRODUCT,
                               MatrixTraverse order = MatrixTraverse::NOSET, bool vecND2NZ = false)
    {
        SetMatmulConfigParams(MatmulConfigParams(type, l1CacheUB, schedule, order, vecND2NZ));
    }

    // -1 when the shape is unset or a format other than ND is asked for.
    int64_t GetTiling(TCubeTiling& t)
    {
        if (m_ <= 0 || n_ <= 0 || ka_ <= 0) return -1;
        // ND everywhere; A may be a VECTOR (GEMV, M = 1), C may be ND_ALIGN (rows padded to 32 B)
        if ((aFmt_ != CubeFormat::ND && !(aFmt_ == CubeFormat::VECTOR && m_ == 1)) || bFmt_ != CubeFormat::ND ||
            (cFmt_ != CubeFormat::ND && cFmt_ != CubeFormat::ND_ALIGN && cFmt_ != CubeFormat::NZ))
            return -1;
        const int m = sm_ > 0 ? sm_ : m_, n = sn_ > 0 ? sn_ : n_, k = sk_ > 0 ? sk_ : ka_;
        const int cores = std::max(1, cores_);
        int bestM = m, bestN = n, used = 1;
        // Most cores, then the squarest blocks, then the fewer rows per core: on a tie M is split
        // first, as the devkit's tiling does for its samples (matmul_advanced_api: 512 x 512 on 2
        // cores is cut along M, and its kernel offsets A and C by singleCoreM rows).
        for (int pm = 1; pm <= cores; ++pm)
            for (int pn = 1; pm * pn <= cores; ++pn) {
                const int cm = Align16((m + pm - 1) / pm), cn = Align16((n + pn - 1) / pn);
                const int blocks = ((m + cm - 1) / cm) * ((n + cn - 1) / cn);
                const int side = std::max(cm, cn), bestSide = std::max(bestM, bestN);
                if (blocks > used || (blocks == used && (side < bestSide || (side == bestSide && cm < bestM)))) {
                    used = blocks; bestM = cm; bestN = cn;
                }
            }
        // A 910B's multi-core tiling for a large output follows the devkit's cost model (matmul_split.h).
        if (devkitSplit_ && cm_ <= 0 && cn_ <= 0 && !splitK_) {
            const auto [mDim, nDim] =
                nbuffer33_ ? split_detail::DevkitNBuffer33Split(m, n, k, cores, fixM_, fixN_, l0c256k_, aBits_, bBits_)
                           : split_detail::DevkitMnSplit(m, n, k, cores, fixM_, fixN_, l0c256k_, aBits_, bBits_);
            if (mDim > 0) {
                bestM = Align16((m + mDim - 1) / mDim);
                bestN = Align16((n + nDim - 1) / nDim);
                used = ((m + bestM - 1) / bestM) * ((n + bestN - 1) / bestN);
            }
        }
        if (cm_ > 0 && cn_ > 0) { bestM = cm_; bestN = cn_; used = ((m + cm_ - 1) / cm_) * ((n + cn_ - 1) / cn_); }
        // EnableMultiCoreSplitK: the cores left over cut K too, into equal parts of whole
        // 16-element steps (each core then adds its partial C, the kernel's enAtomic).
        int singleK = ck_ > 0 ? ck_ : k, kDim = 1;
        if (splitK_ && ck_ <= 0)
            for (int d = std::max(1, cores / used); d > 1; --d)
                if (k % d == 0 && (k / d) % 16 == 0) { kDim = d; singleK = k / d; break; }
        t = TCubeTiling{};
        t.usedCoreNum = std::min(used * kDim, cores);
        t.M = m_; t.N = n_; t.Ka = ka_; t.Kb = kb_;
        t.singleCoreM = bestM; t.singleCoreN = bestN; t.singleCoreK = singleK;
        t.baseM = fixM_ > 0 ? fixM_ : std::min(128, Align16(bestM));
        t.baseN = fixN_ > 0 ? fixN_ : std::min(256, Align16(bestN));
        t.baseK = fixK_ > 0 ? fixK_ : std::min(64, Align16(singleK));
        // L1 holds up to 4 baseK steps of K per operand (what a user CopyA1 / CopyB1 callback
        // receives as one block); one baseM / baseN step.
        t.stepM = t.stepN = 1;
        t.stepKa = t.stepKb = std::max(1, std::min(4, (singleK + t.baseK - 1) / t.baseK));
        t.depthA1 = t.stepKa; t.depthB1 = t.stepKb;
        t.isBias = bias_ ? 1 : 0; t.iterateOrder = order_;
        t.dbL0A = t.dbL0B = 2; t.dbL0C = 1;
        t.batchM = t.batchN = t.singleBatchM = t.singleBatchN = 1; t.BatchNum = 1;
        gotM_ = t.singleCoreM; gotN_ = t.singleCoreN; gotK_ = t.singleCoreK;
        t.ALayoutInfoB = aL_[0]; t.ALayoutInfoS = aL_[1]; t.ALayoutInfoN = aL_[2]; t.ALayoutInfoG = aL_[3]; t.ALayoutInfoD = aL_[4];
        t.BLayoutInfoB = bL_[0]; t.BLayoutInfoS = bL_[1]; t.BLayoutInfoN = bL_[2]; t.BLayoutInfoG = bL_[3]; t.BLayoutInfoD = bL_[4];
        t.CLayoutInfoB = cL_[0]; t.CLayoutInfoS1 = cL_[1]; t.CLayoutInfoN = cL_[2]; t.CLayoutInfoG = cL_[3];
        t.CLayoutInfoS2 = cL_[4];
        t.BatchNum = std::max(1, batchNum_);
        return 0;
    }
    // The single-core shape of the last GetTiling (-1 before one).
    int32_t GetSingleShape(int32_t& m, int32_t& n, int32_t& k) const
    {
        m = gotM_; n = gotN_; k = gotK_;
        return gotM_ < 0 ? -1 : 0;
    }
    int64_t GetTiling(optiling::TCubeTiling* t) { return GetTiling(*t); }

protected:
    static int Align16(int v) { return (v + 15) / 16 * 16; }
    static int Bits(DataType d)
    {
        switch (d) {
            case DataType::DT_FLOAT: case DataType::DT_INT32: case DataType::DT_UINT32: return 32;
            case DataType::DT_INT8: case DataType::DT_UINT8: case DataType::DT_FLOAT8_E5M2:
            case DataType::DT_FLOAT8_E4M3FN: return 8;
            case DataType::DT_INT4: return 4;
            default: return 16;
        }
    }
    bool devkitSplit_ = false, l0c256k_ = false, nbuffer33_ = false;
    int aBits_ = 16, bBits_ = 16;
    int cores_ = 1, m_ = 0, n_ = 0, ka_ = 0, kb_ = 0, sm_ = -1, sn_ = -1, sk_ = -1, cm_ = -1, cn_ = -1, ck_ = -1;
    int aL_[5] = {1, 1, 1, 1, 1}, bL_[5] = {1, 1, 1, 1, 1}, cL_[5] = {1, 1, 1, 1, 1}, batchNum_ = 1;
    int fixM_ = -1, fixN_ = -1, fixK_ = -1, order_ = 0, gotM_ = -1, gotN_ = -1, gotK_ = -1;
    bool splitK_ = false, bias_ = false, transA_ = false, transB_ = false;
    CubeFormat aFmt_ = CubeFormat::ND, bFmt_ = CubeFormat::ND, cFmt_ = CubeFormat::ND;
};

class MultiCoreMatmulTiling : public MatmulApiTiling {
public:
    MultiCoreMatmulTiling() = default;
    explicit MultiCoreMatmulTiling(const platform_ascendc::PlatformAscendC& p)
    {
        cores_ = static_cast<int>(p.GetCoreNumAic());
        devkitSplit_ = p.GetSocVersion() == platform_ascendc::SocVersion::ASCEND910B;
        uint64_t l0c = 0;
        p.GetCoreMemSize(platform_ascendc::CoreMemType::L0_C, l0c);
        l0c256k_ = l0c == 256 * 1024;
    }
};

// The batch tiling: one core's batches (SetDim splits nothing here unless called).
class BatchMatmulTiling : public MatmulApiTiling {
public:
    using MatmulApiTiling::MatmulApiTiling;
};

}  // namespace matmul_tiling
