// Kernel-side assert (devkit "assert" page): `assert(expr)` and the deprecated
// `assert(expr, fmt, args...)` are usable in a kernel without <cassert>; on failure the kernel
// stops with the condition (and the printf-formatted message), as ascendc_assert does.
// Included last by kernel_operator.h; a later #include <cassert> in host code puts the standard
// one-argument macro back, which is what host code expects.
#pragma once

#include "megafuse_emu/devkit.h"

#undef assert
#define assert(...) ascendc_assert(__VA_ARGS__)
