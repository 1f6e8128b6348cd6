// Emulation runtime: runs a kernel on fresh emulated cores and keeps the counters. Compiled
// into the same shared library as one kernel (see harness.py).
//
// Non-MIX launches of more than kMaxCoop blocks run the blocks one after the other on the
// calling thread. A MIX launch (arch 2201: 1 AIC + 2 / 1 AIVs per block, or AICs / AIVs only
// with the scheduler on), and a non-MIX launch of at most kMaxCoop blocks (so that SyncAll can
// hold every block at its barrier), runs every core as a thread of one launch, cooperatively: exactly one core runs at a time and it
// hands control over only when it blocks in CrossCoreWaitFlag or finishes. The next core is
// the first one after it (in launch order: per block the AIC, then AIV0, AIV1) that has not
// started or whose awaited flag counter is now non-zero (or whose SyncAll every member reached). This makes a launch deterministic,
// free of host data races, and exact about deadlocks: when the running core blocks and no
// other core can run, every live core waits on a counter nobody can raise any more.
#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "kernel_operator.h"
#include "megafuse_emu/runtime_api.h"

namespace megafuse_emu {

thread_local CoreState* g_core = nullptr;

// Thrown through a core's kernel frames when its launch is aborted (another core failed or
// the launch deadlocked); never reaches the host.
struct LaunchAborted {};

constexpr int kFlags = 16;        // flag ids per core (modes 0, 1, 2)
constexpr int kCounterMax = 15;   // a flag counter counts 0..15

// What raised a flag counter last (for the end-of-launch pairing check).
struct FlagCounter {
    int value = 0;
    int setter = -1;  // core index
    Loc loc;
    std::string api;
};

// The reports of one synchronisation (mode, scope, flag): it completes once every member has
// reported, then raises the counters of the targets.
struct Collection {
    std::vector<int> members;
    std::vector<int> targets;
    std::vector<int> pending;  // per member: reports not yet used
    std::vector<Loc> loc;      // per member: its last report
    std::vector<std::string> api;
    int mode = 0;
    int flag = 0;
};

struct MixLaunch {
    enum class St : uint8_t { Ready, Running, Waiting, Done };

    KernelType type = KernelType::MixAic1_2;
    bool plain = false;  // a non-MIX launch run cooperatively: one core per block, no cross-core flags
    int block_dim = 1;
    int aivs = 2;      // AIVs per block
    bool aic = true;   // an AIC per block
    std::vector<std::unique_ptr<CoreState>> cores;  // per block: AIC, AIV0, AIV1
    std::vector<St> st;
    std::vector<int> wait_flag;
    std::vector<Loc> wait_loc;
    std::vector<std::string> wait_api;
    std::vector<uint64_t> wait_tick;
    std::vector<int> wait_sync;                  // per core: the SyncAll number it waits at (0: a flag)
    std::vector<std::vector<int>> wait_members;  // per core: the cores of that SyncAll
    std::vector<std::array<FlagCounter, kFlags>> counters;
    std::map<std::tuple<int, int, int>, Collection> colls;  // (mode, scope, flag)

    std::mutex mu;
    std::condition_variable cv;
    int running = -1;
    uint64_t tick = 0;
    bool abort = false;
    std::string error;  // the first error wins

    int PerBlock() const { return (aic ? 1 : 0) + aivs; }
    int Aic(int64_t b) const { return static_cast<int>(b) * PerBlock(); }
    int Aiv(int64_t b, int s) const { return static_cast<int>(b) * PerBlock() + (aic ? 1 : 0) + s; }
    int Size() const { return static_cast<int>(cores.size()); }

    std::string Describe(int i) const
    {
        const CoreState& c = *cores[i];
        if (plain) return Str("block ", c.group);
        if (c.kind == CoreKind::Cube) return Str("the AIC of block ", c.group);
        if (aivs > 1) return Str(CoreName(c), " of block ", c.group);
        return Str("the AIV of block ", c.group);
    }

    bool SyncReached(int j) const
    {
        for (int m : wait_members[j])
            if (cores[m]->syncs < wait_sync[j]) return false;
        return true;
    }

    bool Runnable(int j) const
    {
        if (st[j] == St::Ready) return true;
        if (st[j] != St::Waiting) return false;
        return wait_sync[j] > 0 ? SyncReached(j) : counters[j][wait_flag[j]].value > 0;
    }

    // The next core to run after core i, or -1.
    int PickNext(int i) const
    {
        const int n = Size();
        for (int k = 1; k <= n; ++k) {
            const int j = (i + k) % n;
            if (Runnable(j)) return j;
        }
        return -1;
    }

    void Fails(const std::string& msg)  // under mu
    {
        if (error.empty()) error = msg;
        abort = true;
        cv.notify_all();
    }

    // Every live core waits on a counter nobody can raise any more: report the core that has
    // waited longest, with the state of the others and the sets its flag still lacks.
    std::string DeadlockMessage() const
    {
        int victim = -1;
        for (int j = 0; j < Size(); ++j)
            if (st[j] == St::Waiting && (victim < 0 || wait_tick[j] < wait_tick[victim])) victim = j;
        if (wait_sync[victim] > 0) return SyncDeadlock(victim);
        const int f = wait_flag[victim];
        std::string others;
        int listed = 0, more = 0;
        for (int j = 0; j < Size(); ++j) {
            if (j == victim) continue;
            if (listed == 8) {
                ++more;
                continue;
            }
            others += Str(listed ? "; " : "", Describe(j), ": ",
                          st[j] == St::Done ? std::string("finished")
                                            : Str("waits in ", wait_api[j], " at line ", wait_loc[j].line()));
            ++listed;
        }
        if (more) others += Str("; ", more, " more");
        std::string lacks;
        for (const auto& [key, col] : colls) {
            if (col.flag != f || std::find(col.targets.begin(), col.targets.end(), victim) == col.targets.end())
                continue;
            std::string have, miss;
            for (size_t m = 0; m < col.members.size(); ++m)
                (col.pending[m] ? have : miss) += Str(col.pending[m] ? (have.empty() ? "" : ", ") : (miss.empty() ? "" : ", "),
                                                      Describe(col.members[m]));
            if (!have.empty())
                lacks += Str(". Mode-", col.mode, " sets of flag ", f, " so far came from ", have, " but not from ", miss);
        }
        const CoreState& c = *cores[victim];
        return FormatAt(c, wait_loc[victim],
                        Str(wait_api[victim], " on ", Describe(victim), " waits forever: its flag-", f,
                            " counter is 0 and no core can raise it any more (", others, ")", lacks));
    }

    // A SyncAll some member never reaches: name those members and what they do instead.
    std::string SyncDeadlock(int victim) const
    {
        const int k = wait_sync[victim];
        std::string missing;
        int listed = 0, more = 0;
        for (int m : wait_members[victim]) {
            if (cores[m]->syncs >= k) continue;
            if (listed == 8) {
                ++more;
                continue;
            }
            missing += Str(listed ? "; " : "", Describe(m), " ",
                           st[m] == St::Done ? std::string("finished")
                                             : Str("waits in ", wait_api[m], " at line ", wait_loc[m].line()),
                           " after ", cores[m]->syncs, " SyncAll");
            ++listed;
        }
        if (more) missing += Str("; ", more, " more");
        return FormatAt(*cores[victim], wait_loc[victim],
                        Str(wait_api[victim], " on ", Describe(victim), " waits forever: SyncAll #", k, " needs all ",
                            wait_members[victim].size(), " cores of the barrier, but ", missing,
                            " (every core of the barrier must call SyncAll the same number of times)"));
    }
};

namespace {

[[noreturn]] void FailUnlocked(std::unique_lock<std::mutex>& lk, const Loc& loc, const std::string& msg)
{
    lk.unlock();
    Fail(loc, msg);
}

bool AllowsModes12(KernelType t) { return t == KernelType::MixAic1_1 || t == KernelType::MixAic1_2; }

}  // namespace

void MixSetFlag(CoreState& c, int mode, int flag, const char* api, const Loc& loc)
{
    MixLaunch& L = *c.mix;
    const int me = c.mix_index;
    const bool vec = c.kind == CoreKind::Vector;
    if (mode != 0 && !AllowsModes12(L.type))
        Fail(loc, Str(api, ": mode ", mode, " synchronises the AIC and AIVs inside a block; it needs "
                      "KERNEL_TYPE_MIX_AIC_1_1 or KERNEL_TYPE_MIX_AIC_1_2, this kernel is ",
                      KernelTypeName(static_cast<int>(L.type)), " (mode 0 only)"));
    if (mode == 1 && !vec)
        Fail(loc, Str(api, ": mode 1 synchronises the AIVs of a block; it is called on the AIC"));

    std::unique_lock<std::mutex> lk(L.mu);
    auto raise = [&](int t) {
        FlagCounter& fc = L.counters[t][flag];
        if (fc.value >= kCounterMax)
            FailUnlocked(lk, loc, Str(api, ": the flag-", flag, " counter of ", L.Describe(t), " would exceed ",
                                      kCounterMax, " (it counts 0..15; the hardware raises an exception): ", L.Describe(t),
                                      " has not waited for the earlier sets"));
        ++fc.value;
        fc.setter = me;
        fc.loc = loc;
        fc.api = api;
    };

    if (mode == 2 && !vec) {  // AIC -> every AIV of its block
        for (int s = 0; s < L.aivs; ++s) raise(L.Aiv(c.group, s));
        return;
    }
    std::vector<int> members;
    int scope = 0;
    if (mode == 0) {  // every core of this type in the launch
        scope = vec ? 0 : 1;
        for (int j = 0; j < L.Size(); ++j)
            if (L.cores[j]->kind == c.kind) members.push_back(j);
        const int physical = vec ? c.soc.vector_cores : c.soc.cube_cores;
        if (physical > 0 && static_cast<int>(members.size()) > physical)
            FailUnlocked(lk, loc, Str(api, ": a mode-0 sync over all ", members.size(), " ", vec ? "AIV" : "AIC",
                                      " cores of the launch, but ", c.soc_name, " has ", physical,
                                      ": the blocks then run in waves and the first wave waits forever"));
    } else {  // mode 1, and mode 2 from an AIV: the AIVs of this block
        scope = static_cast<int>(c.group);
        for (int s = 0; s < L.aivs; ++s) members.push_back(L.Aiv(c.group, s));
    }
    Collection& col = L.colls[{mode, scope, flag}];
    if (col.members.empty()) {
        col.members = members;
        col.targets = mode == 2 ? std::vector<int>{L.Aic(c.group)} : members;
        col.pending.assign(members.size(), 0);
        col.loc.assign(members.size(), loc);
        col.api.assign(members.size(), "");
        col.mode = mode;
        col.flag = flag;
    }
    const size_t m = std::find(col.members.begin(), col.members.end(), me) - col.members.begin();
    if (col.pending[m] >= kCounterMax)
        FailUnlocked(lk, loc, Str(api, ": ", L.Describe(me), " reported flag ", flag, " in mode ", mode, " ",
                                  kCounterMax + 1, " times while the other cores of the sync did not (the emulator "
                                  "allows 15 outstanding reports, like a flag counter)"));
    ++col.pending[m];
    col.loc[m] = loc;
    col.api[m] = api;
    if (std::all_of(col.pending.begin(), col.pending.end(), [](int p) { return p > 0; })) {
        for (int& p : col.pending) --p;
        for (int t : col.targets) raise(t);
    }
}

void MixWaitFlag(CoreState& c, int flag, const char* api, const Loc& loc)
{
    MixLaunch& L = *c.mix;
    const int me = c.mix_index;
    std::unique_lock<std::mutex> lk(L.mu);
    if (L.counters[me][flag].value > 0) {
        --L.counters[me][flag].value;
        return;
    }
    L.st[me] = MixLaunch::St::Waiting;
    L.wait_flag[me] = flag;
    L.wait_loc[me] = loc;
    L.wait_api[me] = api;
    L.wait_tick[me] = ++L.tick;
    const int next = L.PickNext(me);
    if (next < 0) {
        L.Fails(L.DeadlockMessage());
        throw LaunchAborted{};
    }
    L.running = next;
    L.cv.notify_all();
    L.cv.wait(lk, [&] { return L.abort || L.running == me; });
    if (L.abort) throw LaunchAborted{};
    --L.counters[me][flag].value;
    L.st[me] = MixLaunch::St::Running;
}

void LaunchSyncAll(CoreState& c, bool aiv_only, int used_cores, const char* api, const Loc& loc)
{
    if (c.coop == nullptr)
        Fail(loc, Str(api, ": the emulator runs a non-MIX launch of more than 256 blocks one block at a time, so no "
                      "barrier can hold them all (and the hardware needs every block of a SyncAll on its own core)"));
    MixLaunch& L = *c.coop;
    const int me = c.mix_index;
    std::vector<int> members;
    for (int j = 0; j < L.Size(); ++j)
        if (L.plain || !aiv_only || L.cores[j]->kind == CoreKind::Vector) members.push_back(j);
    if (used_cores < 0 || used_cores > static_cast<int>(members.size()))
        Fail(loc, Str(api, ": usedCores ", used_cores, " outside [0, ", members.size(), "] (it may not exceed the "
                      "launch's cores)"));
    if (used_cores > 0) members.resize(static_cast<size_t>(used_cores));
    if (std::find(members.begin(), members.end(), me) == members.end())
        Fail(loc, Str(api, ": ", L.Describe(me), " is not one of the ", members.size(), " cores this SyncAll "
                      "synchronises", aiv_only && !L.plain ? " (isAIVOnly = true: the AIVs)" : "",
                      used_cores > 0 ? Str(" (usedCores ", used_cores, ")") : std::string()));
    int vec = 0, cube = 0;
    for (int m : members) (L.cores[m]->kind == CoreKind::Cube ? cube : vec)++;
    const int phys_vec = c.soc.vector_cores, phys_cube = c.soc.cube_cores;
    if ((phys_vec > 0 && vec > phys_vec) || (phys_cube > 0 && cube > phys_cube))
        Fail(loc, Str(api, ": a barrier over ", members.size(), " cores, but ", c.soc_name, " has ", phys_vec,
                      " vector / ", phys_cube, " cube cores: the blocks then run in waves and the first wave waits "
                      "forever (blockDim must not exceed the cores)"));
    std::unique_lock<std::mutex> lk(L.mu);
    const int k = ++c.syncs;
    L.wait_sync[me] = k;
    L.wait_members[me] = members;
    if (L.SyncReached(me)) {
        L.wait_sync[me] = 0;
        return;
    }
    L.st[me] = MixLaunch::St::Waiting;
    L.wait_loc[me] = loc;
    L.wait_api[me] = api;
    L.wait_tick[me] = ++L.tick;
    const int next = L.PickNext(me);
    if (next < 0) {
        L.Fails(L.DeadlockMessage());
        throw LaunchAborted{};
    }
    L.running = next;
    L.cv.notify_all();
    L.cv.wait(lk, [&] { return L.abort || L.running == me; });
    if (L.abort) throw LaunchAborted{};
    L.wait_sync[me] = 0;
    L.st[me] = MixLaunch::St::Running;
}

}  // namespace megafuse_emu

namespace {

using megafuse_emu::CoreKind;
using megafuse_emu::CoreState;
using megafuse_emu::KernelType;
using megafuse_emu::Mem;
using megafuse_emu::MixLaunch;
using megafuse_emu::Str;
using Counters = std::array<uint64_t, megafuse_emu::NUM_COUNTERS>;

constexpr int kMaxArgs = 32;
constexpr int kMaxMixCores = 4096;  // threads of one MIX launch
constexpr int kMaxCoop = 256;       // non-MIX launches up to this many blocks run cooperatively

struct Row {  // one emulated core of the last run
    Counters counters{};
    int64_t info[4] = {MEGAFUSE_EMU_CORE_UNKNOWN, 0, 0, 0};  // core type, block, sub-block, GetBlockIdx
};
std::vector<Row> g_last;
std::atomic<uint64_t> g_serial{0};  // numbers every emulated core (see CoreState::serial)

// Calls fn with n pointer-sized arguments. Kernel parameters are GM_ADDR (pointers) or
// integers, which the x86-64 SysV ABI passes in the same registers / stack slots.
template <size_t... I>
void CallWith(void* fn, void** a, std::index_sequence<I...>)
{
    using Fn = void (*)(decltype((void)I, static_cast<void*>(nullptr))...);
    reinterpret_cast<Fn>(fn)(a[I]...);
}

template <size_t... N>
void Dispatch(void* fn, int nargs, void** a, std::index_sequence<N...>)
{
    ((nargs == static_cast<int>(N) ? (CallWith(fn, a, std::make_index_sequence<N>{}), true) : false) || ...);
}

void RunKernel(void* fn, int nargs, void** args) { Dispatch(fn, nargs, args, std::make_index_sequence<kMaxArgs + 1>{}); }

// On-chip memory starts with a fixed garbage pattern (0xFF: NaN for half/float), so a kernel
// that reads what it never wrote shows it in its outputs instead of seeing zeros. A core whose
// kind the launch fixes gets only its own memories (AIV: UB; AIC: the others).
void InitCore(CoreState& c, const MegafuseEmuSoc& soc, CoreKind only = CoreKind::Unknown)
{
    c.soc = soc;
    c.soc_name = soc.name ? soc.name : "soc";
    const uint64_t sizes[] = {soc.ub_bytes, soc.l1_bytes, soc.l0a_bytes, soc.l0b_bytes, soc.l0c_bytes, soc.bt_bytes};
    static_assert(sizeof(sizes) / sizeof(sizes[0]) == megafuse_emu::kNumMem, "one size per emulated memory");
    for (int m = 0; m < megafuse_emu::kNumMem; ++m) {
        const bool ub = m == static_cast<int>(Mem::UB);
        const bool own = only == CoreKind::Unknown || (only == CoreKind::Vector) == ub;
        c.mem[m].assign(own ? sizes[m] : 0, 0xFF);
        c.written[m].assign(own ? sizes[m] : 0, 0);
        c.budget[m] = own ? sizes[m] : 0;
    }
    if (only != CoreKind::Cube) c.budget[static_cast<int>(Mem::UB)] = soc.ub_usable_bytes;
}

int SetError(char* err, int errlen, const std::string& msg)
{
    if (err != nullptr && errlen > 0) std::snprintf(err, static_cast<size_t>(errlen), "%s", msg.c_str());
    return 1;
}

Row RowOf(const CoreState& c)
{
    Row r;
    r.counters = c.counters;
    r.info[0] = c.kind == CoreKind::Cube ? MEGAFUSE_EMU_CORE_AIC
                : c.kind == CoreKind::Vector ? MEGAFUSE_EMU_CORE_AIV
                                             : MEGAFUSE_EMU_CORE_UNKNOWN;
    r.info[1] = c.group;
    r.info[2] = c.sub_idx;
    r.info[3] = c.block_idx;
    return r;
}

// Sets the thread's g_core / g_coreType to core c (nullptr: none).
void Enter(CoreState* c)
{
    megafuse_emu::g_core = c;
    g_coreType = AscendC::MIX;
    block_idx = c != nullptr ? c->block_idx : 0;
    block_num = c != nullptr ? c->block_num : 1;
    if (c != nullptr && c->soc.arch == 2201 && c->kind != CoreKind::Unknown)
        g_coreType = c->kind == CoreKind::Vector ? AscendC::AIV : AscendC::AIC;
}

// Blocks one after the other on the calling thread (non-MIX; typed: every core of one kind).
int RunSequential(void* kernel_fn, const std::string& kernel, KernelType type, int block_dim, int nargs,
                  void** args, const std::vector<megafuse_emu::GmRegion>& gm, const MegafuseEmuSoc& soc, char* err,
                  int errlen)
{
    const CoreKind fixed = type == KernelType::AivOnly   ? CoreKind::Vector
                           : type == KernelType::AicOnly ? CoreKind::Cube
                                                         : CoreKind::Unknown;
    for (int b = 0; b < block_dim; ++b) {
        CoreState core;
        InitCore(core, soc, fixed);
        core.kernel = kernel;
        core.block_idx = b;
        core.block_num = block_dim;
        core.group = b;
        core.serial = ++g_serial;
        core.gm = gm;
        core.launch_type = type;
        core.kind = fixed;  // kind_line 0: fixed by the launch
        Enter(&core);
        try {
            RunKernel(kernel_fn, nargs, args);
        } catch (const megafuse_emu::EmuError& e) {
            Enter(nullptr);
            return SetError(err, errlen, e.what());
        } catch (const std::exception& e) {
            Enter(nullptr);
            return SetError(err, errlen, Str("kernel '", kernel, "': uncaught C++ exception in block ", b, ": ", e.what()));
        }
        Enter(nullptr);
        g_last.push_back(RowOf(core));
    }
    return 0;
}

// One core of a MIX launch: waits for its first turn, runs the kernel, hands control on.
void MixCoreMain(MixLaunch& L, int i, void* kernel_fn, int nargs, void** args)
{
    CoreState& c = *L.cores[i];
    {
        std::unique_lock<std::mutex> lk(L.mu);
        L.cv.wait(lk, [&] { return L.abort || L.running == i; });
        if (L.abort) {
            L.st[i] = MixLaunch::St::Done;
            return;
        }
        L.st[i] = MixLaunch::St::Running;
    }
    Enter(&c);
    std::string failure;
    try {
        RunKernel(kernel_fn, nargs, args);
        if (!L.plain && !c.kind_declared) {
            const int t = static_cast<int>(L.type);
            failure = Str("kernel '", c.kernel, "': a MIX launch (kernel_type='", megafuse_emu::KernelTypeArg(t),
                          "') requires KERNEL_TASK_TYPE_DEFAULT(", megafuse_emu::KernelTypeName(t),
                          ") in the kernel: the device decides from it which cores to start [",
                          megafuse_emu::Where(c, "end of kernel"), "]");
        }
    } catch (const megafuse_emu::LaunchAborted&) {
    } catch (const megafuse_emu::EmuError& e) {
        failure = e.what();
    } catch (const std::exception& e) {
        failure = Str("kernel '", c.kernel, "': uncaught C++ exception on ", L.Describe(i), ": ", e.what());
    }
    Enter(nullptr);
    std::unique_lock<std::mutex> lk(L.mu);
    L.st[i] = MixLaunch::St::Done;
    if (!failure.empty()) {
        L.Fails(failure);
        return;
    }
    if (L.abort) return;
    const int next = L.PickNext(i);
    if (next >= 0) {
        L.running = next;
        L.cv.notify_all();
        return;
    }
    for (int j = 0; j < L.Size(); ++j)
        if (L.st[j] == MixLaunch::St::Waiting) {
            L.Fails(L.DeadlockMessage());
            return;
        }
    L.running = -1;  // all done
    L.cv.notify_all();
}

// After a clean MIX launch: every set must have been consumed by a wait.
std::string UnpairedFlags(const MixLaunch& L)
{
    for (int j = 0; j < L.Size(); ++j)
        for (int f = 0; f < megafuse_emu::kFlags; ++f) {
            const megafuse_emu::FlagCounter& fc = L.counters[j][f];
            if (fc.value == 0) continue;
            return megafuse_emu::FormatAt(
                *L.cores[fc.setter], fc.loc,
                Str(fc.api, " raised flag ", f, " of ", L.Describe(j), ", which finished without a matching "
                    "CrossCoreWaitFlag(", f, ") (its counter is ", fc.value, " at the end): sets and waits must be "
                    "paired (devkit: otherwise the behaviour is undefined)"));
        }
    for (const auto& [key, col] : L.colls) {
        for (size_t m = 0; m < col.members.size(); ++m) {
            if (col.pending[m] == 0) continue;
            std::string missing;
            for (size_t o = 0; o < col.members.size(); ++o)
                if (col.pending[o] == 0) missing += Str(missing.empty() ? "" : ", ", L.Describe(col.members[o]));
            return megafuse_emu::FormatAt(
                *L.cores[col.members[m]], col.loc[m],
                Str(col.api[m], ": a mode-", col.mode, " set of flag ", col.flag, " counts only once every core of the "
                    "sync has set it, but ", missing, " never did (", L.Describe(col.members[m]), " is ",
                    col.pending[m], " report(s) ahead)"));
        }
    }
    return "";
}

int StartAndJoin(MixLaunch& L, const std::string& kernel, void* kernel_fn, int nargs, void** args, char* err,
                 int errlen);

int RunMix(void* kernel_fn, const std::string& kernel, KernelType type, int block_dim, int nargs, void** args,
           const std::vector<megafuse_emu::GmRegion>& gm, const MegafuseEmuSoc& soc, char* err, int errlen)
{
    MixLaunch L;
    L.type = type;
    L.block_dim = block_dim;
    L.aic = type != KernelType::MixAiv1_0;
    L.aivs = type == KernelType::MixAic1_2 ? 2 : (type == KernelType::MixAic1_1 || type == KernelType::MixAiv1_0) ? 1 : 0;
    if (static_cast<int64_t>(block_dim) * L.PerBlock() > kMaxMixCores)
        return SetError(err, errlen, Str("kernel '", kernel, "': a MIX launch of ", block_dim, " blocks has ",
                                         block_dim * L.PerBlock(), " cores; the emulator runs at most ", kMaxMixCores));
    for (int b = 0; b < block_dim; ++b) {
        for (int s = -1; s < L.aivs; ++s) {
            if (s < 0 && !L.aic) continue;
            auto c = std::make_unique<CoreState>();
            const CoreKind kind = s < 0 ? CoreKind::Cube : CoreKind::Vector;
            InitCore(*c, soc, kind);
            c->kernel = kernel;
            c->kind = kind;  // kind_line 0: fixed by the launch
            c->group = b;
            c->sub_idx = s < 0 ? 0 : s;
            c->ratio = s < 0 ? 1 : L.aivs;
            c->block_idx = s < 0 ? b : static_cast<int64_t>(b) * L.aivs + s;
            c->block_num = block_dim;
            c->serial = ++g_serial;
            c->gm = gm;
            c->launch_type = type;
            c->mix = &L;
            c->coop = &L;
            c->mix_index = L.Size();
            L.cores.push_back(std::move(c));
        }
    }
    return StartAndJoin(L, kernel, kernel_fn, nargs, args, err, errlen);
}

// Non-MIX launch of at most kMaxCoop blocks: one thread per block (SyncAll can hold them).
int RunCoop(void* kernel_fn, const std::string& kernel, KernelType type, int block_dim, int nargs, void** args,
            const std::vector<megafuse_emu::GmRegion>& gm, const MegafuseEmuSoc& soc, char* err, int errlen)
{
    const CoreKind fixed = type == KernelType::AivOnly   ? CoreKind::Vector
                           : type == KernelType::AicOnly ? CoreKind::Cube
                                                         : CoreKind::Unknown;
    MixLaunch L;
    L.plain = true;
    L.type = type;
    L.block_dim = block_dim;
    L.aic = false;
    L.aivs = 0;
    for (int b = 0; b < block_dim; ++b) {
        auto c = std::make_unique<CoreState>();
        InitCore(*c, soc, fixed);
        c->kernel = kernel;
        c->block_idx = b;
        c->block_num = block_dim;
        c->group = b;
        c->serial = ++g_serial;
        c->gm = gm;
        c->launch_type = type;
        c->kind = fixed;  // kind_line 0: fixed by the launch
        c->coop = &L;
        c->mix_index = b;
        L.cores.push_back(std::move(c));
    }
    return StartAndJoin(L, kernel, kernel_fn, nargs, args, err, errlen);
}

int StartAndJoin(MixLaunch& L, const std::string& kernel, void* kernel_fn, int nargs, void** args, char* err, int errlen)
{
    const int n = L.Size();
    L.st.assign(n, MixLaunch::St::Ready);
    L.wait_sync.assign(n, 0);
    L.wait_members.assign(n, {});
    L.wait_flag.assign(n, 0);
    L.wait_loc.assign(n, megafuse_emu::Loc{});
    L.wait_api.assign(n, "");
    L.wait_tick.assign(n, 0);
    L.counters.assign(n, {});
    L.running = 0;

    std::vector<std::thread> threads;
    threads.reserve(n);
    try {
        for (int i = 0; i < n; ++i) threads.emplace_back(MixCoreMain, std::ref(L), i, kernel_fn, nargs, args);
    } catch (const std::system_error& e) {
        std::lock_guard<std::mutex> lk(L.mu);
        L.Fails(Str("kernel '", kernel, "': cannot start thread ", threads.size(), " of ", n, " for the launch: ",
                    e.what()));
    }
    for (std::thread& t : threads) t.join();

    std::string msg = L.error.empty() ? UnpairedFlags(L) : L.error;
    if (!msg.empty()) return SetError(err, errlen, msg);
    for (const auto& c : L.cores) g_last.push_back(RowOf(*c));
    return 0;
}

}  // namespace

extern "C" int megafuse_emu_run_typed(void* kernel_fn, const char* kernel_name, int kernel_type, int block_dim,
                                      int nargs, void** args, const uint64_t* arg_sizes, const MegafuseEmuSoc* soc,
                                      char* err, int errlen)
{
    g_last.clear();
    if (kernel_fn == nullptr || soc == nullptr) return SetError(err, errlen, "megafuse_emu_run: null kernel or soc");
    if (block_dim < 1 || block_dim > 65535)
        return SetError(err, errlen, "megafuse_emu_run: block_dim must be in [1, 65535]");
    if (nargs < 0 || nargs > kMaxArgs)
        return SetError(err, errlen, "megafuse_emu_run: at most 32 kernel arguments are supported");
    if (soc->ub_usable_bytes > soc->ub_bytes)
        return SetError(err, errlen, "megafuse_emu_run: usable UB exceeds physical UB");
    const std::string kernel = kernel_name ? kernel_name : "kernel";
    if (kernel_type < MEGAFUSE_EMU_KERNEL_UNSPECIFIED || kernel_type > MEGAFUSE_EMU_KERNEL_MIX_AIC_1_2)
        return SetError(err, errlen, Str("kernel '", kernel, "': unknown kernel type ", kernel_type));
    const auto type = static_cast<KernelType>(kernel_type);
    if (type != KernelType::Unspecified && soc->arch != 2201)
        return SetError(err, errlen, Str("kernel '", kernel, "': kernel type ", megafuse_emu::KernelTypeName(kernel_type),
                                         " is an arch 2201 (split AIC/AIV) launch; ", soc->name ? soc->name : "this soc",
                                         " (arch ", soc->arch, ") has coupled cores: launch without a kernel type"));

    std::vector<megafuse_emu::GmRegion> gm;
    for (int i = 0; i < nargs; ++i)
        if (arg_sizes[i] > 0) gm.push_back({static_cast<const uint8_t*>(args[i]), arg_sizes[i], i});

    if (megafuse_emu::IsMixType(type)) return RunMix(kernel_fn, kernel, type, block_dim, nargs, args, gm, *soc, err, errlen);
    if (block_dim <= kMaxCoop) return RunCoop(kernel_fn, kernel, type, block_dim, nargs, args, gm, *soc, err, errlen);
    return RunSequential(kernel_fn, kernel, type, block_dim, nargs, args, gm, *soc, err, errlen);
}

extern "C" int megafuse_emu_run(void* kernel_fn, const char* kernel_name, int block_dim, int nargs, void** args,
                                const uint64_t* arg_sizes, const MegafuseEmuSoc* soc, char* err, int errlen)
{
    return megafuse_emu_run_typed(kernel_fn, kernel_name, MEGAFUSE_EMU_KERNEL_UNSPECIFIED, block_dim, nargs, args,
                                  arg_sizes, soc, err, errlen);
}

extern "C" int megafuse_emu_counter_names(char* buf, int len)
{
    std::string names;
    for (const char* n : megafuse_emu::kCounterNames) names += (names.empty() ? "" : ",") + std::string(n);
    if (buf != nullptr && len > 0) std::snprintf(buf, static_cast<size_t>(len), "%s", names.c_str());
    return static_cast<int>(names.size());
}

extern "C" int megafuse_emu_counters(int core, uint64_t* out, int n)
{
    if (core < -1 || core >= static_cast<int>(g_last.size())) return -1;
    Counters total{};
    if (core == -1) {
        for (const Row& r : g_last)
            for (int i = 0; i < megafuse_emu::NUM_COUNTERS; ++i) total[i] += r.counters[i];
    } else {
        total = g_last[core].counters;
    }
    const int k = std::min<int>(n, megafuse_emu::NUM_COUNTERS);
    for (int i = 0; i < k; ++i) out[i] = total[i];
    return k;
}

extern "C" int megafuse_emu_num_cores(void) { return static_cast<int>(g_last.size()); }

extern "C" int megafuse_emu_core_info(int core, int64_t* out)
{
    if (core < 0 || core >= static_cast<int>(g_last.size()) || out == nullptr) return -1;
    for (int i = 0; i < 4; ++i) out[i] = g_last[core].info[i];
    return 0;
}
