// min / max at global scope for kernel code: the devkit's device compiler provides scalar min and
// max to __aicore__ code (samples call them unqualified, e.g. `baseM = min(baseM, rowNum);`); the
// header-only AscendC::Std::min is a different, qualified name. Non-template overloads of the
// scalar types, so that host code with `using namespace std;` still resolves std::min / std::max
// calls of these types to the same value (a non-template exact match is preferred) and mixed-type
// calls fail to compile instead of converting silently.
#pragma once

#include <cstdint>

#define MEGAFUSE_EMU_MINMAX(T)                                       \
    inline constexpr T min(T a, T b) { return b < a ? b : a; }       \
    inline constexpr T max(T a, T b) { return a < b ? b : a; }
MEGAFUSE_EMU_MINMAX(int32_t)
MEGAFUSE_EMU_MINMAX(uint32_t)
MEGAFUSE_EMU_MINMAX(int64_t)
MEGAFUSE_EMU_MINMAX(uint64_t)
MEGAFUSE_EMU_MINMAX(float)
#undef MEGAFUSE_EMU_MINMAX
