// convert_from_bytes<T>(bytes) (devkit guide "AOT编译优化"): turns a constexpr byte array (a
// tiling struct's bytes) into a constant T at compile time, so a kernel template can be
// instantiated with a fixed tiling. T must be trivially copyable; reading past the array is a
// compile-time error (constant evaluation rejects it).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

template <typename T>
constexpr T convert_from_bytes(const uint8_t* bytes)
{
    static_assert(std::is_trivially_copyable_v<T>, "convert_from_bytes: T must be trivially copyable");
    std::array<uint8_t, sizeof(T)> raw{};
    for (size_t i = 0; i < sizeof(T); ++i) raw[i] = bytes[i];
    return std::bit_cast<T>(raw);
}
