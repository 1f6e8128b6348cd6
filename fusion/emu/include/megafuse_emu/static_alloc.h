// Static-tensor programming (devkit "LocalMemAllocator" / "静态Tensor编程" pages): instead of
// TPipe/TQue, a kernel cuts LocalTensors out of one on-chip memory with a bump allocator and
// synchronises the pipes itself with SetFlag/WaitFlag. Rules the emulation enforces:
//   one live LocalMemAllocator per memory; it cannot be mixed with TPipe buffers of that memory;
//   the tensors stay inside the SoC's memory (usable UB for Hardware::UB);
//   on arch 2201 UB belongs to the AIV cores, L1/L0A/L0B/L0C/BIAS to the AIC cores.
#pragma once

#include "pipe.h"

namespace AscendC {

enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

}  // namespace AscendC

namespace megafuse_emu {

inline Mem HardwareMem(AscendC::Hardware h, const Loc& loc)
{
    using AscendC::Hardware;
    switch (h) {
        case Hardware::UB: return Mem::UB;
        case Hardware::L1: return Mem::L1;
        case Hardware::L0A: return Mem::L0A;
        case Hardware::L0B: return Mem::L0B;
        case Hardware::L0C: return Mem::L0C;
        case Hardware::BIAS:
            if (g_core->soc.bt_bytes > 0) return Mem::BT;
            Fail(loc, Str("LocalMemAllocator<Hardware::BIAS>: ", g_core->soc_name, " has no bias table"));
        default: Fail(loc, "LocalMemAllocator: Hardware::GM / FIXBUF / MAX hold no local tensors in this emulation");
    }
}

// A static tensor of `bytes` at byte `addr` of the memory of `pos` (32 B aligned, inside the
// physical memory); its BlockInfo names it for the uninitialized-read check.
inline BlockInfo* StaticBlock(AscendC::TPosition pos, Mem m, uint64_t addr, uint64_t bytes, const void* owner,
                              const Loc& loc)
{
    CoreState& c = Core(loc);
    BlockInfo b;
    b.mem = m;
    b.pos = pos;
    b.addr = static_cast<uint32_t>(addr);
    b.bytes = static_cast<uint32_t>((bytes + 31) / 32 * 32);
    b.state = BlockInfo::State::Scratch;
    b.owner = owner;
    b.line = loc.line();
    b.is_static = true;
    c.blocks.push_back(b);
    return &c.blocks.back();
}

inline TensorRef StaticTensorRef(AscendC::TPosition pos, uint64_t addr, uint64_t bytes, const char* api, const Loc& loc)
{
    CoreState& c = Core(loc);
    const Mem m = PositionMem(pos, loc);
    CheckCoreKind(m, pos, loc);
    // On a MIX core without this memory the tensor is an address only (pipe.h CheckCoreKind).
    const uint64_t size = !ForeignMem(c, m) ? c.mem[static_cast<int>(m)].size()
                          : m == Mem::UB    ? c.soc.ub_bytes
                                            : ForeignBudget(c, m);
    if (addr % 32 != 0) Fail(loc, Str(api, ": address ", addr, " is not 32-byte aligned"));
    if (bytes == 0) Fail(loc, Str(api, ": tileSize 0"));
    if (addr + bytes > size)
        Fail(loc, Str(api, ": bytes [", addr, ", ", addr + bytes, ") run past the ", size, "-byte ", MemName(m), " of ",
                      c.soc_name));
    TensorRef r;
    r.block = StaticBlock(pos, m, addr, bytes, nullptr, loc);
    r.serial = c.serial;
    r.gen = r.block->gen;
    r.len = bytes;
    return r;
}

// The position a tensor of that memory gets when Alloc names none.
constexpr AscendC::TPosition DefaultPosition(AscendC::Hardware h)
{
    using AscendC::Hardware;
    using AscendC::TPosition;
    switch (h) {
        case Hardware::L1: return TPosition::A1;
        case Hardware::L0A: return TPosition::A2;
        case Hardware::L0B: return TPosition::B2;
        case Hardware::L0C: return TPosition::CO1;
        case Hardware::BIAS: return TPosition::C2;
        default: return TPosition::VECCALC;
    }
}

}  // namespace megafuse_emu

namespace AscendC {

template <Hardware hard = Hardware::UB>
class LocalMemAllocator {
public:
    LocalMemAllocator(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        using namespace megafuse_emu;
        CoreState& c = Core(loc);
        mem_ = HardwareMem(hard, loc);
        const int mi = static_cast<int>(mem_);
        CheckCoreKind(mem_, DefaultPosition(hard), loc);
        if (c.static_live[mi])
            Fail(loc, Str("a second LocalMemAllocator of ", MemName(mem_),
                          ": only one may exist per memory at a time (devkit constraint)"));
        if (c.used[mi] > 0)
            Fail(loc, Str("LocalMemAllocator of ", MemName(mem_), " while TPipe holds ", c.used[mi], " B of it: ",
                          "static-tensor programming cannot be mixed with TPipe buffers"));
        c.static_live[mi] = true;
        serial_ = c.serial;
    }
    ~LocalMemAllocator()
    {
        megafuse_emu::CoreState* c = megafuse_emu::g_core;
        if (c != nullptr && c->serial == serial_) c->static_live[static_cast<int>(mem_)] = false;
    }
    LocalMemAllocator(const LocalMemAllocator&) = delete;
    LocalMemAllocator& operator=(const LocalMemAllocator&) = delete;

    uint32_t GetCurAddr() const { return head_; }

    template <class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        return Take<DataType>(megafuse_emu::DefaultPosition(hard), tileSize, loc);
    }
    template <TPosition pos, class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        return Take<DataType>(pos, tileSize, loc);
    }
    template <class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        return Take<DataType>(megafuse_emu::DefaultPosition(hard), tileSize, loc);
    }
    template <TPosition pos, class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        return Take<DataType>(pos, tileSize, loc);
    }
    // Everything left in the memory.
    template <class DataType>
    LocalTensor<DataType> Alloc(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        const uint64_t left = Budget(loc) - head_;
        return Take<DataType>(megafuse_emu::DefaultPosition(hard), static_cast<uint32_t>(left / sizeof(DataType)), loc);
    }

private:
    uint64_t Budget(const megafuse_emu::Loc& loc) const
    {
        return megafuse_emu::Core(loc).budget[static_cast<int>(mem_)];
    }

    template <class T>
    LocalTensor<T> Take(TPosition pos, uint32_t count, const megafuse_emu::Loc& loc)
    {
        using namespace megafuse_emu;
        CoreState& c = Core(loc);
        if (c.serial != serial_) Fail(loc, "LocalMemAllocator::Alloc on an allocator of another block's run");
        if (PositionMem(pos, loc) != mem_)
            Fail(loc, Str("LocalMemAllocator<", MemName(mem_), ">::Alloc at position ", PosName(pos), ", which is in ",
                          MemName(PositionMem(pos, loc))));
        if (count == 0) Fail(loc, "LocalMemAllocator::Alloc of 0 elements");
        const uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
        const uint64_t rounded = (bytes + 31) / 32 * 32;
        if (head_ + rounded > Budget(loc))
            Fail(loc, Str("LocalMemAllocator::Alloc<", TypeName<T>(), ">(", count, ") needs ", rounded, " B of ",
                          MemName(mem_), " at byte ", head_, ": total ", head_ + rounded, " B > ", Budget(loc),
                          " B usable on ", c.soc_name));
        BlockInfo* b = StaticBlock(pos, mem_, head_, bytes, this, loc);
        head_ += static_cast<uint32_t>(rounded);
        return megafuse_emu::TensorOf<T>(b, bytes);
    }

    megafuse_emu::Mem mem_ = megafuse_emu::Mem::UB;
    uint64_t serial_ = 0;
    uint32_t head_ = 0;
};

}  // namespace AscendC
