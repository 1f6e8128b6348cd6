// Kernel-side printf of the devkit samples (`#include "utils/debug/asc_printf.h"`): on the host
// the C library's printf, and AscendC::printf forwarding to it (no per-core prefix, no buffer
// limit; output order is the emulator's sequential core order).
#pragma once

#include <cstdio>

namespace AscendC {

// A template, as in the devkit, so that code seeing both ::printf and AscendC::printf (after
// `using namespace AscendC`) still resolves an unqualified call.
template <class... Args>
inline int printf(const char* fmt, Args&&... args)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    return std::printf(fmt, args...);
#pragma GCC diagnostic pop
}

}  // namespace AscendC
