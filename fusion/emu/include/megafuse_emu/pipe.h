// TPipe, TQue/TQueBind, TBuf; core indices; workspace; tiling, kernel-type and core-type macros.
#pragma once

#include "tensor.h"

// Kernel types of KERNEL_TASK_TYPE_DEFAULT (devkit "设置Kernel类型" page, same order). Arch 2201
// takes the first six; a MIX type must be launched as such (run(..., kernel_type=...)).
enum KernelMetaType : uint8_t {
    KERNEL_TYPE_AIV_ONLY = 0, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1, KERNEL_TYPE_MIX_AIC_1_2, KERNEL_TYPE_AICORE, KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE, KERNEL_TYPE_MIX_VECTOR_CORE, KERNEL_TYPE_MAX
};
static_assert(KERNEL_TYPE_MIX_AIC_1_2 == MEGAFUSE_EMU_KERNEL_MIX_AIC_1_2 &&
              KERNEL_TYPE_MIX_AIV_1_0 == MEGAFUSE_EMU_KERNEL_MIX_AIV_1_0, "C API kernel types follow the enum");

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

// On arch 2201 the UB sits on the vector cores (AIV) and L1/L0A/L0B/L0C (and the bias table)
// on the cube cores (AIC): a core holds buffers of its own memories only. A block of a
// non-MIX launch is fixed to one kind by its first buffer (or KERNEL_TASK_TYPE_DEFAULT); the
// cores of a MIX or typed launch are fixed by the launch (kind_line 0).
inline void CheckCoreKind(Mem m, AscendC::TPosition pos, const Loc& loc)
{
    CoreState& c = *g_core;
    if (!IsArch2201()) return;
    const CoreKind want = (m == Mem::UB) ? CoreKind::Vector : CoreKind::Cube;
    if (c.kind == CoreKind::Unknown) {
        SetKind(c, want, loc.line());
        return;
    }
    if (c.kind == want) return;
    const std::string buf = Str("a buffer in ", MemName(m), " (", PosName(pos), ")");
    const char* vec_hint = "UB is the memory of the AIV cores, and the vector instructions and UB copies run only "
                           "there; guard the vector part with `if ASCEND_IS_AIV { ... }`";
    const char* cube_hint = "L1/L0A/L0B/L0C and the bias table are the memories of the AIC, and the cube "
                            "instructions (LoadData, Mmad, Fixpipe) run only there; guard the cube part with "
                            "`if ASCEND_IS_AIC { ... }`";
    // A MIX kernel is compiled once per core type from the same source, and TPipe::InitBuffer
    // only hands out addresses of the position's memory (devkit kernel_tpipe_impl.h: it moves
    // the pool's address counter and touches no data), so shared code may declare buffers of
    // the other core's memory. They count against that memory's size; any use of their data on
    // this core is refused at the access (tensor.h LocalAccess).
    if (c.mix != nullptr) return;
    (void)vec_hint; (void)cube_hint;
    if (c.kind_line == 0)
        Fail(loc, Str(buf, " cannot be used in a ", KernelTypeName(static_cast<int>(c.launch_type)),
                      " kernel: it runs on ", c.kind == CoreKind::Vector ? "AIV" : "AIC", " cores only, and ",
                      m == Mem::UB ? "UB is on the AIV cores" : "L1/L0A/L0B/L0C are on the AIC cores"));
    const char* have = c.kind == CoreKind::Vector ? "vector-core (AIV: UB)" : "cube-core (AIC: L1/L0)";
    Fail(loc, Str("a buffer in ", MemName(m), " cannot be used on a ", have, " block: on ", c.soc_name,
                  " (arch 2201) UB is on the AIV cores and L1/L0A/L0B/L0C on the AIC cores; this block "
                  "was fixed to ", have, " at line ", c.kind_line,
                  ". Split the kernel, or make it a MIX kernel (KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2), "
                  "launched with kernel_type='mix_aic_1_2') whose parts are guarded by ASCEND_IS_AIV / "
                  "ASCEND_IS_AIC"));
}

inline void DeclareKernelType(KernelMetaType t, const Loc& loc)
{
    CoreState& c = Core(loc);
    const int ti = static_cast<int>(t);
    const bool mix_type = t >= KERNEL_TYPE_MIX_AIV_1_0 && t <= KERNEL_TYPE_MIX_AIC_1_2;
    if (c.launch_type != KernelType::Unspecified) {  // typed or MIX launch (arch 2201)
        const int launched = static_cast<int>(c.launch_type);
        if (ti != launched)
            Fail(loc, Str("KERNEL_TASK_TYPE_DEFAULT(", KernelTypeName(ti), ") but the kernel was launched as ",
                          KernelTypeName(launched), " (kernel_type='", KernelTypeArg(launched),
                          "'): the declared type decides which cores the device starts, so the launch must match",
                          t <= KERNEL_TYPE_MIX_AIC_1_2 ? Str(" (kernel_type='", KernelTypeArg(ti), "')") : ""));
        c.kind_declared = true;
        return;
    }
    if (mix_type && !IsArch2201())
        Fail(loc, Str(KernelTypeName(ti), " is a MIX kernel type of arch 2201 (split AIC/AIV cores); ", c.soc_name,
                      " (arch ", c.soc.arch, ") has coupled cores"));
    if (mix_type)
        Fail(loc, Str("KERNEL_TASK_TYPE_DEFAULT(", KernelTypeName(ti), ") declares a MIX kernel, but it was "
                      "launched as a non-MIX kernel: launch it with run(..., kernel_type='", KernelTypeArg(ti),
                      "'), block_dim = number of ", t == KERNEL_TYPE_MIX_AIV_1_0 ? "AIV" : "AIC", " cores"));
    if (!IsArch2201()) return;  // coupled cores: both units on one core
    if (t > KERNEL_TYPE_AIC_ONLY)
        Fail(loc, Str(KernelTypeName(ti), " is not a kernel type of arch 2201 (", c.soc_name, ")"));
    const CoreKind want = (t == KERNEL_TYPE_AIV_ONLY) ? CoreKind::Vector : CoreKind::Cube;
    if (c.kind != CoreKind::Unknown && c.kind != want)
        Fail(loc, Str("KERNEL_TASK_TYPE_DEFAULT contradicts the buffers allocated at line ", c.kind_line));
    SetKind(c, want, loc.line());
    c.kind_declared = true;
}

// ASCEND_IS_AIV / ASCEND_IS_AIC: true on the cores of that type (arch 2201), false on coupled
// cores (the devkit's g_coreType is MIX there).
inline bool IsCoreType(CoreKind want, const char* macro, const Loc& loc)
{
    CoreState* c = g_core;
    if (c == nullptr || c->soc.arch != 2201) return false;
    if (c->kind == CoreKind::Unknown)
        Fail(loc, Str(macro, " is evaluated before this block's core type is known: declare "
                             "KERNEL_TASK_TYPE_DEFAULT(...) before it, or launch with run(..., kernel_type=...)"));
    return c->kind == want;
}

inline void CopyTiling(void* dst, uint64_t bytes, const uint8_t* tiling, const Loc& loc)
{
    Core(loc);
    if (tiling == nullptr) Fail(loc, "GET_TILING_DATA: the tiling argument is a null pointer");
    CheckGmRegion(tiling, tiling, bytes, "GET_TILING_DATA", loc);
    std::memcpy(dst, tiling, bytes);
}

// The budget of a memory this MIX core does not have (addresses only, see CheckCoreKind).
inline uint64_t ForeignBudget(const CoreState& c, Mem m)
{
    switch (m) {
        case Mem::UB: return c.soc.ub_usable_bytes;
        case Mem::L1: return c.soc.l1_bytes;
        case Mem::L0A: return c.soc.l0a_bytes;
        case Mem::L0B: return c.soc.l0b_bytes;
        case Mem::L0C: return c.soc.l0c_bytes;
        default: return c.soc.bt_bytes;
    }
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
    CheckCoreKind(m, pos, loc);
    if (c.static_live[static_cast<int>(m)])
        Fail(loc, Str(what, " ", PosName(pos), "): a LocalMemAllocator of ", MemName(m),
                      " is alive; static-tensor programming cannot be mixed with TPipe buffers"));
    const uint64_t rounded = (static_cast<uint64_t>(len) + 31) / 32 * 32;
    const uint64_t need = rounded * num;
    const int mi = static_cast<int>(m);
    if (c.buffer_count + num > 64)
        Fail(loc, Str(what, " ", PosName(pos), ", num=", num, "): a kernel may hold at most 64 buffers, ",
                      c.buffer_count, " are already initialised"));
    const uint64_t budget = ForeignMem(c, m) ? ForeignBudget(c, m) : c.budget[mi];
    if (c.used[mi] + need > budget) {
        std::string items;
        for (const Allocation& a : c.allocs) {
            if (a.mem != m) continue;
            items += Str(items.empty() ? "" : "; ", "line ", a.line, ": ", PosName(a.pos), " ", a.num, " x ",
                         a.len, " B");
        }
        Fail(loc, Str(what, " ", PosName(pos), ", num=", num, ", len=", len, ") needs ", need, " B of ",
                      MemName(m), " but ", c.used[mi], " B are already taken",
                      items.empty() ? "" : Str(" (", items, ")"), ": total ", c.used[mi] + need, " B > ",
                      budget, " B usable on ", c.soc_name,
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
        b.line = loc.line();
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

// Usable as `if ASCEND_IS_AIV { ... }` (the devkit's form) and as `if (ASCEND_IS_AIV) { ... }`.
#define ASCEND_IS_AIV \
    (::megafuse_emu::IsCoreType(::megafuse_emu::CoreKind::Vector, "ASCEND_IS_AIV", ::std::source_location::current()))
#define ASCEND_IS_AIC \
    (::megafuse_emu::IsCoreType(::megafuse_emu::CoreKind::Cube, "ASCEND_IS_AIC", ::std::source_location::current()))
#define ASCEND_IS_NOT_AIV (!ASCEND_IS_AIV)
#define ASCEND_IS_NOT_AIC (!ASCEND_IS_AIC)

namespace AscendC {

// Core indices (devkit GetBlockIdx / GetBlockNum / GetSubBlockIdx / GetTaskRation pages and the
// dav_c220 sys-var implementation). block_dim = N blocks; in a MIX_AIC_1_2 launch block b is
// the AIC b plus AIV0 and AIV1:
//                    AIC      AIV (sub s)
//   GetBlockIdx      b        b * 2 + s     (MIX_AIC_1_1 / MIX_AIV_1_0: b)
//   GetBlockNum      N        N
//   GetSubBlockIdx   0        s             (0 or 1; 0 for 1:1)
//   GetTaskRation    1        2             (1 for 1:1 and every non-MIX kernel)
inline int64_t GetBlockIdx() { return megafuse_emu::g_core ? megafuse_emu::g_core->block_idx : 0; }
inline int64_t GetBlockNum() { return megafuse_emu::g_core ? megafuse_emu::g_core->block_num : 1; }
inline int64_t GetSubBlockIdx() { return megafuse_emu::g_core ? megafuse_emu::g_core->sub_idx : 0; }
inline int64_t GetTaskRation() { return megafuse_emu::g_core ? megafuse_emu::g_core->ratio : 1; }
inline int64_t GetTaskRatio() { return GetTaskRation(); }    // the newer devkit spelling
inline int64_t GetSubBlockNum() { return GetTaskRation(); }  // AIVs (on an AIV) or AICs (1) per block

// The user part of the workspace argument. On the device the framework puts a system
// workspace first and this returns workspace + its reserved size; the emulator (like the
// devkit's CPU-debug build) has no system workspace and returns the pointer itself, so the
// host passes a GM buffer of at least the user workspace the kernel addresses.
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    megafuse_emu::Core(loc);
    if (workspace == nullptr)
        megafuse_emu::Fail(loc, "GetUserWorkspace: the workspace argument is a null pointer (pass a GM buffer "
                                "of the user workspace size from the host)");
    megafuse_emu::CheckGmRegion(workspace, workspace, 1, "GetUserWorkspace", loc);
    return workspace;
}

// A queue of `num` buffers (set by TPipe::InitBuffer) at one position. The emulator runs the
// stages in program order, so EnQue/DeQue move ownership and are checked, nothing waits.
template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind {
public:
    TQueBind() = default;
    TQueBind(const TQueBind&) = delete;
    TQueBind& operator=(const TQueBind&) = delete;
    // Releases the queue's synchronisation events (devkit FreeAllEvent); the emulator keeps none.
    void FreeAllEvent() {}

    // The buffers are handed out in turn, starting after the one handed out last (double
    // buffering's ping/pong: with InitBuffer num = 2, consecutive AllocTensors alternate even
    // when the first was freed before the second is taken -- on hardware the FreeTensor only
    // queues the release after its consumer pipe, so the other buffer is what lets the producer
    // pipe run ahead). The cube's operand queues (A2 / B2) count their allocations and how many
    // took another buffer than the one before: the overlap a kernel's L0 queues allow.
    template <typename T>
    LocalTensor<T> AllocTensor(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckInit("AllocTensor", loc);
        const size_t n = slots_.size();
        for (size_t k = 0; k < n; ++k) {
            const size_t i = (cursor_ + k) % n;
            megafuse_emu::BlockInfo* b = slots_[i];
            if (b->state == megafuse_emu::BlockInfo::State::Free) {
                b->state = megafuse_emu::BlockInfo::State::Allocated;
                if constexpr (kPos == TPosition::A2 || kPos == TPosition::B2) {
                    megafuse_emu::Count(megafuse_emu::L0_ALLOCS);
                    if (last_ < n && last_ != i) megafuse_emu::Count(megafuse_emu::L0_ALLOC_SWITCHES);
                }
                cursor_ = (i + 1) % n;
                last_ = i;
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

    // A custom TBufPool (EXTERN_IMPL_BUFPOOL, buf_pool.h) sets the queue's buffers up one by one.
    template <class H>
    void InitStartBufHandle(H start, uint8_t num, uint32_t, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        start.pool->StartHandles(*this, start, num, loc);
    }
    template <class P, class H>
    void InitBufHandle(P* pool, uint32_t index, H, uint32_t addr, uint32_t len, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        if (index >= slots_.size())
            megafuse_emu::Fail(loc, megafuse_emu::Str("InitBufHandle(", index, "): InitStartBufHandle set up ",
                                                      slots_.size(), " buffers"));
        slots_[index] = pool->MfEmuPool().NewBlock(kPos, addr, len, this, true, "InitBufHandle", loc);
    }

    // emulator internals
    static constexpr TPosition kPos = (src == TPosition::GM) ? dst : src;
    std::vector<megafuse_emu::BlockInfo*> slots_;
    std::deque<megafuse_emu::BlockInfo*> fifo_;
    uint64_t serial_ = 0;
    size_t cursor_ = 0;            // the slot AllocTensor tries first
    size_t last_ = SIZE_MAX;       // the slot AllocTensor handed out last (none yet)
    void ResetCursor() { cursor_ = 0; last_ = SIZE_MAX; }

private:
    void CheckInit(const char* api, const megafuse_emu::Loc& loc) const
    {
        if (!slots_.empty() && serial_ != megafuse_emu::Core(loc).serial)
            megafuse_emu::Fail(loc, megafuse_emu::Str(api, " on a queue set up in another block's run (create "
                                                      "TQue/TBuf/TPipe objects inside the kernel)"));
        if (slots_.empty())
            megafuse_emu::Fail(loc, megafuse_emu::Str(api, " on a ", megafuse_emu::PosName(kPos),
                                                      " queue that TPipe::InitBuffer has not set up"));
        for (size_t i = 0; i < slots_.size(); ++i)
            if (slots_[i] == nullptr)
                megafuse_emu::Fail(loc, megafuse_emu::Str(api, " on a queue whose buffer ", i, " no InitBufHandle "
                                                          "has set up"));
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

    // The devkit lets a TBuf tensor be "freed" (a TBuf has no queue: nothing is released); the
    // tensor must come from this TBuf.
    template <typename T>
    void FreeTensor(LocalTensor<T>& t, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckInit(loc);
        if (t.ref_.block != block_) megafuse_emu::Fail(loc, "TBuf::FreeTensor: the tensor is not from this TBuf");
    }

    template <typename T>
    LocalTensor<T> Get(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckInit(loc);
        return megafuse_emu::TensorOf<T>(block_, block_->bytes);
    }

    // AllocTensor: the devkit's TBuf derives from its queue class, so samples also take the whole
    // buffer with AllocTensor (= Get) and give it back with FreeTensor above.
    template <typename T>
    LocalTensor<T> AllocTensor(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        return Get<T>(loc);
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

    // `size` elements starting `bufOffset` bytes into the buffer (devkit GetWithOffset:
    // bufOffset 32 B aligned, size * sizeof(T) + bufOffset within the TBuf).
    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckInit(loc);
        if (bufOffset % 32 != 0)
            megafuse_emu::Fail(loc, megafuse_emu::Str("TBuf::GetWithOffset: bufOffset ", bufOffset,
                                                      " B is not 32-byte aligned"));
        const uint64_t end = static_cast<uint64_t>(size) * sizeof(T) + bufOffset;
        if (end > block_->bytes)
            megafuse_emu::Fail(loc, megafuse_emu::Str("TBuf::GetWithOffset<", megafuse_emu::TypeName<T>(), ">(", size, ", ",
                                                      bufOffset, ") ends at byte ", end, " past the TBuf's ",
                                                      block_->bytes, " bytes"));
        LocalTensor<T> t = megafuse_emu::TensorOf<T>(block_, end);
        t.ref_.off = bufOffset;
        t.ref_.len = static_cast<uint64_t>(size) * sizeof(T);
        return t;
    }

    template <class H>  // custom TBufPool (buf_pool.h)
    void InitStartBufHandle(H start, uint8_t num, uint32_t, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        if (num != 1) megafuse_emu::Fail(loc, "TBuf::InitStartBufHandle: a TBuf has one buffer (num 1)");
        start.pool->Check("InitStartBufHandle", loc);
        block_ = nullptr;
    }
    template <class P, class H>
    void InitBufHandle(P* pool, uint32_t index, H, uint32_t addr, uint32_t len, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        if (index != 0) megafuse_emu::Fail(loc, "TBuf::InitBufHandle: a TBuf has one buffer (index 0)");
        block_ = pool->MfEmuPool().NewBlock(pos, addr, len, this, false, "InitBufHandle", loc);
        serial_ = megafuse_emu::Core(loc).serial;
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
        prev_pipe_ = c->pipe;
        c->pipe = this;
        used_mark_ = c->used;
        blocks_mark_ = c->blocks.size();
        allocs_mark_ = c->allocs.size();
        count_mark_ = c->buffer_count;
    }
    ~TPipe()
    {
        Destroy();
        megafuse_emu::CoreState* c = megafuse_emu::g_core;
        if (c != nullptr && c->serial == serial_ && c->pipe == this) c->pipe = prev_pipe_;
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    // Event ids (devkit AllocEventID / ReleaseEventID / FetchEventID): 8 per HardEvent, the
    // allocation is tracked so a leak or a double release is reported; FetchEventID names the
    // first free id without taking it.
    template <HardEvent evt>
    int8_t AllocEventID(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        uint8_t& used = event_ids_[static_cast<size_t>(evt) % kEventKinds];
        for (int8_t i = 0; i < 8; ++i)
            if (!(used & (1u << i))) { used |= static_cast<uint8_t>(1u << i); return i; }
        megafuse_emu::Fail(loc, "AllocEventID: all 8 event ids of this HardEvent are allocated");
        return -1;
    }
    template <HardEvent evt>
    void ReleaseEventID(int8_t id, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        uint8_t& used = event_ids_[static_cast<size_t>(evt) % kEventKinds];
        if (id < 0 || id > 7 || !(used & (1u << id)))
            megafuse_emu::Fail(loc, megafuse_emu::Str("ReleaseEventID: event id ", int(id), " is not allocated"));
        used &= static_cast<uint8_t>(~(1u << id));
    }
    int8_t FetchEventID(HardEvent evt, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        const uint8_t used = event_ids_[static_cast<size_t>(evt) % kEventKinds];
        for (int8_t i = 0; i < 8; ++i)
            if (!(used & (1u << i))) return i;
        megafuse_emu::Fail(loc, "FetchEventID: all 8 event ids of this HardEvent are allocated");
        return -1;
    }
    template <HardEvent evt>
    int8_t FetchEventID(megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        return FetchEventID(evt, loc);
    }

    template <class Q>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        const uint64_t serial = CheckPipe(loc);
        if (!que.slots_.empty() && que.serial_ == serial &&
            que.slots_[0]->state != megafuse_emu::BlockInfo::State::Dead)
            megafuse_emu::Fail(loc, "InitBuffer called twice for the same queue");
        que.fifo_.clear();
        que.slots_ = megafuse_emu::AllocateBuffers(Q::kPos, num, len, &que, true, loc);
        que.ResetCursor();
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

    // TBufPool (buf_pool.h): len bytes of the pool's position, or shareBuf's start and length.
    template <class P>
    bool InitBufPool(P& pool, uint32_t len, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckPipe(loc);
        pool.MfEmuPool().FromPipe(len, loc);
        return true;
    }
    template <class P, class S>
    bool InitBufPool(P& pool, uint32_t len, S& shareBuf, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        CheckPipe(loc);
        pool.MfEmuPool().Shared(shareBuf.MfEmuPool(), len, nullptr, loc);
        return true;
    }

    void Reset() { Release(); }
    void Destroy() { Release(); }

private:
    static constexpr size_t kEventKinds = 33;  // HardEvent values
    uint8_t event_ids_[kEventKinds] = {};
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
    void* prev_pipe_ = nullptr;  // GetTPipePtr's answer before this pipe
    std::array<uint64_t, megafuse_emu::kNumMem> used_mark_{};
    size_t blocks_mark_ = 0;
    size_t allocs_mark_ = 0;
    uint32_t count_mark_ = 0;
};

}  // namespace AscendC
