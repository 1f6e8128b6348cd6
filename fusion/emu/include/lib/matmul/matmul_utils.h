// Scalar helpers of the devkit's matmul library that kernels call as AscendC::X (devkit
// adv_api matmul utils): Ceil(a, b) = ceil(a / b), CeilAlign(a, b) = Ceil(a, b) * b, for b > 0.
#pragma once

#include <type_traits>

#include "megafuse_emu/state.h"

namespace AscendC {

template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
inline T Ceil(T num1, T num2, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    if (!(num2 > 0)) megafuse_emu::Fail(loc, megafuse_emu::Str("Ceil(", num1, ", ", num2, "): the divisor must be > 0"));
    return (num1 + num2 - 1) / num2;
}

}  // namespace AscendC
