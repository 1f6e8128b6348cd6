// Host-side file helpers of the devkit-style programs in this directory: inputs are read from
// ./input/NAME.bin and outputs written to ./output/NAME.bin (raw little-endian arrays), the
// convention of the devkit's samples. The tests write the inputs with NumPy and compare the
// outputs.
#pragma once

#include <cstdio>
#include <string>

inline bool ReadInput(const std::string& name, void* buf, size_t bytes)
{
    std::FILE* f = std::fopen(("input/" + name + ".bin").c_str(), "rb");
    if (f == nullptr) {
        std::fprintf(stderr, "cannot open input/%s.bin\n", name.c_str());
        return false;
    }
    const size_t got = std::fread(buf, 1, bytes, f);
    std::fclose(f);
    if (got != bytes) std::fprintf(stderr, "input/%s.bin: %zu of %zu bytes\n", name.c_str(), got, bytes);
    return got == bytes;
}

inline bool WriteOutput(const std::string& name, const void* buf, size_t bytes)
{
    std::FILE* f = std::fopen(("output/" + name + ".bin").c_str(), "wb");
    if (f == nullptr) {
        std::fprintf(stderr, "cannot write output/%s.bin\n", name.c_str());
        return false;
    }
    const size_t put = std::fwrite(buf, 1, bytes, f);
    std::fclose(f);
    return put == bytes;
}
