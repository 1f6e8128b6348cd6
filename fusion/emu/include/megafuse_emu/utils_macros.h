// Branch hints the devkit's kernel_operator.h brings (basic_api utils macros): likely(x) /
// unlikely(x) as __builtin_expect, defined only where nothing else defined them.
#pragma once

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif
