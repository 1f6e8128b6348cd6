// Emulation runtime: runs a kernel once per block index on a fresh emulated core and keeps
// the counters. Compiled into the same shared library as one kernel (see harness.py).
#include <array>
#include <cstdio>
#include <utility>
#include <vector>

#include "kernel_operator.h"
#include "megafuse_emu/runtime_api.h"

namespace megafuse_emu {
CoreState* g_core = nullptr;
}

namespace {

using megafuse_emu::CoreState;
using megafuse_emu::Mem;
using Counters = std::array<uint64_t, megafuse_emu::NUM_COUNTERS>;

constexpr int kMaxArgs = 32;
std::vector<Counters> g_last;  // per block of the last run
uint64_t g_serial = 0;         // numbers every emulated block (see CoreState::serial)

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

// On-chip memory starts with a fixed garbage pattern (0xFF: NaN for half/float), so a kernel
// that reads what it never wrote shows it in its outputs instead of seeing zeros.
void InitCore(CoreState& c, const MegafuseEmuSoc& soc)
{
    c.soc = soc;
    c.soc_name = soc.name ? soc.name : "soc";
    const uint64_t sizes[] = {soc.ub_bytes, soc.l1_bytes, soc.l0a_bytes, soc.l0b_bytes, soc.l0c_bytes, soc.bt_bytes};
    static_assert(sizeof(sizes) / sizeof(sizes[0]) == megafuse_emu::kNumMem, "one size per emulated memory");
    for (int m = 0; m < megafuse_emu::kNumMem; ++m) {
        c.mem[m].assign(sizes[m], 0xFF);
        c.budget[m] = sizes[m];
    }
    c.budget[static_cast<int>(Mem::UB)] = soc.ub_usable_bytes;
}

int SetError(char* err, int errlen, const std::string& msg)
{
    if (err != nullptr && errlen > 0) std::snprintf(err, static_cast<size_t>(errlen), "%s", msg.c_str());
    return 1;
}

}  // namespace

extern "C" int megafuse_emu_run(void* kernel_fn, const char* kernel_name, int block_dim, int nargs, void** args,
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

    std::vector<megafuse_emu::GmRegion> gm;
    for (int i = 0; i < nargs; ++i)
        if (arg_sizes[i] > 0) gm.push_back({static_cast<const uint8_t*>(args[i]), arg_sizes[i], i});

    for (int b = 0; b < block_dim; ++b) {
        CoreState core;
        InitCore(core, *soc);
        core.kernel = kernel_name ? kernel_name : "kernel";
        core.block_idx = b;
        core.block_num = block_dim;
        core.serial = ++g_serial;
        core.gm = gm;
        megafuse_emu::g_core = &core;
        try {
            Dispatch(kernel_fn, nargs, args, std::make_index_sequence<kMaxArgs + 1>{});
        } catch (const megafuse_emu::EmuError& e) {
            megafuse_emu::g_core = nullptr;
            return SetError(err, errlen, e.what());
        } catch (const std::exception& e) {
            megafuse_emu::g_core = nullptr;
            return SetError(err, errlen, megafuse_emu::Str("kernel '", core.kernel, "': uncaught C++ exception in block ",
                                                           b, ": ", e.what()));
        }
        megafuse_emu::g_core = nullptr;
        g_last.push_back(core.counters);
    }
    return 0;
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
        for (const Counters& c : g_last)
            for (int i = 0; i < megafuse_emu::NUM_COUNTERS; ++i) total[i] += c[i];
    } else {
        total = g_last[core];
    }
    const int k = std::min<int>(n, megafuse_emu::NUM_COUNTERS);
    for (int i = 0; i < k; ++i) out[i] = total[i];
    return k;
}

extern "C" int megafuse_emu_num_cores(void) { return static_cast<int>(g_last.size()); }
