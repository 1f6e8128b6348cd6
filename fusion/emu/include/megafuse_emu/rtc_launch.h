// The launch of a kernel compiled at run time (acl/acl_rt_compile.h, aclrtc): each kernel of an
// aclrtc program gets an exported entry `megafuse_rtc_entry_*` that takes the host's argument
// array (argsArray[i] points to parameter i, read as the parameter's own type), admits every
// pointer parameter only when it points into an aclrtMalloc block of the host program (the
// host's lookup is passed in: the library has its own runtime), and runs the kernel with that
// runtime like a `<<<>>>` launch.
#pragma once

#include <cstdint>
#include <cstdio>
#include <tuple>
#include <type_traits>
#include <utility>

#include "runtime_api.h"

extern "C" {
typedef const uint8_t* (*MegafuseRtcFind)(const void* p, uint64_t* bytes, bool* device);
struct MegafuseRtcCall {
    uint32_t block_dim;
    void** args;
    const MegafuseEmuSoc* soc;
    char* err;
    int errlen;
    MegafuseRtcFind find;
};
typedef int (*MegafuseRtcEntry)(const MegafuseRtcCall* call);
}

namespace megafuse_emu {

template <typename R, typename... A, size_t... I>
int RtcLaunchImpl(R (*fn)(A...), const char* name, int type, const MegafuseRtcCall* call, std::index_sequence<I...>)
{
    static_assert(sizeof...(A) <= 31, "at most 31 kernel arguments");
    using Args = std::tuple<std::decay_t<A>...>;
    struct Thunk {
        R (*fn)(A...);
        Args args;
        static void Call(void* self)
        {
            auto* t = static_cast<Thunk*>(self);
            std::apply([t](auto&... a) { t->fn(a...); }, t->args);
        }
    };
    Thunk thunk{fn, Args{*static_cast<std::decay_t<A>*>(call->args[I])...}};
    void* ptrs[sizeof...(A) + 1] = {&thunk};
    uint64_t sizes[sizeof...(A) + 1] = {0};
    int n = 1;
    bool ok = true;
    auto region = [&](auto v, size_t i) {
        if constexpr (std::is_pointer_v<decltype(v)>) {
            if (v == nullptr || !ok) return;
            uint64_t bytes = 0;
            bool device = false;
            const uint8_t* base = call->find(v, &bytes, &device);
            if (base == nullptr || !device) {
                std::snprintf(call->err, static_cast<size_t>(call->errlen),
                              "kernel '%s' argument %zu is %s: pass a buffer from aclrtMalloc", name, i,
                              base ? "host memory from aclrtMallocHost" : "not device memory");
                ok = false;
                return;
            }
            ptrs[n] = const_cast<void*>(static_cast<const void*>(v));
            sizes[n] = bytes - static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(v) - base);
            ++n;
        } else {
            static_assert(std::is_trivially_copyable_v<decltype(v)>, "kernel arguments are pointers, integers or plain structs");
        }
    };
    (region(std::get<I>(thunk.args), I), ...);
    if (!ok) return 1;
    const int t = call->soc->arch == 2201 ? type : MEGAFUSE_EMU_KERNEL_UNSPECIFIED;
    return megafuse_emu_run_typed(reinterpret_cast<void*>(&Thunk::Call), name, t, static_cast<int>(call->block_dim), n,
                                  ptrs, sizes, call->soc, call->err, call->errlen);
}

template <typename R, typename... A>
int RtcLaunch(R (*fn)(A...), const char* name, int type, const MegafuseRtcCall* call)
{
    return RtcLaunchImpl(fn, name, type, call, std::index_sequence_for<A...>{});
}

}  // namespace megafuse_emu
