// TPipe, TQue/TQueBind, TBuf; block index; tiling and kernel-type macros.
#pragma once

#include "tensor.h"

// Kernel types accepted by KERNEL_TASK_TYPE_DEFAULT. Only the single-unit kinds exist here:
// mix (AIC+AIV) kernels are not emulated, so naming one fails to compile.
enum KernelMetaType : uint8_t { KERNEL_TYPE_AIV_ONLY = 0, KERNEL_TYPE_AIC_ONLY };

namespace megafuse_emu {

inline Mem PositionMem(AscendC::TPosition p, const Loc& loc)
{
    using AscendC::TPosition;
    switch (p) {
        case TPosition::VECIN:
        case TPosition::VECOUT:
        case TPosition::VECCALC: return Mem::UB;
        case TPosition::A1:
        case TPosition::B1:
        case TPosition::C1: return Mem::L1;
        case TPosition::A2: return Mem::L0A;
        case TPosition::B2: return Mem::L0B;
        case TPosition::CO1: return Mem::L0C;
        case TPosition::CO2:
            // CO2 is the UB staging area of the L0C -> UB path on coupled cores (310P).
            if (!IsArch2201()) return Mem::UB;
            Fail(loc, Str("position CO2 has no buffer on ", g_core->soc_name,
                          " (arch 2201 moves L0C out with Fixpipe)"));
        case TPosition::C2:
            // C2 is the bias table (BT) of the arch 2201 cube core; arch 2002 has none.
            if (g_core->soc.bt_bytes > 0) return Mem::BT;
            Fail(loc, Str("position C2 (bias table) has no buffer on ", g_core->soc_name, " (arch ",
                          g_core->soc.arch, " has no bias table; add the bias in UB after the L0C -> UB copy)"));
        default: Fail(loc, Str("position ", PosName(p), " cannot hold TPipe buffers in this emulation"));
    }
}

// On arch 2201 the UB sits on the vector cores (AIV) and L1/L0A/L0B/L0C on the cube cores
// (AIC): one block runs on one kind of core, so it may not hold buffers of both.
inline void CheckCoreKind(Mem m, const Loc& loc)
{
    CoreState& c = *g_core;
    if (!IsArch2201()) return;
    const CoreKind want = (m == Mem::UB) ? CoreKind::Vector : CoreKind::Cube;
    if (c.kind == CoreKind::Unknown) {
        c.kind = want;
        c.kind_line = loc.line();
        return;
    }
    if (c.kind != want) {
        const char* have = c.kind == CoreKind::Vector ? "vector-core (AIV: UB)" : "cube-core (AIC: L1/L0)";
        Fail(loc, Str("a buffer in ", MemName(m), " cannot be used on a ", have, " block: on ", c.soc_name,
                      " (arch 2201) UB is on the AIV cores and L1/L0A/L0B/L0C on the AIC cores; this block "
                      "was fixed to ", have, " at line ", c.kind_line,
                      ". Split the kernel (mix AIC+AIV kernels are not emulated)"));
    }
}

inline void DeclareKernelType(KernelMetaType t, const Loc& loc)
{
    CoreState& c = Core(loc);
    if (!IsArch2201()) return;  // coupled cores: both units on one core
    const CoreKind want = (t == KERNEL_TYPE_AIV_ONLY) ? CoreKind::Vector : CoreKind::Cube;
    if (c.kind != CoreKind::Unknown && c.kind != want)
        Fail(loc, Str("KERNEL_TASK_TYPE_DEFAULT contradicts the buffers allocated at line ", c.kind_line));
    c.kind = want;
    c.kind_line = loc.line();
    c.kind_declared = true;
}

inline void CopyTiling(void* dst, uint64_t bytes, const uint8_t* tiling, const Loc& loc)
{
    Core(loc);
    if (tiling == nullptr) Fail(loc, "GET_TILING_DATA: the tiling argument is a null pointer");
    CheckGmRegion(tiling, tiling, bytes, "GET_TILING_DATA", loc);
    std::memcpy(dst, tiling, bytes);
}

// Hands out `num` buffers of `len` bytes (rounded up to 32 B, as the devkit documents) from
// the memory of `pos`, enforcing the SoC budget and the 64-buffer limit.
inline std::vector<BlockInfo*> AllocateBuffers(AscendC::TPosition pos, uint32_t num, uint32_t len,
                                               const void* owner, bool queue, const Loc& loc)
{
    CoreState& c = Core(loc);
    const char* what = queue ? "InitBuffer(queue" : "InitBuffer(TBuf";
    if (num == 0 || len == 0) Fail(loc, Str(what, " ", PosName(pos), "): num and len must be > 0"));
    const Mem m = PositionMem(pos, loc);
    CheckCoreKind(m, loc);
    const uint64_t rounded = (static_cast<uint64_t>(len) + 31) / 32 * 32;
    const uint64_t need = rounded * num;
    const int mi = static_cast<int>(m);
    if (c.buffer_count + num > 64)
        Fail(loc, Str(what, " ", PosName(pos), ", num=", num, "): a kernel may hold at most 64 buffers, ",
                      c.buffer_count, " are already initialised"));
    if (c.used[mi] + need > c.budget[mi]) {
        std::string items;
        for (const Allocation& a : c.allocs) {
            if (a.mem != m) continue;
            items += Str(items.empty() ? "" : "; ", "line ", a.line, ": ", PosName(a.pos), " ", a.num, " x ",
                         a.len, " B");
        }
        Fail(loc, Str(what, " ", PosName(pos), ", num=", num, ", len=", len, ") needs ", need, " B of ",
                      MemName(m), " but ", c.used[mi], " B are already taken",
                      items.empty() ? "" : Str(" (", items, ")"), ": total ", c.used[mi] + need, " B > ",
                      c.budget[mi], " B usable on ", c.soc_name,
                      m == Mem::UB ? " (use a smaller tile or single buffering)" : ""));
    }
    std::vector<BlockInfo*> out;
    for (uint32_t i = 0; i < num; ++i) {
        BlockInfo b;
        b.mem = m;
        b.pos = pos;
        b.addr = static_cast<uint32_t>(c.used[mi] + i * rounded);
        b.bytes = static_cast<uint32_t>(rounded);
        b.state = queue ? BlockInfo::State::Free : BlockInfo::State::Scratch;
        b.owner = owner;
        c.blocks.push_back(b);
        out.push_back(&c.blocks.back());
    }
    c.used[mi] += need;
    c.buffer_count += num;
    c.allocs.push_back({m, pos, num, static_cast<uint32_t>(rounded), loc.line(), queue});
    return out;
}

template <typename T>
AscendC::LocalTensor<T> TensorOf(BlockInfo* b, uint64_t bytes)
{
    AscendC::LocalTensor<T> t;
    t.ref_.block = b;
    t.ref_.serial = g_core->serial;
    t.ref_.gen = b->gen;
    t.ref_.off = 0;
    t.ref_.len = bytes;
    return t;
}

}  // namespace megafuse_emu

// Tiling: a kernel declares a plain struct and reads it from the `tiling` GM argument with
//   REGISTER_TILING_DEFAULT(MyTiling);  GET_TILING_DATA(t, tiling);
// or GET_TILING_DATA_WITH_STRUCT(MyTiling, t, tiling). The host side writes the same struct
// bytes (e.g. numpy array / struct.pack) as that argument.
#define REGISTER_TILING_DEFAULT(type) using megafuse_emu_default_tiling_t = type
#define GET_TILING_DATA_WITH_STRUCT(type, var, tiling)                                        \
    type var;                                                                                 \
    static_assert(std::is_trivially_copyable_v<type>, "tiling struct must be trivially copyable"); \
    megafuse_emu::CopyTiling(&var, sizeof(type), reinterpret_cast<const uint8_t*>(tiling),   \
                             std::source_location::current())
#define GET_TILING_DATA(var, tiling) GET_TILING_DATA_WITH_STRUCT(megafuse_emu_default_tiling_t, var, tiling)
#define KERNEL_TASK_TYPE_DEFAULT(type) megafuse_emu::DeclareKernelType(type, std::source_location::current())

namespace AscendC {

inline int64_t GetBlockIdx() { return megafuse_emu::g_core ? megafuse_emu::g_core->block_idx : 0; }
inline int64_t GetBlockNum() { return megafuse_emu::g_core ? megafuse_emu::g_core->block_num : 1; }

// A queue of `num` buffers (set by TPipe::InitBuffer) at one position. The emulator runs the
// stages in program order, so EnQue/DeQue move ownership and are checked, nothing waits.
template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind {
public:
    TQueBind() = default;
    TQueBind(const TQueBind&) = delete;
    TQueBind& operator=(const TQueBind&) = delete;

    template <typename T>
    LocalTensor<T> AllocTensor(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckInit("AllocTensor", loc);
        for (megafuse_emu::BlockInfo* b : slots_) {
            if (b->state == megafuse_emu::BlockInfo::State::Free) {
                b->state = megafuse_emu::BlockInfo::State::Allocated;
                return megafuse_emu::TensorOf<T>(b, b->bytes);
            }
        }
        megafuse_emu::Fail(loc, megafuse_emu::Str("AllocTensor on a ", megafuse_emu::PosName(kPos),
                                                  " queue: all ", slots_.size(),
                                                  " buffers (InitBuffer num) are allocated or enqueued; "
                                                  "FreeTensor one first"));
    }

    template <typename T>
    bool EnQue(const LocalTensor<T>& tensor, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckInit("EnQue", loc);
        megafuse_emu::BlockInfo* b = Owned(tensor, "EnQue", loc);
        if (fifo_.size() >= static_cast<size_t>(depth))
            megafuse_emu::Fail(loc, megafuse_emu::Str("EnQue beyond the queue depth ", depth, " of a ",
                                                      megafuse_emu::PosName(kPos), " queue (",
                                                      fifo_.size(), " tensors already enqueued)"));
        b->state = megafuse_emu::BlockInfo::State::Enqueued;
        fifo_.push_back(b);
        return true;
    }

    template <typename T>
    LocalTensor<T> DeQue(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckInit("DeQue", loc);
        if (fifo_.empty())
            megafuse_emu::Fail(loc, megafuse_emu::Str("DeQue on an empty ", megafuse_emu::PosName(kPos),
                                                      " queue: no tensor was EnQue'd (on hardware this "
                                                      "waits forever)"));
        megafuse_emu::BlockInfo* b = fifo_.front();
        fifo_.pop_front();
        b->state = megafuse_emu::BlockInfo::State::Allocated;
        ++b->gen;  // the producer's handle goes stale: the consumer owns the buffer now
        return megafuse_emu::TensorOf<T>(b, b->bytes);
    }

    template <typename T>
    void FreeTensor(LocalTensor<T>& tensor, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckInit("FreeTensor", loc);
        megafuse_emu::BlockInfo* b = Owned(tensor, "FreeTensor", loc);
        b->state = megafuse_emu::BlockInfo::State::Free;
        ++b->gen;
    }

    // emulator internals
    static constexpr TPosition kPos = (src == TPosition::GM) ? dst : src;
    std::vector<megafuse_emu::BlockInfo*> slots_;
    std::deque<megafuse_emu::BlockInfo*> fifo_;
    uint64_t serial_ = 0;

private:
    void CheckInit(const char* api, const megafuse_emu::Loc& loc) const
    {
        if (!slots_.empty() && serial_ != megafuse_emu::Core(loc).serial)
            megafuse_emu::Fail(loc, megafuse_emu::Str(api, " on a queue set up in another block's run (create "
                                                      "TQue/TBuf/TPipe objects inside the kernel)"));
        if (slots_.empty())
            megafuse_emu::Fail(loc, megafuse_emu::Str(api, " on a ", megafuse_emu::PosName(kPos),
                                                      " queue that TPipe::InitBuffer has not set up"));
    }

    template <typename T>
    megafuse_emu::BlockInfo* Owned(const LocalTensor<T>& t, const char* api, const megafuse_emu::Loc& loc) const
    {
        using megafuse_emu::Fail;
        using megafuse_emu::Str;
        using S = megafuse_emu::BlockInfo::State;
        megafuse_emu::BlockInfo* b = t.ref_.block;
        if (b == nullptr) Fail(loc, Str(api, " of an uninitialized LocalTensor"));
        if (b->owner != this)
            Fail(loc, Str(api, " of a tensor not allocated from this ", megafuse_emu::PosName(kPos),
                          " queue (it belongs to a ", megafuse_emu::PosName(b->pos),
                          b->state == S::Scratch ? " TBuf)" : " queue)"));
        if (b->state == S::Dead) Fail(loc, Str(api, " of a tensor whose TPipe was reset or destroyed"));
        if (b->state == S::Enqueued) Fail(loc, Str(api, " of a tensor that is still enqueued (DeQue it first)"));
        if (b->state == S::Free || b->gen != t.ref_.gen)
            Fail(loc, Str(api, " of a stale tensor handle: its buffer was freed or passed through "
                               "EnQue/DeQue since this tensor was obtained"));
        return b;
    }
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<pos, pos, depth, mask> {
    static_assert(depth >= 1, "TQue depth must be at least 1");

public:
    TQue() = default;
};

// Scratch memory at one position: Get() returns the same buffer every time, no queueing.
template <TPosition pos = TPosition::LCM>
class TBuf {
public:
    TBuf() = default;
    TBuf(const TBuf&) = delete;
    TBuf& operator=(const TBuf&) = delete;

    template <typename T>
    LocalTensor<T> Get(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckInit(loc);
        return megafuse_emu::TensorOf<T>(block_, block_->bytes);
    }

    // The first `len` elements of the buffer.
    template <typename T>
    LocalTensor<T> Get(uint32_t len, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckInit(loc);
        if (static_cast<uint64_t>(len) * sizeof(T) > block_->bytes)
            megafuse_emu::Fail(loc, megafuse_emu::Str("TBuf::Get<", megafuse_emu::TypeName<T>(), ">(", len,
                                                      ") exceeds the TBuf's ", block_->bytes, " bytes"));
        return megafuse_emu::TensorOf<T>(block_, static_cast<uint64_t>(len) * sizeof(T));
    }

    megafuse_emu::BlockInfo* block_ = nullptr;  // emulator internals
    uint64_t serial_ = 0;

private:
    void CheckInit(const megafuse_emu::Loc& loc) const
    {
        if (block_ != nullptr && serial_ != megafuse_emu::Core(loc).serial)
            megafuse_emu::Fail(loc, "TBuf::Get on a TBuf set up in another block's run (create TQue/TBuf/TPipe "
                                    "objects inside the kernel)");
        if (block_ == nullptr) megafuse_emu::Fail(loc, "TBuf::Get before TPipe::InitBuffer");
        if (block_->state == megafuse_emu::BlockInfo::State::Dead)
            megafuse_emu::Fail(loc, "TBuf::Get after its TPipe was reset or destroyed");
    }
};

// Owns the on-chip memory of the kernel: InitBuffer hands out buffers; Reset/Destroy and the
// destructor give them back (tensors still pointing at them become invalid).
class TPipe {
public:
    TPipe(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        (void)loc;
        megafuse_emu::CoreState* c = megafuse_emu::g_core;
        if (c == nullptr) return;  // a global TPipe: refused at InitBuffer (no throwing at load time)
        serial_ = c->serial;
        used_mark_ = c->used;
        blocks_mark_ = c->blocks.size();
        allocs_mark_ = c->allocs.size();
        count_mark_ = c->buffer_count;
    }
    ~TPipe() { Destroy(); }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    template <class Q>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        const uint64_t serial = CheckPipe(loc);
        if (!que.slots_.empty() && que.serial_ == serial &&
            que.slots_[0]->state != megafuse_emu::BlockInfo::State::Dead)
            megafuse_emu::Fail(loc, "InitBuffer called twice for the same queue");
        que.fifo_.clear();
        que.slots_ = megafuse_emu::AllocateBuffers(Q::kPos, num, len, &que, true, loc);
        que.serial_ = serial;
        return true;
    }

    template <TPosition bufPos>
    bool InitBuffer(TBuf<bufPos>& buf, uint32_t len, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        const uint64_t serial = CheckPipe(loc);
        if (buf.block_ != nullptr && buf.serial_ == serial &&
            buf.block_->state != megafuse_emu::BlockInfo::State::Dead)
            megafuse_emu::Fail(loc, "InitBuffer called twice for the same TBuf");
        buf.block_ = megafuse_emu::AllocateBuffers(bufPos, 1, len, &buf, false, loc).front();
        buf.serial_ = serial;
        return true;
    }

    void Reset() { Release(); }
    void Destroy() { Release(); }

private:
    uint64_t CheckPipe(const megafuse_emu::Loc& loc) const
    {
        const uint64_t serial = megafuse_emu::Core(loc).serial;
        if (serial_ != serial)
            megafuse_emu::Fail(loc, "InitBuffer on a TPipe created outside this block's run (create the TPipe "
                                    "inside the kernel)");
        return serial;
    }

    void Release()
    {
        megafuse_emu::CoreState* c = megafuse_emu::g_core;
        if (c == nullptr || c->serial != serial_ || c->blocks.size() < blocks_mark_) return;
        for (size_t i = blocks_mark_; i < c->blocks.size(); ++i) c->blocks[i].state = megafuse_emu::BlockInfo::State::Dead;
        // Blocks stay in the deque (tensors may still point at them); memory is reusable.
        c->used = used_mark_;
        c->allocs.resize(allocs_mark_);
        c->buffer_count = count_mark_;
        blocks_mark_ = c->blocks.size();
    }

    uint64_t serial_ = 0;
    std::array<uint64_t, megafuse_emu::kNumMem> used_mark_{};
    size_t blocks_mark_ = 0;
    size_t allocs_mark_ = 0;
    uint32_t count_mark_ = 0;
};

}  // namespace AscendC
