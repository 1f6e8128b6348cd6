// Guarded GM buffers and the fault handler of a confined run (fusion/ascendc_emu/confine.py).
//
// A raw `__gm__` pointer access is plain host memory access, so the emulator cannot check it
// call by call. Instead every GM buffer of a confined run (aclrtMalloc in a program, each
// kernel-only --arg buffer) lives in its own mapping with an inaccessible page on each side; the
// buffer's end sits at most 63 bytes before the page after it (starts stay 64 B aligned, as the
// device allocator's). An access that leaves the buffer by more than that padding hits a guard
// page; the SIGSEGV handler names the buffer and the byte offset, plus the faulting code address
// that the parent turns into a source line (addr2line). Any other fatal signal while the
// emulator runs is reported with the kernel that was running. The handler only works in a
// child process started by the confinement (MEGAFUSE_EMU_CONFINED=1), never inside megafuse.
#pragma once

#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace megafuse_emu {

struct GuardRegion {
    uint8_t* map = nullptr;     // the whole mapping (guard, data pages, guard); nullptr: slot free
    uint64_t map_bytes = 0;
    const uint8_t* start = nullptr;  // the buffer
    uint64_t bytes = 0;
    char label[80] = {0};
};

constexpr int kMaxGuardRegions = 4096;

inline GuardRegion* GuardTable()
{
    static GuardRegion table[kMaxGuardRegions];
    return table;
}

// The kernel running now (for fault lines); written before a launch, read by the handler.
inline std::atomic<const char*>& CurrentKernel()
{
    static std::atomic<const char*> name{nullptr};
    return name;
}

inline bool Confined()
{
    const char* v = std::getenv("MEGAFUSE_EMU_CONFINED");
    return v != nullptr && v[0] == '1';
}

// bytes of zeroed memory between two guard pages; nullptr when out of memory or slots.
inline void* GuardAlloc(uint64_t bytes, const char* label)
{
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t padded = (bytes + 63) / 64 * 64;
    const uint64_t data = (padded + page - 1) / page * page;
    const uint64_t total = data + 2 * page;
    GuardRegion* t = GuardTable();
    int slot = -1;
    for (int i = 0; i < kMaxGuardRegions && slot < 0; ++i)
        if (t[i].map == nullptr) slot = i;
    if (slot < 0) return nullptr;
    void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    auto* base = static_cast<uint8_t*>(m);
    mprotect(base, page, PROT_NONE);
    mprotect(base + page + data, page, PROT_NONE);
    GuardRegion& r = t[slot];
    std::snprintf(r.label, sizeof(r.label), "%s", label ? label : "buffer");
    r.start = base + page + data - padded;
    r.bytes = bytes;
    r.map_bytes = total;
    std::atomic_thread_fence(std::memory_order_release);
    r.map = base;
    return const_cast<uint8_t*>(r.start);
}

// Unmaps a buffer from GuardAlloc; false when p is not one.
inline bool GuardFree(void* p)
{
    GuardRegion* t = GuardTable();
    for (int i = 0; i < kMaxGuardRegions; ++i) {
        if (t[i].map != nullptr && t[i].start == p) {
            uint8_t* m = t[i].map;
            const uint64_t n = t[i].map_bytes;
            t[i].map = nullptr;
            munmap(m, n);
            return true;
        }
    }
    return false;
}

inline const char* SignalName(int sig)
{
    switch (sig) {
        case SIGSEGV: return "SIGSEGV";
        case SIGBUS: return "SIGBUS";
        case SIGFPE: return "SIGFPE";
        case SIGILL: return "SIGILL";
        case SIGABRT: return "SIGABRT";
        default: return "signal";
    }
}

// One line for the parent, then exit with the fault status (launch.h kFaultExit = 86):
//   megafuse-emu oob: KERNEL<TAB>LABEL<TAB>OFFSET<TAB>BYTES<TAB>OBJECT<TAB>PC_OFFSET
//   megafuse-emu crash: KERNEL<TAB>SIGNAL<TAB>OBJECT<TAB>PC_OFFSET
inline void OnFatalSignal(int sig, siginfo_t* si, void* ctx)
{
    const char* kernel = CurrentKernel().load();
    uintptr_t pc = 0;
#if defined(__x86_64__)
    pc = static_cast<uintptr_t>(static_cast<ucontext_t*>(ctx)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
    pc = static_cast<uintptr_t>(static_cast<ucontext_t*>(ctx)->uc_mcontext.pc);
#endif
    Dl_info info{};
    const char* object = "";
    uintptr_t pc_off = pc;
    if (pc != 0 && dladdr(reinterpret_cast<void*>(pc), &info) != 0 && info.dli_fname != nullptr) {
        object = info.dli_fname;
        pc_off = pc - reinterpret_cast<uintptr_t>(info.dli_fbase);
    }
    char line[512];
    int n = 0;
    const auto* addr = static_cast<const uint8_t*>(si->si_addr);
    if (sig == SIGSEGV || sig == SIGBUS) {
        GuardRegion* t = GuardTable();
        for (int i = 0; i < kMaxGuardRegions && n == 0; ++i) {
            if (t[i].map == nullptr || addr < t[i].map || addr >= t[i].map + t[i].map_bytes) continue;
            n = std::snprintf(line, sizeof(line), "megafuse-emu oob: %s\t%s\t%lld\t%llu\t%s\t%#llx\n",
                              kernel ? kernel : "", t[i].label, static_cast<long long>(addr - t[i].start),
                              static_cast<unsigned long long>(t[i].bytes), object,
                              static_cast<unsigned long long>(pc_off));
        }
    }
    if (n == 0)
        n = std::snprintf(line, sizeof(line), "megafuse-emu crash: %s\t%s\t%s\t%#llx\n", kernel ? kernel : "",
                          SignalName(sig), object, static_cast<unsigned long long>(pc_off));
    if (n > 0) {
        ssize_t w = write(2, line, static_cast<size_t>(n) < sizeof(line) ? static_cast<size_t>(n) : sizeof(line) - 1);
        (void)w;
    }
    _exit(86);
}

// Installs OnFatalSignal (on an alternate stack, so a stack overflow is reported too) in a
// confined child; a no-op elsewhere.
inline void InstallFaultHandlers()
{
    if (!Confined()) return;
    static char alt[1 << 16];
    stack_t ss{};
    ss.ss_sp = alt;
    ss.ss_size = sizeof(alt);
    sigaltstack(&ss, nullptr);
    struct sigaction sa {};
    sa.sa_sigaction = OnFatalSignal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

}  // namespace megafuse_emu
