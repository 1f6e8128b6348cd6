// Uninitialized-read check: every byte of UB, L1, L0A, L0B, L0C and the bias table carries a
// "written" flag (CoreState::written, cleared when the core starts). The APIs mark the bytes
// they store and check the bytes they load; a load of a byte no instruction of this core ever
// stored is an error naming the kernel, the line and the buffer. On hardware such a read returns
// whatever the previous kernel left there (the emulator's 0xFF fill shows up as NaN).
// The flags live per core (one launch block, or one AIC/AIV of a MIX launch) and survive
// FreeTensor / TPipe::Reset: stale data is a different bug, this one is "never written".
#pragma once

#include <cstring>

#include "state.h"

namespace megafuse_emu {

// Which on-chip memory of core c holds p (-1: none, e.g. GM or a host temporary).
inline int MemIndexOf(const CoreState& c, const uint8_t* p)
{
    for (int m = 0; m < kNumMem; ++m) {
        const std::vector<uint8_t>& v = c.mem[m];
        if (!v.empty() && p >= v.data() && p < v.data() + v.size()) return m;
    }
    return -1;
}


// "the A2 buffer from InitBuffer at line 12 (L0A bytes [0, 2048))" for the buffer holding addr.
inline std::string DescribeBuffer(const CoreState& c, Mem m, uint64_t addr)
{
    for (auto it = c.blocks.rbegin(); it != c.blocks.rend(); ++it) {
        const BlockInfo& b = *it;
        if (b.mem != m || addr < b.addr || addr >= static_cast<uint64_t>(b.addr) + b.bytes) continue;
        if (b.state == BlockInfo::State::Dead) continue;
        return Str("the ", PosName(b.pos), b.is_static ? " tensor from LocalMemAllocator::Alloc" : " buffer from InitBuffer",
                   " at line ", b.line, " (", MemName(m), " bytes [", b.addr, ", ", b.addr + b.bytes, "))");
    }
    return Str("no live buffer (", MemName(m), " byte ", addr, ")");
}

// Byte states in CoreState::written.
constexpr uint8_t kNeverWritten = 0;
constexpr uint8_t kWritten = 1;
constexpr uint8_t kDerived = 2;  // written, but computed or copied from never-written bytes

// Shadow bytes of [p, p + n) in on-chip memory, or nullptr (GM, host memory).
inline uint8_t* ShadowOf(const uint8_t* p, int* mem_out = nullptr, uint64_t* off_out = nullptr)
{
    CoreState* c = g_core;
    if (c == nullptr) return nullptr;
    const int m = MemIndexOf(*c, p);
    if (m < 0) return nullptr;
    const uint64_t off = static_cast<uint64_t>(p - c->mem[m].data());
    if (mem_out) *mem_out = m;
    if (off_out) *off_out = off;
    return c->written[m].data() + off;
}

inline bool AllWritten(const uint8_t* w, uint64_t n)
{
    return std::memchr(w, kNeverWritten, n) == nullptr && std::memchr(w, kDerived, n) == nullptr;
}

// Remembers the first read of never-written bytes whose values flowed on (vector op or on-chip
// copy), so the error at the point of use names where the garbage came from.
inline void NoteOrigin(const uint8_t* p, uint64_t n, const char* api, const char* operand, const Loc& loc)
{
    CoreState& c = *g_core;
    if (!c.uninit_origin.empty()) return;
    int m = 0;
    uint64_t off = 0;
    const uint8_t* w = ShadowOf(p, &m, &off);
    uint64_t first = 0;
    while (first < n && w[first] != kNeverWritten) ++first;
    uint64_t last = first;
    while (last < n && w[last] == kNeverWritten) ++last;
    c.uninit_origin = Str(api, " at line ", loc.line(), " read ", operand, " ", MemName(static_cast<Mem>(m)), " bytes [",
                          off + first, ", ", off + last, ") that were never written, in ",
                          DescribeBuffer(c, static_cast<Mem>(m), off + first));
}

// A use that matters (data leaving the core for GM, cube operands, scalar reads): fails when
// any byte of [p, p + n) was never written or holds values derived from never-written bytes.
inline void CheckWritten(const uint8_t* p, uint64_t n, const char* api, const char* operand, const Loc& loc)
{
    int m = 0;
    uint64_t off = 0;
    const uint8_t* w = n ? ShadowOf(p, &m, &off) : nullptr;
    if (w == nullptr || AllWritten(w, n)) return;
    uint64_t first = 0;
    while (w[first] == kWritten) ++first;
    const uint8_t state = w[first];
    uint64_t last = first;
    while (last < n && w[last] == state) ++last;
    const CoreState& c = *g_core;
    const Mem mem = static_cast<Mem>(m);
    const std::string range = Str(MemName(mem), " bytes [", off + first, ", ", off + last, ")");
    if (state == kNeverWritten)
        Fail(loc, Str("uninitialized read: ", api, " reads ", operand, " from ", range,
                      " that no instruction of this core ever wrote; buffer: ", DescribeBuffer(c, mem, off + first),
                      " (on hardware this reads whatever the previous kernel left there)"));
    Fail(loc, Str("uninitialized read: ", api, " uses ", operand, " ", range, " of ", DescribeBuffer(c, mem, off + first),
                  ", whose values were computed from never-written on-chip memory (first: ", c.uninit_origin, ")"));
}

// A copy between on-chip buffers (or a vector op on contiguous elements): dst bytes take the
// state of the src bytes, never-written ones becoming "derived".
inline void PropagateCopy(uint8_t* dst, const uint8_t* src, uint64_t n, const char* api, const char* operand,
                          const Loc& loc)
{
    uint8_t* wd = n ? ShadowOf(dst) : nullptr;
    if (wd == nullptr) return;
    const uint8_t* ws = ShadowOf(src);
    if (ws == nullptr || AllWritten(ws, n)) {
        std::memset(wd, kWritten, n);
        return;
    }
    if (std::memchr(ws, kNeverWritten, n) != nullptr) NoteOrigin(src, n, api, operand, loc);
    std::memmove(wd, ws, n);
    for (uint64_t i = 0; i < n; ++i)
        if (wd[i] == kNeverWritten) wd[i] = kDerived;
}

// State of one element: kWritten when all its bytes are, else kNeverWritten / kDerived.
inline uint8_t ElemState(const uint8_t* p, uint32_t esize)
{
    const uint8_t* w = ShadowOf(p);
    if (w == nullptr) return kWritten;
    uint8_t st = kWritten;
    for (uint32_t i = 0; i < esize; ++i) {
        if (w[i] == kNeverWritten) return kNeverWritten;
        if (w[i] == kDerived) st = kDerived;
    }
    return st;
}

inline void SetState(uint8_t* p, uint64_t n, uint8_t st)
{
    uint8_t* w = n ? ShadowOf(p) : nullptr;
    if (w != nullptr) std::memset(w, st, n);
}

inline void MarkWritten(const uint8_t* p, uint64_t n) { SetState(const_cast<uint8_t*>(p), n, kWritten); }

inline void CheckWrittenAt(const uint8_t* base, uint64_t index, uint32_t esize, const char* api, const char* operand,
                           const Loc& loc)
{
    CheckWritten(base + index * esize, esize, api, operand, loc);
}

// A converting copy of n elements (src_es bytes each -> dst_es bytes each), element by element.
inline void PropagateElems(uint8_t* dst, uint32_t dst_es, const uint8_t* src, uint32_t src_es, uint64_t n,
                           const char* api, const char* operand, const Loc& loc)
{
    const uint8_t* ws = n ? ShadowOf(src) : nullptr;
    if (ws == nullptr || AllWritten(ws, n * src_es)) return MarkWritten(dst, n * dst_es);
    for (uint64_t i = 0; i < n; ++i) {
        const uint8_t st = ElemState(src + i * src_es, src_es);
        if (st == kNeverWritten) NoteOrigin(src + i * src_es, src_es, api, operand, loc);
        SetState(dst + i * dst_es, dst_es, st == kWritten ? kWritten : kDerived);
    }
}

}  // namespace megafuse_emu
