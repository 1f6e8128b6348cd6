// GroupBarrier<PipeMode> (devkit GroupBarrier pages, Atlas A2): an Arrive group of AIVs and a
// Wait group; each Wait(i) returns once every arriver has called Arrive for this round.
// Documented: groupWorkspace is a GM address, 512 B aligned, zeroed by the user, taking
// waitSize x 512 B; PipeMode MTE3_MODE only; AIV cores; the last 1600 B of UB are taken while
// it is used; not together with REGIST_MATMUL_OBJ. Arrive's and Wait's index is the core's place
// in its group ([0, arriveSize) / [0, waitSize)). The content of a waiter's 512 B slot is the
// emulator's own: its first int32 counts the arrivals (the devkit does not document the
// layout); a slot holding more than the arrivals so far is an unzeroed workspace. The waits
// really wait (cooperative launch, as IBWait). Also InitOutput / InitGlobalMemory (GM fill).
#pragma once

#include <cstring>

#include "block_sync.h"

namespace AscendC {

enum class PipeMode : uint8_t { SCALAR_MODE = 0, MTE3_MODE = 1, MAX };

template <PipeMode pipeMode>
class GroupBarrier {
    static_assert(pipeMode == PipeMode::MTE3_MODE, "GroupBarrier: the devkit supports PipeMode::MTE3_MODE only");

public:
    GroupBarrier(GM_ADDR groupWorkspace, uint32_t arriveSizeIn, uint32_t waitSizeIn,
                 megafuse_emu::Loc loc = megafuse_emu::Loc::current())
        : ws_(reinterpret_cast<uint8_t*>(groupWorkspace)), arrive_(arriveSizeIn), wait_(waitSizeIn)
    {
        using megafuse_emu::Fail;
        using megafuse_emu::Str;
        megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
        if (!megafuse_emu::IsArch2201())
            Fail(loc, Str("GroupBarrier: documented for Atlas A2 (arch 2201), not for ", c.soc_name));
        if (c.kind == megafuse_emu::CoreKind::Cube) Fail(loc, "GroupBarrier on an AIC: the Arrive / Wait groups are AIVs");
        if (arrive_ == 0 || wait_ == 0) Fail(loc, "GroupBarrier: arriveSizeIn and waitSizeIn must be > 0");
        if (ws_ == nullptr) Fail(loc, "GroupBarrier: groupWorkspace is a null pointer");
        if (reinterpret_cast<uintptr_t>(ws_) % 512 != 0)
            Fail(loc, Str("GroupBarrier: groupWorkspace must be 512 B aligned (", reinterpret_cast<uintptr_t>(ws_) % 512,
                          " B off)"));
        megafuse_emu::CheckGmRegion(ws_, ws_, static_cast<uint64_t>(wait_) * 512, "GroupBarrier groupWorkspace", loc,
                                    Str(" (waitSizeIn ", wait_, " x 512 B)"));
        const uint64_t ub = c.soc.ub_bytes;
        if (ub != 0 && c.used[static_cast<int>(megafuse_emu::Mem::UB)] + 1600 > ub)
            Fail(loc, Str("GroupBarrier takes the last 1600 B of UB, but the kernel's buffers reach byte ",
                          c.used[static_cast<int>(megafuse_emu::Mem::UB)], " of ", ub));
    }

    void Arrive(uint32_t arriveIndex, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        megafuse_emu::Core(loc);
        if (arriveIndex >= arrive_)
            megafuse_emu::Fail(loc, megafuse_emu::Str("GroupBarrier::Arrive(", arriveIndex, "): the Arrive group has ",
                                                      arrive_, " members (index in [0, ", arrive_, "))"));
        ++arrived_;
        for (uint32_t w = 0; w < wait_; ++w) {
            int32_t* slot = Slot(w);
            megafuse_emu::StoreI32(slot, megafuse_emu::LoadI32(slot) + 1);
        }
    }

    void Wait(uint32_t waitIndex, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        using megafuse_emu::Str;
        megafuse_emu::CoreState& c = megafuse_emu::Core(loc);
        if (waitIndex >= wait_)
            megafuse_emu::Fail(loc, Str("GroupBarrier::Wait(", waitIndex, "): the Wait group has ", wait_,
                                        " members (index in [0, ", wait_, "))"));
        const int32_t need = static_cast<int32_t>(++rounds_ * arrive_);
        const int32_t* slot = Slot(waitIndex);
        if (megafuse_emu::LoadI32(slot) > need)
            megafuse_emu::Fail(loc, Str("GroupBarrier::Wait(", waitIndex, "): its workspace slot counts ",
                                        megafuse_emu::LoadI32(slot), " arrivals but only ", need, " are possible so "
                                        "far: zero the groupWorkspace before the launch"));
        megafuse_emu::LaunchWaitUntil(
            c, [slot, need] { return megafuse_emu::LoadI32(slot) >= need; }, "GroupBarrier::Wait",
            Str("only some of the ", arrive_, " Arrive-group cores have called Arrive (round ", rounds_, ")"), loc);
    }

private:
    int32_t* Slot(uint32_t w) const { return reinterpret_cast<int32_t*>(ws_ + static_cast<uint64_t>(w) * 512); }

    uint8_t* ws_;
    uint32_t arrive_, wait_;
    uint32_t arrived_ = 0;
    uint32_t rounds_ = 0;
};

// InitGlobalMemory / InitOutput (devkit): fill `size` elements of GM with `value`.
template <typename T>
void InitGlobalMemory(const GlobalTensor<T>& gm, uint64_t size, T value = 0,
                      megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Core(loc);
    auto* p = reinterpret_cast<uint8_t*>(gm.GetPhyAddr());
    megafuse_emu::CheckGmRegion(p, p, size * sizeof(T), "InitGlobalMemory", loc);
    for (uint64_t i = 0; i < size; ++i) std::memcpy(p + i * sizeof(T), &value, sizeof(T));
}
template <typename T>
void InitOutput(const GlobalTensor<T>& gm, uint64_t size, T value = 0, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    InitGlobalMemory(gm, size, value, loc);
}

}  // namespace AscendC
