// Kernel-side printf of the devkit samples (`#include "utils/debug/asc_printf.h"`): on the host
// the C library's printf, and AscendC::printf forwarding to it (no per-core prefix, no buffer
// limit; output order is the emulator's sequential core order).
#pragma once

#include <cstdarg>
#include <cstdio>

namespace AscendC {

inline int printf(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = std::vprintf(fmt, ap);
    va_end(ap);
    return n;
}

}  // namespace AscendC
