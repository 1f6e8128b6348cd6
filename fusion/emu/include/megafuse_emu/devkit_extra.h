// Smaller devkit APIs the devkit's own samples use: LeakyRelu, IsSameType, DivCeil / CeilDiv /
// CeilAlign, DumpTensor (printed on the host), GetSystemCycle, the DCache bypass GM accessors,
// DataCacheCleanAndInvalid and DataSyncBarrier. Semantics from the devkit's API reference pages
// (LeakyRelu: dst = src >= 0 ? src : src * scalarValue; DumpTensor: prints the first
// dumpSize elements with the description); TILING_KEY_IS.
#pragma once

#include <chrono>
#include <cstring>
#include <cstdio>
#include <type_traits>

#include "vector.h"

namespace AscendC {

template <typename T, typename U>
struct IsSameType {
    static constexpr bool value = std::is_same_v<T, U>;
};

template <typename T, typename U>
__aicore__ constexpr auto DivCeil(T a, U b)
{
    return (a + b - 1) / b;
}
template <typename T, typename U>
__aicore__ constexpr auto CeilDiv(T a, U b)
{
    return (a + b - 1) / b;
}
template <typename T, typename U>
__aicore__ constexpr auto CeilAlign(T a, U b)
{
    return (a + b - 1) / b * b;
}

template <typename T, bool isSetMask = true>
void LeakyRelu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& count,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "LeakyRelu takes half or float");
    megafuse_emu::RequireSetMask<isSetMask>();
    const float s = static_cast<float>(scalarValue);
    megafuse_emu::RunCount<2>("LeakyRelu", {megafuse_emu::Op(dst, "dst"), megafuse_emu::Op(src, "src")}, count,
                              megafuse_emu::UnaryLane<T, T>(megafuse_emu::Elementwise<T>(
                                  [s](auto a) { return a >= 0 ? a : static_cast<decltype(a)>(a * s); })),
                              loc);
}
template <typename T, bool isSetMask = true>
void LeakyRelu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask,
               megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "LeakyRelu takes half or float");
    megafuse_emu::RequireSetMask<isSetMask>();
    const float s = static_cast<float>(scalarValue);
    megafuse_emu::UnaryRepeat("LeakyRelu", dst, src, megafuse_emu::ContinuousMask(mask, sizeof(T), "LeakyRelu", loc),
                              repeatTime, p,
                              megafuse_emu::Elementwise<T>([s](auto a) { return a >= 0 ? a : static_cast<decltype(a)>(a * s); }),
                              loc);
}
template <typename T, bool isSetMask = true>
void LeakyRelu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask[],
               megafuse_emu::RepeatTimes repeatTime, const UnaryRepeatParams& p,
               megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "LeakyRelu takes half or float");
    megafuse_emu::RequireSetMask<isSetMask>();
    const float s = static_cast<float>(scalarValue);
    megafuse_emu::UnaryRepeat("LeakyRelu", dst, src, megafuse_emu::BitMask(mask, sizeof(T), "LeakyRelu", loc),
                              repeatTime, p,
                              megafuse_emu::Elementwise<T>([s](auto a) { return a >= 0 ? a : static_cast<decltype(a)>(a * s); }),
                              loc);
}

// DumpTensor: prints `dumpSize` elements of a tensor with its description (the device writes
// them to a dump buffer the host prints after the kernel).
template <typename T>
void DumpTensor(const LocalTensor<T>& t, uint32_t desc, uint32_t dumpSize, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    std::printf("DumpTensor: desc=%u, %u elements:", desc, dumpSize);
    for (uint32_t i = 0; i < dumpSize && i < t.GetSize(); ++i) std::printf(" %g", static_cast<double>(static_cast<float>(t.GetValue(i, loc))));
    std::printf("\n");
}
template <typename T>
void DumpTensor(const GlobalTensor<T>& t, uint32_t desc, uint32_t dumpSize, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    std::printf("DumpTensor: desc=%u, %u elements:", desc, dumpSize);
    for (uint32_t i = 0; i < dumpSize; ++i) std::printf(" %g", static_cast<double>(static_cast<float>(t.GetValue(i, loc))));
    std::printf("\n");
}

// A cycle counter: host nanoseconds (the device counts at its own clock; only differences mean anything).
inline int64_t GetSystemCycle()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// GM scalar access that bypasses the data cache, data-cache maintenance and memory barriers
// (devkit ReadGmByPassDCache / WriteGmByPassDCache / DataCacheCleanAndInvalid / DataSyncBarrier;
// enum values from the devkit's kernel_event.h / kernel_reg.h). The host has one coherent memory
// and runs one core at a time, so the cache operations and barriers order nothing here; the
// scalar accesses are checked against the kernel argument buffers like GlobalTensor's. A GM
// cache invalidate or bypass read is how a core polls for another core's write, so both hand
// control to the next core of a cooperative launch that can run (a spin loop then terminates).
enum class MemDsbT : uint8_t { ALL = 0, DDR, UB, SEQ };
enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

template <typename T>
T ReadGmByPassDCache(__gm__ T* addr, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const auto* p = reinterpret_cast<const uint8_t*>(addr);
    megafuse_emu::CheckGmRegion(p, p, sizeof(T), "ReadGmByPassDCache", loc);
    megafuse_emu::LaunchYield(megafuse_emu::Core(loc));
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}
template <typename T>
void WriteGmByPassDCache(__gm__ T* addr, T value, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    auto* p = reinterpret_cast<uint8_t*>(addr);
    megafuse_emu::CheckGmRegion(p, p, sizeof(T), "WriteGmByPassDCache", loc);
    std::memcpy(p, &value, sizeof(T));
}
template <MemDsbT dsbMode>
void DataSyncBarrier(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Core(loc);
}
template <typename T, CacheLine entireType, DcciDst dcciDst>
void DataCacheCleanAndInvalid(const GlobalTensor<T>&, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::LaunchYield(megafuse_emu::Core(loc));
}
template <typename T, CacheLine entireType, DcciDst dcciDst>
void DataCacheCleanAndInvalid(const LocalTensor<T>&, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Core(loc);
}
template <typename T, CacheLine entireType>
void DataCacheCleanAndInvalid(const GlobalTensor<T>&, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::LaunchYield(megafuse_emu::Core(loc));
}

}  // namespace AscendC

namespace megafuse_emu {

// TILING_KEY_IS(k): the op's host tiling function picks a key per launch; here it is given at
// build time (`megafuse emu run --tiling-key N` = -DMEGAFUSE_EMU_TILING_KEY=N). Without one, a
// kernel that branches on the key stops instead of silently taking no branch.
inline bool TilingKeyIs(uint64_t key, Loc loc)
{
    Core(loc);
#ifdef MEGAFUSE_EMU_TILING_KEY
    return key == static_cast<uint64_t>(MEGAFUSE_EMU_TILING_KEY);
#else
    Fail(loc, Str("TILING_KEY_IS(", key, "): the kernel branches on the tiling key, which was not given "
                  "(megafuse emu run --tiling-key N)"));
    return false;
#endif
}

}  // namespace megafuse_emu

#define TILING_KEY_IS(k) ::megafuse_emu::TilingKeyIs(static_cast<uint64_t>(k), std::source_location::current())
