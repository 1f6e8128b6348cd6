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
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "kernel_operator.h"
#include "megafuse_emu/guard.h"
#include "megafuse_emu/runtime_api.h"

#include "cross_core.inc"

#include "launch.inc"

namespace {

// A confined child (MEGAFUSE_EMU_CONFINED=1) reports fatal signals as one line (guard.h).
const bool g_fault_handlers = (megafuse_emu::InstallFaultHandlers(), true);

int RunTyped(void* kernel_fn, const char* kernel_name, int kernel_type, int block_dim, int nargs, void** args,
             const uint64_t* arg_sizes, const MegafuseEmuSoc* soc, char* err, int errlen);

}  // namespace

extern "C" int megafuse_emu_run_typed(void* kernel_fn, const char* kernel_name, int kernel_type, int block_dim,
                                      int nargs, void** args, const uint64_t* arg_sizes, const MegafuseEmuSoc* soc,
                                      char* err, int errlen)
{
    (void)g_fault_handlers;
    static char running[256];
    std::snprintf(running, sizeof(running), "%s", kernel_name ? kernel_name : "kernel");
    megafuse_emu::CurrentKernel().store(running);
    const int rc = RunTyped(kernel_fn, kernel_name, kernel_type, block_dim, nargs, args, arg_sizes, soc, err, errlen);
    megafuse_emu::CurrentKernel().store(nullptr);
    return rc;
}

extern "C" void* megafuse_emu_guard_alloc(uint64_t bytes, const char* label)
{
    return megafuse_emu::GuardAlloc(bytes, label);
}

extern "C" int megafuse_emu_guard_free(void* p) { return megafuse_emu::GuardFree(p) ? 0 : -1; }

namespace {

int RunTyped(void* kernel_fn, const char* kernel_name, int kernel_type, int block_dim, int nargs, void** args,
             const uint64_t* arg_sizes, const MegafuseEmuSoc* soc, char* err, int errlen)
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

}  // namespace

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
