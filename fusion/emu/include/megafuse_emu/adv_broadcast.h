// Broadcast<T, dim, axis>(dst, src, dstShape[dim], srcShape[dim] [, sharedTmpBuffer]) of the
// devkit's advanced API: dim 1 or 2; every src extent equals dst's or is 1 (the broadcast
// axis, which must be `axis` when the extents differ); dst[i][j] = src[i or 0][j or 0].
#pragma once

#include "adv_math.h"
#include "vec_cmp.h"

namespace megafuse_emu {

template <typename T, int dim, int axis>
void BroadcastImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const uint32_t dstShape[],
                   const uint32_t srcShape[], const AscendC::LocalTensor<uint8_t>* tmp, const Loc& loc)
{
    static_assert(dim == 1 || dim == 2, "Broadcast takes dim 1 or 2");
    static_assert(axis >= 0 && axis < dim, "Broadcast: axis must be below dim");
    const char* api = "Broadcast";
    Core(loc);
    AdvNoOverlap(api, dst.ref_, src.ref_, "src", loc);
    if (tmp != nullptr) AdvCheckTmp(api, tmp->ref_, 1, {&dst.ref_, &src.ref_}, loc);
    uint64_t d[2] = {1, 1}, s[2] = {1, 1};
    for (int k = 0; k < dim; ++k) {
        d[2 - dim + k] = dstShape[k];
        s[2 - dim + k] = srcShape[k];
        if (srcShape[k] != dstShape[k] && (srcShape[k] != 1 || k != axis))
            Fail(loc, Str(api, ": srcShape[", k, "] = ", srcShape[k], " neither equals dstShape[", k, "] = ", dstShape[k],
                          " nor is 1 on the broadcast axis ", axis));
    }
    if (d[0] * d[1] == 0) return;
    Operand od{&dst.ref_, sizeof(T), 1, 8, "dst"}, os{&src.ref_, sizeof(T), 1, 8, "src"};
    uint8_t* db = VecOperand(od, d[0] * d[1], api, loc);
    const uint8_t* sb = VecOperand(os, s[0] * s[1], api, loc);
    for (uint64_t i = 0; i < d[0]; ++i)
        for (uint64_t j = 0; j < d[1]; ++j) {
            uint8_t st = kWritten;
            const uint64_t si = (s[0] == 1 ? 0 : i) * s[1] + (s[1] == 1 ? 0 : j);
            St<T>(db, i * d[1] + j, static_cast<T>(LdChecked<T>(sb, si, st, api, "src", loc)));
            SetState(db + (i * d[1] + j) * sizeof(T), sizeof(T), st);
        }
    CountVector(d[0] * d[1] * sizeof(T), false);
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
void Broadcast(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t dstShape[dim],
               const uint32_t srcShape[dim], LocalTensor<uint8_t>& sharedTmpBuffer,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::BroadcastImpl<T, dim, axis>(dst, src, dstShape, srcShape, &sharedTmpBuffer, loc);
}
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
void Broadcast(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t dstShape[dim],
               const uint32_t srcShape[dim], megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::BroadcastImpl<T, dim, axis>(dst, src, dstShape, srcShape, nullptr, loc);
}

}  // namespace AscendC
