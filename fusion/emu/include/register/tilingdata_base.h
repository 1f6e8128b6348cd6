// Op-development tiling definitions (the devkit's BEGIN_TILING_DATA_DEF family), host and kernel
// side alike: each definition becomes a plain struct whose fields are laid out in declaration
// order with their natural alignment, with set_<field> / get_<field>, SaveToBuffer and
// GetDataSize, so the bytes the host saves are the struct the kernel's GET_TILING_DATA reads.
// REGISTER_TILING_DATA_CLASS(Op, Class) makes Class the default tiling struct of the file
// (`megafuse emu run --tiling-header` brings it into a kernel that has no definition of its own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#define BEGIN_TILING_DATA_DEF(name) \
    struct name {
#define TILING_DATA_FIELD_DEF(type, field)                  \
    type field{};                                           \
    void set_##field(type v) { field = v; }                 \
    type get_##field() const { return field; }
#define TILING_DATA_FIELD_DEF_ARR(type, count, field)                                   \
    type field[count]{};                                                                \
    void set_##field(const type* v) { std::memcpy(field, v, sizeof(field)); }           \
    const type* get_##field() const { return field; }
#define TILING_DATA_FIELD_DEF_STRUCT(type, field) type field{};
#define END_TILING_DATA_DEF                                                                          \
    void SaveToBuffer(void* buf, size_t capacity) const                                              \
    {                                                                                                \
        std::memcpy(buf, this, capacity < sizeof(*this) ? capacity : sizeof(*this));                 \
    }                                                                                                \
    size_t GetDataSize() const { return sizeof(*this); }                                             \
    }
#define REGISTER_TILING_DATA_CLASS(op, cls) using megafuse_emu_default_tiling_t = cls;
