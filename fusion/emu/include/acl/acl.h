// Host runtime API (AscendCL) of single-source `.asc` programs, backed by host memory: what the
// devkit samples' main() calls around a <<<>>> launch. Device memory is host memory recorded in
// megafuse_emu::DeviceAllocs, so a launch knows each GM buffer's extent; streams and devices
// are tokens (kernels run to completion at the launch). Names and signatures follow the
// AscendCL documentation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernel_operator.h"
#include "megafuse_emu/guard.h"

using aclError = int;
using aclrtStream = void*;
using aclrtContext = void*;
using aclrtEvent = void*;

constexpr aclError ACL_SUCCESS = 0;
constexpr aclError ACL_ERROR_NONE = 0;  // the older name of ACL_SUCCESS (acl_base.h), still used by samples
constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;
constexpr aclError ACL_ERROR_BAD_ALLOC = 200000;

enum aclrtMemMallocPolicy {
    ACL_MEM_MALLOC_HUGE_FIRST = 0, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P, ACL_MEM_MALLOC_HUGE_ONLY_P2P, ACL_MEM_MALLOC_NORMAL_ONLY_P2P
};
enum aclrtMemcpyKind {
    ACL_MEMCPY_HOST_TO_HOST = 0, ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_DEVICE_TO_DEVICE,
    ACL_MEMCPY_DEFAULT
};

namespace megafuse_emu {

inline aclError AclMalloc(void** p, size_t size, bool device)
{
    if (p == nullptr || size == 0) return ACL_ERROR_INVALID_PARAM;
    // 64 B aligned and padded to 32 B, like device allocations; in a confined run between guard
    // pages, so a raw __gm__ access past the block is reported (guard.h).
    static int serial = 0;
    void* q = nullptr;
    if (Confined()) {
        char label[64];
        std::snprintf(label, sizeof(label), "aclrtMalloc%s block #%d", device ? "" : "Host", serial++);
        q = GuardAlloc(size, label);
    } else {
        q = std::aligned_alloc(64, (size + 63) / 64 * 64);
    }
    if (q == nullptr) return ACL_ERROR_BAD_ALLOC;
    std::memset(q, 0, size);
    std::lock_guard<std::mutex> lk(DeviceAllocsMutex());
    DeviceAllocs()[static_cast<const uint8_t*>(q)] = DeviceAlloc{size, device};
    *p = q;
    return ACL_SUCCESS;
}

// A copy that runs past the end of an aclrt block would corrupt the host heap here (on the
// device: a memory fault); it ends the program with the emulator's fault line instead.
inline void CheckAclBounds(const void* p, size_t count, const char* api, const char* side)
{
    uint64_t bytes = 0;
    bool device = false;
    const uint8_t* base = FindDeviceAlloc(p, &bytes, &device);
    if (base == nullptr) return;
    const uint64_t left = bytes - static_cast<uint64_t>(static_cast<const uint8_t*>(p) - base);
    if (count > left)
        HostFault(Str(api, ": ", count, " bytes from the ", side, " run past the end of its ", bytes, "-byte ",
                      device ? "aclrtMalloc" : "aclrtMallocHost", " block (", left, " bytes left)"));
}

inline aclError AclFree(void* p, bool device)
{
    std::lock_guard<std::mutex> lk(DeviceAllocsMutex());
    auto it = DeviceAllocs().find(static_cast<const uint8_t*>(p));
    if (it == DeviceAllocs().end() || it->second.device != device) return ACL_ERROR_INVALID_PARAM;
    DeviceAllocs().erase(it);
    if (!GuardFree(p)) std::free(p);
    return ACL_SUCCESS;
}

}  // namespace megafuse_emu

inline aclError aclInit(const char*) { return ACL_SUCCESS; }
inline aclError aclFinalize() { return ACL_SUCCESS; }
inline aclError aclrtSetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtResetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtGetDeviceCount(uint32_t* count)
{
    if (count) *count = 1;
    return ACL_SUCCESS;
}
inline aclError aclrtCreateContext(aclrtContext* ctx, int32_t)
{
    static int token;
    if (ctx) *ctx = &token;
    return ACL_SUCCESS;
}
inline aclError aclrtDestroyContext(aclrtContext) { return ACL_SUCCESS; }
inline aclError aclrtCreateStream(aclrtStream* stream)
{
    static int token;
    if (stream == nullptr) return ACL_ERROR_INVALID_PARAM;
    *stream = &token;
    return ACL_SUCCESS;
}
inline aclError aclrtDestroyStream(aclrtStream) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeStream(aclrtStream) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeDevice() { return ACL_SUCCESS; }

inline aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy) { return megafuse_emu::AclMalloc(devPtr, size, true); }
inline aclError aclrtMallocHost(void** hostPtr, size_t size) { return megafuse_emu::AclMalloc(hostPtr, size, false); }
inline aclError aclrtFree(void* devPtr) { return megafuse_emu::AclFree(devPtr, true); }
inline aclError aclrtFreeHost(void* hostPtr) { return megafuse_emu::AclFree(hostPtr, false); }

// count bytes from src to dst; fails (like the device runtime) when count exceeds destMax.
inline aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind)
{
    if (dst == nullptr || src == nullptr || count > destMax) return ACL_ERROR_INVALID_PARAM;
    megafuse_emu::CheckAclBounds(dst, count, "aclrtMemcpy", "destination");
    megafuse_emu::CheckAclBounds(src, count, "aclrtMemcpy", "source");
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}
inline aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count)
{
    if (devPtr == nullptr || count > maxCount) return ACL_ERROR_INVALID_PARAM;
    megafuse_emu::CheckAclBounds(devPtr, count, "aclrtMemset", "destination");
    std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}
// aclFloat16: the bits of an IEEE binary16 in a uint16_t (AscendCL aclFloat16 / conversion pages).
using aclFloat16 = uint16_t;
inline aclFloat16 aclFloatToFloat16(float v)
{
    const half h = static_cast<half>(v);
    aclFloat16 bits;
    std::memcpy(&bits, &h, sizeof(bits));
    return bits;
}
inline float aclFloat16ToFloat(aclFloat16 bits)
{
    half h;
    std::memcpy(&h, &bits, sizeof(h));
    return static_cast<float>(h);
}
inline const char* aclGetRecentErrMsg() { return "megafuse emulator: see the fault line on stderr"; }

#include "acl/acl_rt.h"  // runtime error queries (aclrtGetLastError)
