// Pipe synchronisation. The emulator runs every instruction in program order, so barriers
// and flags have nothing to wait for; they are checked instead: a WaitFlag with no SetFlag
// of the same event and id before it would wait forever on the hardware.
#pragma once

#include "state.h"

namespace megafuse_emu {

inline const char* EventName(AscendC::HardEvent e)
{
    static const char* const names[] = {
        "MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1", "MTE2_V", "V_MTE2", "MTE3_V", "V_MTE3", "M_V", "V_M", "V_V",
        "MTE3_MTE1", "MTE1_MTE3", "MTE1_V", "MTE2_M", "M_MTE2", "V_MTE1", "M_FIX", "FIX_M", "MTE3_MTE2", "MTE2_MTE3",
        "S_V", "V_S", "S_MTE2", "MTE2_S", "S_MTE3", "MTE3_S", "MTE2_FIX", "FIX_MTE2", "FIX_S", "M_S", "FIX_MTE3"};
    const auto i = static_cast<size_t>(e);
    return i < sizeof(names) / sizeof(names[0]) ? names[i] : "?";
}

}  // namespace megafuse_emu

namespace AscendC {

template <pipe_t pipe>
void PipeBarrier()
{}

template <HardEvent event>
void SetFlag(int32_t eventID, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    if (eventID < 0) megafuse_emu::Fail(loc, megafuse_emu::Str("SetFlag: negative event id ", eventID));
    ++c.flags[{static_cast<int>(event), eventID}];
}

template <HardEvent event>
void WaitFlag(int32_t eventID, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    int& pending = c.flags[{static_cast<int>(event), eventID}];
    if (pending == 0)
        megafuse_emu::Fail(loc, megafuse_emu::Str("WaitFlag<HardEvent::", megafuse_emu::EventName(event), ">(", eventID,
                                                  ") has no SetFlag before it: on hardware this waits forever"));
    --pending;
}

}  // namespace AscendC

// The device intrinsic spelling.
inline void pipe_barrier(pipe_t) {}
