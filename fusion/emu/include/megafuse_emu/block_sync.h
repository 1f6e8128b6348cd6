// Inter-block synchronisation through GM words (devkit "核间同步" / "任务间同步" pages):
// IBSet / IBWait, InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock, and the
// SuperKernel markers WaitPreTaskEnd / SetNextTaskStart. Facts from the devkit reference pages:
//   * IBSet writes 1 into the 32 B slot (eventID * cores + blockIdx) of gmWorkspace, IBWait reads
//     that slot until it is 1; gmWorkspace >= cores * 32 B * eventID_max + blockIdx_max * 32 B +
//     32 B (cores = GetBlockNum(), x2 on a MIX launch), zeroed by the user; ubWorkspace >= 32 B
//     in VECIN / VECCALC / VECOUT; blockIdx in [0, cores - 1] (IBWait: not its own); AIV only.
//   * The determine-compute trio makes the AIVs run the code between WaitPreBlock and
//     NotifyNextBlock in blockIdx order, round after round; gmWorkspace >= GetBlockNum() * 32 B
//     (need not be zeroed: InitDetermineComputeWorkspace writes it), ubWorkspace >=
//     GetBlockNum() * 32 + 32 B; every core calls the pair the same number of times.
//   * WaitPreTaskEnd / SetNextTaskStart only let a SuperKernel's sub-kernels overlap: inside one
//     launch they order nothing; each is called at most once per core.
// The waits really wait: the cores of a launch run as cooperative threads (one at a time), a
// waiting core resumes once its GM condition holds, and a wait nobody can satisfy is reported as
// a deadlock naming the condition. The slot layout of the determine-compute trio is the
// emulator's own (one int32 round counter per core slot); the devkit does not document it.
#pragma once

#include <cstring>

#include "atomic.h"
#include "sync.h"

namespace megafuse_emu {

inline bool InsideArg(const CoreState& c, const void* p, uint64_t bytes)
{
    const auto* b = static_cast<const uint8_t*>(p);
    for (const GmRegion& r : c.gm)
        if (b >= r.base && b + bytes <= r.base + r.bytes) return true;
    return false;
}

inline void CheckUbWorkspace(const AscendC::LocalTensor<int32_t>& ub, uint64_t bytes, const char* api, const Loc& loc)
{
    const AscendC::TPosition pos = ub.GetPosition();
    if (pos != AscendC::TPosition::VECIN && pos != AscendC::TPosition::VECOUT && pos != AscendC::TPosition::VECCALC)
        Fail(loc, Str(api, ": ubWorkspace must be a VECIN / VECCALC / VECOUT tensor (UB)"));
    if (ub.GetSize() * 4 < bytes)
        Fail(loc, Str(api, ": ubWorkspace holds ", ub.GetSize() * 4, " B; it needs at least ", bytes, " B"));
}

inline int32_t LoadI32(const int32_t* p)
{
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline void StoreI32(int32_t* p, int32_t v) { std::memcpy(p, &v, sizeof v); }

// The IBSet / IBWait slot of (blockIdx, eventID), after the checks both calls share.
template <bool isAIVOnly>
int32_t* IbSlot(const AscendC::GlobalTensor<int32_t>& gm, const AscendC::LocalTensor<int32_t>& ub, int32_t blockIdx,
                int32_t eventID, const char* api, const Loc& loc)
{
    CoreState& c = Core(loc);
    if (c.kind == CoreKind::Cube)
        Fail(loc, Str(api, ": called on an AIC; on separated cores it synchronises AIVs only"));
    const int64_t cores = c.mix != nullptr ? c.block_num * 2 : c.block_num;
    if (blockIdx < 0 || blockIdx >= cores)
        Fail(loc, Str(api, ": blockIdx ", blockIdx, " outside [0, ", cores - 1, "] (the launch's ", cores, " cores)"));
    if (eventID < 0) Fail(loc, Str(api, ": negative eventID ", eventID));
    CheckUbWorkspace(ub, 32, api, loc);
    const uint64_t word = (static_cast<uint64_t>(eventID) * cores + blockIdx) * 8;  // 32 B slots of int32
    const uint8_t* p = gm.Access(word, 1, api, loc);
    auto* slot = reinterpret_cast<int32_t*>(const_cast<uint8_t*>(p));
    if (!InsideArg(c, slot, 32))
        Fail(loc, Str(api, ": the gmWorkspace slot of blockIdx ", blockIdx, " eventID ", eventID,
                      " lies outside every GM argument (it needs cores * 32 B * eventID + blockIdx * 32 B + 32 B)"));
    return slot;
}

inline void CheckIbValue(int32_t v, int32_t blockIdx, int32_t eventID, const char* api, const Loc& loc)
{
    if (v != 0 && v != 1)
        Fail(loc, Str(api, ": the gmWorkspace slot of blockIdx ", blockIdx, " eventID ", eventID, " holds ", v,
                      " (IBSet writes 1, the rest must be 0): zero the workspace before the kernel"));
}

inline int32_t* DetermineSlots(const AscendC::GlobalTensor<int32_t>& gm, const AscendC::LocalTensor<int32_t>& ub,
                               const char* api, const Loc& loc)
{
    CoreState& c = Core(loc);
    if (c.kind == CoreKind::Cube) Fail(loc, Str(api, ": called on an AIC; it orders AIV cores only"));
    const int64_t n = c.block_num * c.ratio;
    CheckUbWorkspace(ub, static_cast<uint64_t>(n) * 32 + 32, api, loc);
    const uint8_t* p = gm.Access(0, static_cast<uint64_t>(n) * 8, api, loc);
    return reinterpret_cast<int32_t*>(const_cast<uint8_t*>(p));
}

}  // namespace megafuse_emu

namespace AscendC {

template <bool isAIVOnly = true>
void IBSet(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
           int32_t eventID, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    int32_t* slot = megafuse_emu::IbSlot<isAIVOnly>(gmWorkspace, ubWorkspace, blockIdx, eventID, "IBSet", loc);
    megafuse_emu::CheckIbValue(megafuse_emu::LoadI32(slot), blockIdx, eventID, "IBSet", loc);
    megafuse_emu::StoreI32(slot, 1);
}

template <bool isAIVOnly = true>
void IBWait(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
            int32_t eventID, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using megafuse_emu::Str;
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    int32_t* slot = megafuse_emu::IbSlot<isAIVOnly>(gmWorkspace, ubWorkspace, blockIdx, eventID, "IBWait", loc);
    if (blockIdx == c.block_idx)
        megafuse_emu::Fail(loc, Str("IBWait: blockIdx ", blockIdx, " is the calling core itself (it waits for another)"));
    megafuse_emu::CheckIbValue(megafuse_emu::LoadI32(slot), blockIdx, eventID, "IBWait", loc);
    megafuse_emu::LaunchWaitUntil(
        c, [slot] { return megafuse_emu::LoadI32(slot) == 1; }, "IBWait",
        Str("no IBSet(blockIdx ", blockIdx, ", eventID ", eventID, ") has written its slot"), loc);
}

inline void InitDetermineComputeWorkspace(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace,
                                          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using megafuse_emu::Str;
    const char* api = "InitDetermineComputeWorkspace";
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    int32_t* slots = megafuse_emu::DetermineSlots(gmWorkspace, ubWorkspace, api, loc);
    if (c.determine_round >= 0)
        megafuse_emu::Fail(loc, Str(api, ": called twice on this core"));
    c.determine_round = 0;
    megafuse_emu::StoreI32(slots + c.block_idx * 8, 0);
    // Every core's slot must be written before any core reads it: the cores meet here (as at a
    // SyncAll: a core that never calls it leaves the others waiting, reported as a deadlock).
    megafuse_emu::LaunchSyncAll(c, true, 0, api, loc);
}

inline void WaitPreBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace,
                         megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    using megafuse_emu::Str;
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    int32_t* slots = megafuse_emu::DetermineSlots(gmWorkspace, ubWorkspace, "WaitPreBlock", loc);
    if (c.determine_round < 0)
        megafuse_emu::Fail(loc, "WaitPreBlock before InitDetermineComputeWorkspace on this core");
    const int64_t n = c.block_num * c.ratio, me = c.block_idx;
    // Round r: core 0 follows the last core's round r - 1, core b the round r of core b - 1.
    const int32_t need = me == 0 ? c.determine_round : c.determine_round + 1;
    const int32_t* prev = slots + (me == 0 ? n - 1 : me - 1) * 8;
    if (me == 0 && c.determine_round == 0) return;
    megafuse_emu::LaunchWaitUntil(
        c, [prev, need] { return megafuse_emu::LoadI32(prev) >= need; }, "WaitPreBlock",
        Str("block ", me == 0 ? n - 1 : me - 1, " has not called NotifyNextBlock for round ", need - 1,
            " (every core calls WaitPreBlock / NotifyNextBlock the same number of times)"),
        loc);
}

inline void NotifyNextBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace,
                            megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    int32_t* slots = megafuse_emu::DetermineSlots(gmWorkspace, ubWorkspace, "NotifyNextBlock", loc);
    if (c.determine_round < 0)
        megafuse_emu::Fail(loc, "NotifyNextBlock before InitDetermineComputeWorkspace on this core");
    megafuse_emu::StoreI32(slots + c.block_idx * 8, ++c.determine_round);
}

template <bool FORCE = false>
void WaitPreTaskEnd(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    if (c.task_marks & 1) megafuse_emu::Fail(loc, "WaitPreTaskEnd: called twice on this core (once per core)");
    c.task_marks |= 1;
}

template <bool FORCE = false>
void SetNextTaskStart(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
    if (c.task_marks & 2) megafuse_emu::Fail(loc, "SetNextTaskStart: called twice on this core (once per core)");
    c.task_marks |= 2;
}

}  // namespace AscendC
