// Cube-side additions of the devkit API (constants and parameter structs) used by the matrix
// samples. Facts from the devkit reference pages named at each item.
#pragma once

#include <cstdint>

namespace AscendC {

// The C0 block of the cube data paths in bytes (32 B; DataCopyParams' block units).
constexpr uint32_t DEFAULT_C0_SIZE = 32;

}  // namespace AscendC
