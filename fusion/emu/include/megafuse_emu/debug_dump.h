// asc_dump_gm / asc_dump_ubuf / asc_dump_l1buf / asc_dump_cbuf (devkit asc_dump page,
// utils/debug/asc_dump.h): print `dump_size` elements of type T from a GM pointer, or from a
// UB / L1 / L0C address (a LocalTensor's GetPhyAddr() cast to a __ubuf__ / __cbuf__ / __cc__
// pointer: on-chip pointers are byte addresses in that memory), with the uint32 `desc` tag.
// Documented for A2/A3 (arch 2201; asc_dump_l1buf there only), not for the 310P's AI Core.
// The range must lie inside the argument buffer / the core's memory; bytes never written are
// printed as they are (the 0xFF fill), as the device prints whatever the memory holds. Like
// printf and DumpTensor, `-DASCENDC_DUMP=0` turns the printing off.
#pragma once

#include <cstdio>
#include <string>
#include <type_traits>

#include "state.h"
#include "tensor.h"

namespace megafuse_emu {

template <typename T>
void AscDumpPrint(const char* api, const char* where, const uint8_t* p, uint32_t desc, uint32_t n)
{
#if !defined(ASCENDC_DUMP) || ASCENDC_DUMP != 0
    std::string line = Str(api, ": desc=", desc, ", position=", where, ", ", n, " elements:");
    for (uint32_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, p + static_cast<uint64_t>(i) * sizeof(T), sizeof(T));
        char buf[48];
        if constexpr (std::is_integral_v<T>)
            std::snprintf(buf, sizeof(buf), " %lld", static_cast<long long>(v));
        else
            std::snprintf(buf, sizeof(buf), " %g", static_cast<double>(static_cast<float>(v)));
        line += buf;
    }
    std::printf("%s\n", line.c_str());
#else
    (void)api, (void)where, (void)p, (void)desc, (void)n;
#endif
}

inline void AscDumpArch(const char* api, const Loc& loc)
{
    if (!IsArch2201())
        Fail(loc, Str(api, ": the devkit documents asc_dump for Atlas A2/A3 (arch 2201), not for ", Core(loc).soc_name));
}

template <typename T>
void AscDumpLocal(const char* api, Mem m, const void* addr, uint32_t desc, uint32_t n, const Loc& loc)
{
    CoreState& c = Core(loc);
    AscDumpArch(api, loc);
    const auto off = reinterpret_cast<uint64_t>(addr);
    const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(T);
    const auto& mem = c.mem[static_cast<int>(m)];
    if (mem.empty())
        Fail(loc, Str(api, ": core ", CoreName(c), " has no ", MemName(m), " (on arch 2201 UB is on the AIV "
                      "cores, L1 and L0C on the AIC cores)"));
    if (off + bytes > mem.size())
        Fail(loc, Str(api, ": ", MemName(m), " bytes [", off, ", ", off + bytes, ") of ", n, " x ", sizeof(T),
                      " B lie past the end of ", MemName(m), " (", mem.size(), " B)"));
    AscDumpPrint<T>(api, MemName(m), mem.data() + off, desc, n);
}

}  // namespace megafuse_emu

template <typename T>
inline void asc_dump_gm(__gm__ T* input, uint32_t desc, uint32_t dump_size,
                        megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::AscDumpArch("asc_dump_gm", loc);
    const auto* p = reinterpret_cast<const uint8_t*>(input);
    megafuse_emu::CheckGmRegion(p, p, static_cast<uint64_t>(dump_size) * sizeof(T), "asc_dump_gm", loc);
    megafuse_emu::AscDumpPrint<T>("asc_dump_gm", "GM", p, desc, dump_size);
}
template <typename T>
inline void asc_dump_ubuf(__ubuf__ T* input, uint32_t desc, uint32_t dump_size,
                          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::AscDumpLocal<T>("asc_dump_ubuf", megafuse_emu::Mem::UB, input, desc, dump_size, loc);
}
template <typename T>
inline void asc_dump_l1buf(__cbuf__ T* input, uint32_t desc, uint32_t dump_size,
                           megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::AscDumpLocal<T>("asc_dump_l1buf", megafuse_emu::Mem::L1, input, desc, dump_size, loc);
}
template <typename T>
inline void asc_dump_cbuf(__cc__ T* input, uint32_t desc, uint32_t dump_size,
                          megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::AscDumpLocal<T>("asc_dump_cbuf", megafuse_emu::Mem::L0C, input, desc, dump_size, loc);
}
