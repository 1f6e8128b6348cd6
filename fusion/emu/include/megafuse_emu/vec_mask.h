// The vector mask register and its modes (devkit SetMaskNorm / SetMaskCount / SetVectorMask /
// ResetMask, isSetMask = false, MASK_PLACEHOLDER). Per core (a thread runs one core at a time,
// the serial tells block runs apart): the 128 mask bits, the mode, and whether anything set it.
// A mask-form op with isSetMask = false takes the register instead of its mask argument:
//   normal mode   the bits are the lane mask (for 32-bit types the low 64 bits);
//   counter mode  the low 64 bits are an element count: the op runs ceil(count / lanes) repeats,
//                 the last one partial, and its repeatTime argument is not used.
// Reading the register before any SetVectorMask / ResetMask on the core is refused (on the
// device it holds what the previous kernel left).
#pragma once

#include "state.h"

namespace AscendC {
enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };
constexpr uint64_t MASK_PLACEHOLDER = 0;
}  // namespace AscendC

namespace megafuse_emu {

struct MaskReg {
    uint64_t serial = ~0ull;
    bool counter = false;
    bool set = false;
    bool pending = false;  // the next mask conversion reads the register (isSetMask = false)
    uint64_t w[2] = {0, 0};
};
inline MaskReg& VecMask(const Loc& loc)
{
    static thread_local MaskReg reg;
    CoreState& c = Core(loc);
    if (reg.serial != c.serial) reg = MaskReg{c.serial};
    return reg;
}

}  // namespace megafuse_emu

namespace AscendC {

inline void SetMaskCount(megafuse_emu::Loc loc = megafuse_emu::Loc::current()) { megafuse_emu::VecMask(loc).counter = true; }
inline void SetMaskNorm(megafuse_emu::Loc loc = megafuse_emu::Loc::current()) { megafuse_emu::VecMask(loc).counter = false; }
inline void ResetMask(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::MaskReg& m = megafuse_emu::VecMask(loc);
    m.w[0] = m.w[1] = ~0ull;
    m.set = true;
}
template <typename T, MaskMode mode = MaskMode::NORMAL>
void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::MaskReg& m = megafuse_emu::VecMask(loc);
    if (mode == MaskMode::COUNTER) m.counter = true;
    m.w[0] = maskLow;
    m.w[1] = maskHigh;
    m.set = true;
}
// One length: a continuous mask of len lanes (normal mode) or an element count (counter mode).
template <typename T, MaskMode mode = MaskMode::NORMAL>
void SetVectorMask(int32_t len, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::MaskReg& m = megafuse_emu::VecMask(loc);
    if (mode == MaskMode::COUNTER) m.counter = true;
    if (len < 0) megafuse_emu::Fail(loc, megafuse_emu::Str("SetVectorMask: length ", len, " is negative"));
    if (m.counter) {
        m.w[0] = static_cast<uint64_t>(len);
        m.w[1] = 0;
    } else {
        const uint32_t lanes = 256 / static_cast<uint32_t>(std::max<size_t>(sizeof(T), 2));
        if (static_cast<uint32_t>(len) > lanes)
            megafuse_emu::Fail(loc, megafuse_emu::Str("SetVectorMask: length ", len, " exceeds ", lanes, " lanes"));
        m.w[0] = len >= 64 ? ~0ull : ((1ull << len) - 1);
        m.w[1] = len >= 128 ? ~0ull : (len > 64 ? ((1ull << (len - 64)) - 1) : 0);
    }
    m.set = true;
}

}  // namespace AscendC
