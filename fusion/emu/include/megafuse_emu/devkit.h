// The parts of the current devkit's kernel-side surface that its samples use beyond the
// classic TPipe API: the __vector__ / __cube__ kernel keywords, EVENT_ID0..7, ascendc_assert,
// InitSocState, GetTPipePtr, Sigmoid. Facts from the public devkit documentation pages of the
// same names; no vendor code.
//
// __NPU_ARCH__ is not defined here: the harness passes -D__NPU_ARCH__=<arch> of the SoC the
// kernel is built for (2201: 910B, 2002: 310P), so arch-conditional code takes the branch of
// that chip, and a kernel built for one arch refuses to run on the other.
#pragma once

#include <cstdarg>
#include <cstdio>

#include "pipe.h"
#include "vector.h"

// Kernel keywords: a __vector__ kernel runs on the AIV cores, a __cube__ kernel on the AIC
// cores (arch 2201). The `<<<>>>` launch reads them (fusion/ascendc_emu/single_source.py) to
// pick the kernel type; in the code they only mark the entry point.
#define __vector__
#define __cube__
// __mix__(aic, aiv): a MIX kernel of that core ratio; single_source.py reads the ratio.
#define __mix__(aic, aiv)
#define __mix__(aic, aiv)
// Address-space qualifiers of the bisheng dialect; plain pointers on the host.
#define __ubuf__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __fbuf__

// Event ids of SetFlag / WaitFlag (the devkit's TEventID constants, global like pipe_t).
using TEventID = int8_t;
// event_t: the type the samples cast FetchEventID's id to before SetFlag / WaitFlag.
using event_t = TEventID;
constexpr TEventID EVENT_ID0 = 0;
constexpr TEventID EVENT_ID1 = 1;
constexpr TEventID EVENT_ID2 = 2;
constexpr TEventID EVENT_ID3 = 3;
constexpr TEventID EVENT_ID4 = 4;
constexpr TEventID EVENT_ID5 = 5;
constexpr TEventID EVENT_ID6 = 6;
constexpr TEventID EVENT_ID7 = 7;

namespace megafuse_emu {

// ascendc_assert(cond, fmt, ...): on failure the kernel stops with the printf-formatted
// message, like the device's assert trap.
inline void AssertFailed(const char* expr, const Loc& loc, const char* fmt = nullptr, ...)
{
    std::string msg = Str("ascendc_assert(", expr, ") failed");
    if (fmt != nullptr) {
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        msg += Str(": ", buf);
    }
    Fail(loc, msg);
}

}  // namespace megafuse_emu

#define ascendc_assert(cond, ...)                                                                     \
    ((cond) ? (void)0                                                                                 \
            : ::megafuse_emu::AssertFailed(#cond, ::std::source_location::current() __VA_OPT__(, ) __VA_ARGS__))

namespace AscendC {

// Resets the core's control registers at kernel start (devkit InitSocState); the emulated core
// starts clean, so only the call context is checked.
inline void InitSocState(megafuse_emu::Loc loc = megafuse_emu::Loc::current()) { megafuse_emu::Core(loc); }

// The TPipe the kernel created (devkit GetTPipePtr): the most recent live one on this core.
inline TPipe* GetTPipePtr(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    if (c.pipe == nullptr) megafuse_emu::Fail(loc, "GetTPipePtr: no TPipe exists on this core (create one in the kernel first)");
    return static_cast<TPipe*>(c.pipe);
}

// Sigmoid (devkit advanced math API): dst = 1 / (1 + exp(-src)), computed in float per lane
// (the device's approximation is not modelled). sharedTmpBuffer must be a usable UB tensor;
// the emulation needs no scratch space.
template <typename T, bool isReuseSource = false>
void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
             const uint32_t calCount, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "Sigmoid takes half or float");
    megafuse_emu::CheckMem(sharedTmpBuffer.ref_, megafuse_emu::Mem::UB, "Sigmoid", "sharedTmpBuffer", loc);
    Sigmoid<T, isReuseSource>(dst, src, calCount, loc);
}

template <typename T, bool isReuseSource = false>
void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
             megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    Sigmoid<T, isReuseSource>(dst, src, sharedTmpBuffer, src.GetSize(), loc);
}

template <typename T, bool isReuseSource = false>
void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount,
             megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "Sigmoid takes half or float");
    megafuse_emu::Core(loc);
    if (src.ref_.block != nullptr && dst.ref_.block == src.ref_.block && dst.ref_.off < src.ref_.off + src.ref_.len &&
        src.ref_.off < dst.ref_.off + dst.ref_.len)
        megafuse_emu::Fail(loc, "Sigmoid: dst and src overlap (the devkit does not allow it)");
    megafuse_emu::RunCount<2>(
        "Sigmoid", {megafuse_emu::Op(dst, "dst"), megafuse_emu::Op(src, "src")}, static_cast<int64_t>(calCount),
        megafuse_emu::UnaryLane<T, T>([](T x) { return static_cast<T>(1.0f / (1.0f + std::exp(-static_cast<float>(x)))); }),
        loc);
}

template <typename T, bool isReuseSource = false>
void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    Sigmoid<T, isReuseSource>(dst, src, src.GetSize(), loc);
}

}  // namespace AscendC

// The devkit declares GetTPipePtr at global scope (its samples call it unqualified).
using AscendC::GetTPipePtr;
