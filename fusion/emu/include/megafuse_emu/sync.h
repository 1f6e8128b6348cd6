// Pipe synchronisation. The emulator runs every instruction in program order, so barriers
// and flags have nothing to wait for; they are checked instead: a WaitFlag with no SetFlag
// of the same event and id before it would wait forever on the hardware.
// Cross-core flags (CrossCoreSetFlag / CrossCoreWaitFlag) do wait: the cores of a MIX launch
// are threads, and a wait hands control to another core until its counter is raised.
#pragma once

#include <cstring>

#include "state.h"
#include "tensor.h"

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

// SyncAll (devkit SyncAll page): a barrier over the cores of a launch -- every member must call
// it (the same number of times) before any member returns from it. Soft form (arch 2002 AI Core,
// arch 2201; isAIVOnly must be true): gmWorkspace (int32, >= cores x 32 B, zeroed before the
// first call: each core keeps its count in its own 32 B slot, which the emulator checks and
// writes like the device) and ubWorkspace (int32 in VECIN / VECCALC / VECOUT, >= cores x 32 B);
// usedCores = 0: every core of the launch (its AIVs on a MIX launch). Hard form (arch 2201
// only): no workspace; isAIVOnly = false takes the AICs in too. A member that finishes or
// waits elsewhere instead is reported as a deadlock naming it.
template <bool isAIVOnly = true>
void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
             const int32_t usedCores = 0, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using megafuse_emu::Fail;
    using megafuse_emu::Str;
    const char* api = "SyncAll(gmWorkspace, ubWorkspace)";
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    if (!isAIVOnly)
        Fail(loc, Str(api, ": the soft SyncAll synchronises vector cores only (isAIVOnly = false needs the hard "
                      "SyncAll<false>(), arch 2201)"));
    if (c.kind == megafuse_emu::CoreKind::Cube)
        Fail(loc, Str(api, ": called on an AIC; the soft SyncAll runs on the vector cores"));
    const int64_t cores = usedCores > 0 ? usedCores
                          : c.mix != nullptr ? c.block_num * c.ratio : c.block_num;
    if (gmWorkspace.GetSize() < static_cast<uint64_t>(cores) * 8)
        Fail(loc, Str(api, ": gmWorkspace holds ", gmWorkspace.GetSize() * 4, " B; ", cores, " cores need at least ",
                      cores * 32, " B (32 B per core)"));
    const TPosition pos = ubWorkspace.GetPosition();
    if (pos != TPosition::VECIN && pos != TPosition::VECOUT && pos != TPosition::VECCALC)
        Fail(loc, Str(api, ": ubWorkspace must be a VECIN / VECCALC / VECOUT tensor (UB)"));
    if (ubWorkspace.GetSize() < static_cast<uint64_t>(cores) * 8)
        Fail(loc, Str(api, ": ubWorkspace holds ", ubWorkspace.GetSize() * 4, " B; ", cores, " cores need at least ",
                      cores * 32, " B"));
    const int64_t slot = c.block_idx;   // GetBlockIdx: AIV order on a MIX launch, the block otherwise
    if (slot < cores) {
        int32_t* p = reinterpret_cast<int32_t*>(gmWorkspace.GetPhyAddr()) + slot * 8;
        const auto* b = reinterpret_cast<const uint8_t*>(p);
        bool inside = false;
        for (const megafuse_emu::GmRegion& r : c.gm) inside |= b >= r.base && b + 32 <= r.base + r.bytes;
        if (!inside)
            Fail(loc, Str(api, ": the gmWorkspace slot of core ", slot, " lies outside every GM argument: the "
                          "workspace needs at least ", cores * 32, " B (32 B per core)"));
        // the flag counts this core's SyncAll calls on this workspace (a kernel may sync on several:
        // the devkit's soft SyncAll waits until every core's flag reaches its own incremented one)
        int& done = c.soft_syncs[p];
        int32_t v;
        std::memcpy(&v, p, sizeof v);
        if (v != done)
            Fail(loc, Str(api, ": the gmWorkspace slot of core ", slot, " holds ", v, " before its SyncAll #",
                          done + 1, " on that workspace (expected ", done, "): zero the workspace before the first "
                          "SyncAll and let nothing else write it"));
        v = ++done;
        std::memcpy(p, &v, sizeof v);
    }
    megafuse_emu::LaunchSyncAll(c, true, usedCores, api, loc);
}

template <bool isAIVOnly = true>
void SyncAll(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    const char* api = isAIVOnly ? "SyncAll()" : "SyncAll<false>()";
    if (!megafuse_emu::IsArch2201())
        megafuse_emu::Fail(loc, megafuse_emu::Str(api, ": the hard SyncAll exists on arch 2201 (Atlas A2) only; ",
                                                  c.soc_name, " needs the soft SyncAll(gmWorkspace, ubWorkspace)"));
    if (isAIVOnly && c.kind == megafuse_emu::CoreKind::Cube)
        megafuse_emu::Fail(loc, megafuse_emu::Str(api, ": called on an AIC with isAIVOnly = true (use SyncAll<false>() "
                                                  "in a MIX kernel whose AICs take part)"));
    megafuse_emu::LaunchSyncAll(c, isAIVOnly, 0, api, loc);
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
