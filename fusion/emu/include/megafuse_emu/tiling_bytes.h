// convert_from_bytes<T>(bytes): the devkit compiler's builtin that turns a constexpr byte array
// into a constant struct at compile time (devkit guide "AOT编译优化", the GET_TILING_DATA
// expansion of its compile-time tiling). Here a constexpr copy through std::bit_cast; T must be
// trivially copyable and `bytes` must hold at least sizeof(T) bytes.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

template <typename T>
constexpr T convert_from_bytes(const uint8_t* bytes)
{
    static_assert(std::is_trivially_copyable_v<T>, "convert_from_bytes needs a trivially copyable type");
    std::array<uint8_t, sizeof(T)> raw{};
    for (std::size_t i = 0; i < sizeof(T); ++i) raw[i] = bytes[i];
    return std::bit_cast<T>(raw);
}
