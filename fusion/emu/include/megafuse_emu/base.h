// megafuse host emulation of the Ascend C API: keywords, scalar types, enums, constants.
//
// Everything here is written from the public Ascend C documentation (asc-devkit docs and
// interface headers); no vendor code is used. Names, template parameters and enum members
// follow the devkit so a kernel that compiles here is expected to compile with bisheng.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

// ---- Kernel keywords -------------------------------------------------------------------
// __global__ marks a kernel entry point. The shared library is built with
// -fvisibility=hidden, so mapping __global__ to default visibility is what makes exactly the
// kernel entry points (and the runtime's C API) findable by the Python harness.
#define __global__ __attribute__((visibility("default")))
#define __aicore__
#define __gm__
#define GM_ADDR __gm__ uint8_t*

// half is the Ascend IEEE binary16; g++ >= 12 implements _Float16 on x86-64 with correct
// rounding on conversion, which is what the vector unit does per instruction.
using half = _Float16;

// bfloat16_t: storage type with round-to-nearest-even conversion from float (g++ 12 has no
// arithmetic __bf16 on x86). Arithmetic goes through float, like the hardware's fp32 path.
struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    bfloat16_t(float f)  // NOLINT: implicit like the device type
    {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it quiet
            bits = static_cast<uint16_t>((u >> 16) | 0x40u);
        } else {
            u += 0x7fffu + ((u >> 16) & 1u);
            bits = static_cast<uint16_t>(u >> 16);
        }
    }
    operator float() const  // NOLINT
    {
        uint32_t u = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
};

namespace megafuse_emu {

using Loc = std::source_location;

// Thrown by every rule check; caught by megafuse_emu_run and returned to Python.
struct EmuError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

template <typename... A>
std::string Str(const A&... a)
{
    std::ostringstream os;
    (os << ... << a);
    return os.str();
}

template <typename T>
constexpr const char* TypeName()
{
    if constexpr (std::is_same_v<T, half>) return "half";
    else if constexpr (std::is_same_v<T, float>) return "float";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16_t";
    else if constexpr (std::is_same_v<T, int8_t>) return "int8_t";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8_t";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16_t";
    else if constexpr (std::is_same_v<T, uint16_t>) return "uint16_t";
    else if constexpr (std::is_same_v<T, int32_t>) return "int32_t";
    else if constexpr (std::is_same_v<T, uint32_t>) return "uint32_t";
    else if constexpr (std::is_same_v<T, int64_t>) return "int64_t";
    else if constexpr (std::is_same_v<T, uint64_t>) return "uint64_t";
    else return "T";
}

template <typename T>
constexpr bool kIsFloatLike = std::is_same_v<T, half> || std::is_same_v<T, float> ||
                              std::is_same_v<T, bfloat16_t>;

}  // namespace megafuse_emu

// ---- Enums and constants of the AscendC namespace --------------------------------------
// pipe_t is a global enum in the device toolchain.
enum pipe_t : uint8_t { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_FIX };

// Fixpipe quantisation modes (a global enum in the device toolchain, used as QuantMode_t::X).
enum QuantMode_t : uint8_t {
    NoQuant = 0, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8
};

// Padding mode of DataCopyEnhancedParams (a global enum in the device toolchain, used as
// pad_t::PAD_NONE). The devkit documents padMode as reserved; only PAD_NONE is accepted here.
enum pad_t : uint8_t {
    PAD_NONE = 0, PAD_MODE1, PAD_MODE2, PAD_MODE3, PAD_MODE4, PAD_MODE5, PAD_MODE6, PAD_MODE7, PAD_MODE8
};

namespace AscendC {

// Logical buffer positions. VECIN/VECOUT/VECCALC(LCM) live in the Unified Buffer, A1/B1 in
// L1, A2 in L0A, B2 in L0B, CO1 in L0C (devkit "TPosition" page).
enum class TPosition : uint8_t {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM, TSCM, C2PIPE2GM, MAX
};
using QuePosition = TPosition;

enum class HardEvent : uint8_t {
    MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V,
    MTE3_MTE1, MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3,
    S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3, MAX
};

// Cast rounding (devkit Cast page): CAST_NONE means CAST_RINT when precision is lost.
enum class RoundMode {
    CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD
};

// DataCopyEnhancedParams (devkit "增强数据搬运" page, utils/kernel_utils_mode.h): the unit of an
// L0C -> UB (CO1 -> CO2) move and its on-the-fly dequantisation.
enum class BlockMode : uint8_t {
    BLOCK_MODE_NORMAL = 0, BLOCK_MODE_MATRIX, BLOCK_MODE_VECTOR, BLOCK_MODE_SMALL_CHANNEL, BLOCK_MODE_DEPTHWISE
};
enum class DeqScale : uint8_t { DEQ_NONE = 0, DEQ, VDEQ, DEQ8, VDEQ8, DEQ16, VDEQ16 };

// Values of g_coreType (devkit kernel_utils: MIX 0, AIC 1, AIV 2). On arch 2201 a kernel is
// compiled once per core type and g_coreType says which; on coupled cores (2002) it is MIX.
constexpr int32_t MIX = 0;
constexpr int32_t AIC = 1;
constexpr int32_t AIV = 2;

constexpr int32_t ONE_BLK_SIZE = 32;           // one DataBlock
constexpr int32_t ONE_REPEAT_BYTE_SIZE = 256;  // one vector repeat = 8 DataBlocks
constexpr int32_t DEFAULT_BLK_NUM = 8;
constexpr int32_t DEFAULT_BLK_STRIDE = 1;
constexpr uint8_t DEFAULT_REPEAT_STRIDE = 8;
constexpr int32_t MAX_REPEAT_TIMES = 255;
constexpr int32_t BLOCK_CUBE = 16;             // cube fractal edge
constexpr int32_t CUBE_MAX_SIZE = 256;         // elements of a 16x16 fractal
constexpr uint16_t DEFAULT_DATA_COPY_NBURST = 1;
constexpr uint16_t DEFAULT_DATA_COPY_STRIDE = 0;

}  // namespace AscendC
