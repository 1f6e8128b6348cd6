// The bounds-checked memcpy_s of the securec library that the CANN headers bring into host code
// (the devkit samples copy tiling structs with it). Semantics of securec's memcpy_s: EOK (0) on
// success; a null pointer, count > destMax or overlapping ranges copy nothing, clear dest (when
// it is valid, destMax bytes) and return an error code -- never a silent partial copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#ifndef EOK
#define EOK 0
#endif
typedef int errno_t;

inline errno_t memcpy_s(void* dest, size_t destMax, const void* src, size_t count)
{
    if (dest == nullptr || destMax == 0) return 22;  // EINVAL
    if (src == nullptr || count > destMax) {
        std::memset(dest, 0, destMax);
        return src == nullptr ? 150 : 162;  // securec's EINVAL_AND_RESET / ERANGE_AND_RESET
    }
    const auto* d = static_cast<const uint8_t*>(dest);
    const auto* s = static_cast<const uint8_t*>(src);
    if (count != 0 && d < s + count && s < d + count) {
        std::memset(dest, 0, destMax);
        return 182;  // EOVERLAP_AND_RESET
    }
    std::memcpy(dest, src, count);
    return EOK;
}
