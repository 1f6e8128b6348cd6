// The kernel-side assert (devkit "assert" API page: `assert(expr)` and `assert(expr, fmt,
// args...)`; a false condition stops the kernel and prints "[ASSERT] file:line: Assertion
// `expr' message"). Kernels usually reach it through <cassert>'s name, so the macro replaces the
// C library's: inside an emulated core a false condition is the kernel's error at its line (one
// line, like every other stop), on the host it is the C library's assert (NDEBUG honoured there).
// A <cassert> included again after kernel_operator.h restores the C library's macro, whose failure
// in a kernel is then the confined run's "crashed with SIGABRT" line.
#pragma once

#include <cassert>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "state.h"

namespace megafuse_emu {

inline void KernelAssertFailed(const char* expr, const char* file, unsigned line, const char* func, const Loc& loc,
                               const char* fmt = nullptr, ...)
{
    if (g_core == nullptr) {
#ifndef NDEBUG
        __assert_fail(expr, file, line, func);
#else
        (void)file, (void)line, (void)func;
        return;
#endif
    }
    std::string msg = Str("Assertion `", expr, "' failed");
    if (fmt != nullptr) {
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        msg += Str(": ", buf);
        while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    }
    Fail(loc, msg);
}

}  // namespace megafuse_emu

#undef assert
#define assert(cond, ...)                                                                                     \
    (static_cast<bool>(cond) ? (void)0                                                                        \
                             : ::megafuse_emu::KernelAssertFailed(#cond, __FILE__, __LINE__, __func__,         \
                                                                  ::std::source_location::current()           \
                                                                  __VA_OPT__(, ) __VA_ARGS__))
