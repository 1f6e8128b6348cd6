// Pipe synchronisation. The emulator runs every instruction in program order, so barriers
// and flags have nothing to wait for; they are checked instead: a WaitFlag with no SetFlag
// of the same event and id before it would wait forever on the hardware.
// Cross-core flags (CrossCoreSetFlag / CrossCoreWaitFlag) do wait: the cores of a MIX launch
// are threads, and a wait hands control to another core until its counter is raised.
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

inline const char* PipeName(pipe_t p)
{
    switch (p) {
        case PIPE_S: return "PIPE_S";
        case PIPE_V: return "PIPE_V";
        case PIPE_M: return "PIPE_M";
        case PIPE_MTE1: return "PIPE_MTE1";
        case PIPE_MTE2: return "PIPE_MTE2";
        case PIPE_MTE3: return "PIPE_MTE3";
        case PIPE_ALL: return "PIPE_ALL";
        case PIPE_FIX: return "PIPE_FIX";
        default: return "PIPE_?";
    }
}

// The checks CrossCoreSetFlag / CrossCoreWaitFlag share before the launch's scheduler takes over.
inline CoreState& CrossCoreCheck(int mode, uint16_t flag, const std::string& api, const Loc& loc)
{
    CoreState& c = Core(loc);
    if (!IsArch2201())
        Fail(loc, Str(api, ": cross-core flags do not exist on ", c.soc_name, " (arch ", c.soc.arch,
                      "); they are an arch 2201 (split AIC/AIV) feature"));
    if (mode < 0 || mode > 2)
        Fail(loc, Str(api, ": mode ", mode, " is not a cross-core sync mode of arch 2201 (modes 0, 1, 2; mode 4 "
                      "exists on Ascend 950 only)"));
    if (flag > 15)
        Fail(loc, Str(api, ": flag id ", flag, " is outside [0, 15] (the hardware would silently use its low 4 "
                      "bits, ", flag & 15, ")"));
    if (c.mix == nullptr)
        Fail(loc, Str(api, " in a kernel launched as ",
                      c.launch_type == KernelType::Unspecified ? "a non-MIX kernel"
                                                               : KernelTypeName(static_cast<int>(c.launch_type)),
                      ": cross-core flags need a MIX kernel type (the hardware starts no scheduling module for "
                      "KERNEL_TYPE_AIV_ONLY / AIC_ONLY kernels); declare KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_...) "
                      "and launch with run(..., kernel_type='mix_...')"));
    return c;
}

}  // namespace megafuse_emu

namespace AscendC {

// Cross-core synchronisation (devkit CrossCoreSetFlag / CrossCoreWaitFlag pages, arch 2201):
// every core has 16 flag counters (ids 0..15, each counting 0..15). CrossCoreSetFlag reports to
// the scheduler; once every core the mode names has reported, the scheduler adds 1 to the
// counter of each waiting side:
//   mode 0: all AIVs (or all AICs) of the launch set -> +1 on each of them
//   mode 1: both AIVs of a block set                  -> +1 on each of them
//   mode 2: the AIC sets -> +1 on each AIV of its block; all AIVs of a block set -> +1 on its AIC
// CrossCoreWaitFlag blocks until its own counter for the id is non-zero, then subtracts 1
// (modeId and pipe of the wait have no effect on 2201). See ../../README.md for the rules.
template <uint8_t modeId, pipe_t pipe>
void CrossCoreSetFlag(uint16_t flagId, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const std::string api = megafuse_emu::Str("CrossCoreSetFlag<", static_cast<int>(modeId), ", ",
                                              megafuse_emu::PipeName(pipe), ">(", flagId, ")");
    megafuse_emu::CoreState& c = megafuse_emu::CrossCoreCheck(modeId, flagId, api, loc);
    if (pipe == PIPE_S || pipe == PIPE_ALL)
        megafuse_emu::Fail(loc, megafuse_emu::Str(api, ": the pipe of a cross-core set must be PIPE_V, PIPE_M, "
                                                  "PIPE_MTE1, PIPE_MTE2, PIPE_MTE3 or PIPE_FIX (not PIPE_S / PIPE_ALL)"));
    megafuse_emu::MixSetFlag(c, modeId, flagId, api.c_str(), loc);
}

template <uint8_t modeId = 0, pipe_t pipe = PIPE_S>
void CrossCoreWaitFlag(uint16_t flagId, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    const std::string api = megafuse_emu::Str("CrossCoreWaitFlag(", flagId, ")");
    megafuse_emu::CoreState& c = megafuse_emu::CrossCoreCheck(modeId, flagId, api, loc);
    megafuse_emu::MixWaitFlag(c, flagId, api.c_str(), loc);
}

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
