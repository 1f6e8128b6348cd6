// The host side of single-source kernels: device memory from aclrtMalloc (host memory here,
// remembered so a launch knows each GM buffer's extent) and the `kernel<<<blockDim, l2ctrl,
// stream>>>(args...)` launch, which fusion/ascendc_emu/single_source.py rewrites into
//   ::megafuse_emu::MakeLaunch(&kernel, "kernel", TYPE, blockDim, l2ctrl, stream)(args...)
// TYPE is the kernel type read from the source (__vector__: AIV_ONLY, __cube__: AIC_ONLY,
// KERNEL_TASK_TYPE_DEFAULT(...)); it applies on arch 2201 only.
// The SoC comes from MEGAFUSE_EMU_HOST_SOC, which the harness defines when it builds a program.
// A kernel fault ends the program: one line "megafuse-emu fault: ..." on stderr, exit status
// kFaultExit (the CLI turns it into exit 1).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "runtime_api.h"
#include "state.h"

namespace megafuse_emu {

constexpr int kFaultExit = 86;

struct DeviceAlloc {
    uint64_t bytes;
    bool device;  // aclrtMalloc (true) or aclrtMallocHost (false)
};

// Live aclrtMalloc / aclrtMallocHost blocks by start address.
inline std::map<const uint8_t*, DeviceAlloc>& DeviceAllocs()
{
    static std::map<const uint8_t*, DeviceAlloc> allocs;
    return allocs;
}
inline std::mutex& DeviceAllocsMutex()
{
    static std::mutex mu;
    return mu;
}

// The device block holding p: its start and size; nullptr when p is not device memory.
inline const uint8_t* FindDeviceAlloc(const void* p, uint64_t* bytes, bool* device)
{
    std::lock_guard<std::mutex> lk(DeviceAllocsMutex());
    const auto* q = static_cast<const uint8_t*>(p);
    auto& m = DeviceAllocs();
    auto it = m.upper_bound(q);
    if (it == m.begin()) return nullptr;
    --it;
    if (q >= it->first + it->second.bytes) return nullptr;
    *bytes = it->second.bytes;
    *device = it->second.device;
    return it->first;
}

[[noreturn]] inline void HostFault(const std::string& msg)
{
    std::fflush(stdout);
    std::fprintf(stderr, "megafuse-emu fault: %s\n", msg.c_str());
    std::fflush(stderr);
    std::_Exit(kFaultExit);
}

inline const MegafuseEmuSoc& HostSoc(const char* kernel)
{
#ifdef MEGAFUSE_EMU_HOST_SOC
    static const MegafuseEmuSoc soc = MEGAFUSE_EMU_HOST_SOC;
    (void)kernel;
    return soc;
#else
    HostFault(Str("kernel '", kernel, "': a <<<>>> launch needs the SoC the program is built for; build and run it "
                  "with `megafuse emu run FILE --soc ...` (or fusion.ascendc_emu.single_source.build_program)"));
#endif
}

// Set by lib/matmul_intf.h included without ASCENDC_CUBE_ONLY: the devkit's compiler builds
// a kernel that drives the Matmul API from its AIVs as MIX AIC:AIV = 1:2 (the AIC serves the
// requests), so an __aicore__ kernel of such a program launches as KERNEL_TYPE_MIX_AIC_1_2.
inline bool& MatmulMixProgram()
{
    static bool mix = false;
    return mix;
}

template <typename F>
class KernelLaunch {
public:
    KernelLaunch(F* fn, const char* name, int type, uint32_t block_dim) : fn_(fn), name_(name), type_(type), block_dim_(block_dim) {}

    // The kernel is called through a trampoline with its arguments as typed at the call site
    // (pointers, integers, and structs by value such as a tiling struct); the runtime gets the
    // GM pointer arguments as extra arguments of the trampoline, only to bound GM accesses.
    template <typename... A>
    void operator()(A... args) const
    {
        static_assert(sizeof...(A) <= 31, "at most 31 kernel arguments");
        struct Thunk {
            F* fn;
            std::tuple<A...> args;
            static void Call(void* self)
            {
                auto* t = static_cast<Thunk*>(self);
                std::apply([t](auto&... a) { t->fn(a...); }, t->args);
            }
        };
        Thunk thunk{fn_, std::tuple<A...>(args...)};
        void* ptrs[sizeof...(A) + 1] = {&thunk};
        uint64_t sizes[sizeof...(A) + 1] = {0};
        int n = 1, i = 0;
        (Region(args, i++, ptrs, sizes, n), ...);
        const MegafuseEmuSoc& soc = HostSoc(name_);
        int type = soc.arch == 2201 ? type_ : MEGAFUSE_EMU_KERNEL_UNSPECIFIED;
        if (soc.arch == 2201 && type == MEGAFUSE_EMU_KERNEL_UNSPECIFIED && MatmulMixProgram()) type = MEGAFUSE_EMU_KERNEL_MIX_AIC_1_2;
        char err[8192] = {0};
        const int rc = megafuse_emu_run_typed(reinterpret_cast<void*>(&Thunk::Call), name_, type,
                                              static_cast<int>(block_dim_), n, ptrs, sizes, &soc, err, sizeof(err));
        if (rc != 0) HostFault(err);
    }

private:
    // A pointer argument must point into an aclrtMalloc block: it becomes a GM region (the
    // block from the pointer to its end).
    template <typename T>
    void Region(const T& v, int i, void** ptrs, uint64_t* sizes, int& n) const
    {
        if constexpr (std::is_pointer_v<T>) {
            if (v == nullptr) return;
            uint64_t bytes = 0;
            bool device = false;
            const uint8_t* base = FindDeviceAlloc(v, &bytes, &device);
            if (base == nullptr || !device)
                HostFault(Str("kernel '", name_, "' argument ", i, " is ", base ? "host memory from aclrtMallocHost" :
                              "not device memory", ": pass a buffer from aclrtMalloc (copy host data in with aclrtMemcpy)"));
            ptrs[n] = const_cast<void*>(static_cast<const void*>(v));
            sizes[n] = bytes - static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(v) - base);
            ++n;
        } else {
            static_assert(std::is_trivially_copyable_v<T>, "kernel arguments are GM pointers, integers or plain structs");
        }
    }

    F* fn_;
    const char* name_;
    int type_;
    uint32_t block_dim_;
};

template <typename F>
KernelLaunch<F> MakeLaunch(F* fn, const char* name, int type, uint32_t block_dim, const void* l2ctrl = nullptr,
                           const void* stream = nullptr)
{
    (void)l2ctrl;
    (void)stream;  // launches run to completion in order: one stream is all streams
    return KernelLaunch<F>(fn, name, type, block_dim);
}

// `ptr<<<...>>>(...)` where ptr is a variable holding a kernel (a function pointer, e.g. chosen
// by a constexpr lambda): the rewrite takes its address, so launch the kernel it points to.
template <typename F, typename = std::enable_if_t<std::is_function_v<F>>>
KernelLaunch<F> MakeLaunch(F* const* fnp, const char* name, int type, uint32_t block_dim, const void* l2ctrl = nullptr,
                           const void* stream = nullptr)
{
    return MakeLaunch(*fnp, name, type, block_dim, l2ctrl, stream);
}

}  // namespace megafuse_emu
