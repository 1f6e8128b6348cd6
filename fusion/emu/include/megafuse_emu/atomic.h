// GM atomics of the DMA path (devkit SetAtomicAdd / SetAtomicMax / SetAtomicMin / SetAtomicType /
// SetAtomicNone / DisableDmaAtomic). While an atomic mode is set on a core, every transfer into
// GM from that core (DataCopy / DataCopyPad UB -> GM, Fixpipe L0C -> GM) combines each element
// with what GM holds instead of overwriting it, interpreting the bytes as the type the mode was
// set with (documented types: float, half, bfloat16_t, int8_t, int16_t, int32_t for Add;
// float, half, bfloat16_t, int16_t, int32_t for Max / Min). Cores of one launch run one at a
// time here, so the read-modify-write of one element is never torn. Facts from the devkit's
// SetAtomicAdd / SetAtomicMax / SetAtomicType / DisableDmaAtomic reference pages.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "vector_lanes.h"

namespace megafuse_emu {

enum AtomicOp : int { kAtomicNone = 0, kAtomicAdd = 1, kAtomicMax = 2, kAtomicMin = 3 };

template <typename T>
void CombineElems(uint8_t* gm, const uint8_t* src, uint64_t n, int op)
{
    using C = CalcT<T>;
    for (uint64_t i = 0; i < n; ++i) {
        const C a = static_cast<C>(Ld<T>(gm, i)), b = static_cast<C>(Ld<T>(src, i));
        C r = op == kAtomicAdd ? static_cast<C>(a + b) : op == kAtomicMax ? std::max(a, b) : std::min(a, b);
        St<T>(gm, i, static_cast<T>(r));
    }
}

// Copies `bytes` from src into GM at dst, combined under the core's atomic mode.
inline void GmStore(uint8_t* dst, const uint8_t* src, uint64_t bytes, const char* api, const Loc& loc)
{
    const AtomicState& m = Core(loc).atomic;
    if (m.op == kAtomicNone) {
        std::memcpy(dst, src, bytes);
        return;
    }
    if (bytes % m.elem != 0)
        Fail(loc, Str(api, ": ", bytes, " bytes into GM under an atomic ", m.type, " mode are not whole ", m.type,
                      " elements"));
    m.combine(dst, src, bytes / m.elem, m.op);
}

template <typename T>
void SetAtomic(int op, const char* api, const Loc& loc)
{
    constexpr bool f = std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;
    constexpr bool i = std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t>;
    constexpr bool i8 = std::is_same_v<T, int8_t>;
    if (!(f || i || (i8 && op == kAtomicAdd)))
        Fail(loc, Str(api, "<", TypeName<T>(), ">: type not supported by the devkit (float, half, bfloat16_t, int16_t, "
                      "int32_t", op == kAtomicAdd ? ", int8_t" : "", ")"));
    Core(loc).atomic = AtomicState{op, sizeof(T), TypeName<T>(), &CombineElems<T>};
}

}  // namespace megafuse_emu

namespace AscendC {

template <typename T>
void SetAtomicAdd(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::SetAtomic<T>(megafuse_emu::kAtomicAdd, "SetAtomicAdd", loc);
}
template <typename T>
void SetAtomicMax(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::SetAtomic<T>(megafuse_emu::kAtomicMax, "SetAtomicMax", loc);
}
template <typename T>
void SetAtomicMin(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::SetAtomic<T>(megafuse_emu::kAtomicMin, "SetAtomicMin", loc);
}
// Changes the element type of the atomic mode in force (the operation stays).
template <typename T>
void SetAtomicType(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const int op = megafuse_emu::Core(loc).atomic.op;
    if (op != megafuse_emu::kAtomicNone) megafuse_emu::SetAtomic<T>(op, "SetAtomicType", loc);
}
inline void SetAtomicNone(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Core(loc).atomic = megafuse_emu::AtomicState{};
}
inline void DisableDmaAtomic(megafuse_emu::Loc loc = megafuse_emu::Loc::current()) { SetAtomicNone(loc); }

}  // namespace AscendC
