// Kernel-side printf of the devkit samples (`#include "utils/debug/asc_printf.h"`): on the host
// the C library's printf, and AscendC::printf / AscendC::PRINTF forwarding to it (no per-core
// prefix, no buffer limit; output order is the emulator's core order). Declared as the devkit
// declares them, `template <class... Args> void printf(__gm__ const char* fmt, Args&&... args)`,
// so a host call `printf("...")` in a file with `using namespace AscendC` (or matmul) still picks
// the C library's non-template printf instead of being ambiguous. half / bfloat16_t arguments
// print as double (%f), as the device's printf takes them.
#pragma once

#include <cstdio>
#include <type_traits>
#include <utility>

namespace AscendC {

namespace printf_detail {
template <class T>
auto Arg(T&& v)
{
    using U = std::decay_t<T>;
    if constexpr (std::is_class_v<U>)
        return static_cast<double>(static_cast<float>(v));
    else if constexpr (std::is_floating_point_v<U>)
        return static_cast<double>(v);
    else
        return v;
}
}  // namespace printf_detail

template <class... Args>
inline void printf(const char* fmt, Args&&... args)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    std::printf(fmt, printf_detail::Arg(std::forward<Args>(args))...);
#pragma GCC diagnostic pop
}
template <class... Args>
inline void PRINTF(const char* fmt, Args&&... args)
{
    AscendC::printf(fmt, std::forward<Args>(args)...);
}

}  // namespace AscendC
