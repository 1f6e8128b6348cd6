// Kernel logging and checks of the devkit's samples: KERNEL_LOG(level, fmt, ...) and
// ASCENDC_ASSERT(cond, { on-failure statements }). On the device these are active in the CPU
// debug build only; here a failed ASCENDC_ASSERT runs its statements and stops the kernel with
// the condition and source line (a wrong assumption must not run on silently).
#pragma once

#include <cstdio>

#include "devkit.h"

namespace megafuse_emu {
enum KernelLogLevel : int { KERNEL_DEBUG = 0, KERNEL_INFO = 1, KERNEL_WARN = 2, KERNEL_ERROR = 3 };
inline const char* KernelLogName(int level)
{
    static const char* const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    return level >= 0 && level <= 3 ? names[level] : "LOG";
}
}  // namespace megafuse_emu

using megafuse_emu::KERNEL_DEBUG;
using megafuse_emu::KERNEL_ERROR;
using megafuse_emu::KERNEL_INFO;
using megafuse_emu::KERNEL_WARN;

#define KERNEL_LOG(level, fmt, ...)                                                                    \
    (std::fprintf(stderr, "[%s] " fmt "\n", ::megafuse_emu::KernelLogName(level) __VA_OPT__(, ) __VA_ARGS__))

#define ASCENDC_ASSERT(cond, ...)                                                                      \
    do {                                                                                               \
        if (!(cond)) {                                                                                 \
            __VA_ARGS__;                                                                               \
            ::megafuse_emu::AssertFailed(#cond, ::std::source_location::current());                    \
        }                                                                                              \
    } while (0)

// The devkit spells the event id type both ways: ::TEventID and AscendC::TEventID.
namespace AscendC {
using ::TEventID;
}
