// TBufPool and the custom-pool macro EXTERN_IMPL_BUFPOOL (devkit TBufPool / EXTERN_IMPL_BUFPOOL
// pages). Facts from the pages:
//   * TBufPool<pos, bufIDSize = 4>: pos VECIN / VECOUT / VECCALC / A1 / B1 / C1; bufIDSize <= 16
//     buffers may be handed out from it; TPipe::InitBufPool(pool, len) reserves len bytes of the
//     position's memory, InitBufPool(pool, len, shareBuf) makes pool reuse shareBuf's start
//     address and length; a pool's InitBuffer(que, num, len) / InitBuffer(tbuf, len) cut
//     consecutive 32 B-rounded blocks from it; pool.InitBufPool(sub, len[, share]) does the same
//     for a sub-pool (a sub-pool's bufIDSize may not exceed what the parent has left, or, shared,
//     the parent's bufIDSize); Reset() gives its blocks back.
//   * EXTERN_IMPL_BUFPOOL(EXT_BUFPOOL, POSITION, BUFID_SIZE) gives a user class Reset, Init,
//     GetBufHandle, SetCurAddr, GetCurAddr, SetCurBufSize, GetCurBufSize; the user's InitBuffer
//     then calls the queue's / TBuf's InitStartBufHandle(handle, num, len) and InitBufHandle(pool,
//     i, handle, addr, len). It must be initialised with TPipe::InitBufPool first.
// Enforced here: every block lies inside its pool (32 B aligned, in the pool's memory), the
// bufIDSize counts, InitBufPool before use, objects of this block's run only; Reset makes the
// pool's tensors (and its sub-pools') stale like a TPipe reset. Addresses (GetCurAddr) are
// byte addresses in the memory, as GetPhyAddr gives them.
#pragma once

#include <algorithm>
#include <vector>

#include "pipe.h"

namespace megafuse_emu {

struct PoolCore;

}  // namespace megafuse_emu

namespace AscendC {

// A buffer id of a pool (the devkit's TBufHandle; here the pool and the id).
struct TBufHandle {
    megafuse_emu::PoolCore* pool = nullptr;
    uint32_t id = 0;
};

}  // namespace AscendC

namespace megafuse_emu {

struct PoolCore {
    AscendC::TPosition pos;
    uint32_t capacity;
    bool init = false;
    uint64_t serial = 0;
    Mem mem = Mem::UB;
    uint32_t start = 0, len = 0, cur = 0, count = 0;
    PoolCore* parent = nullptr;
    std::vector<BlockInfo*> blocks;  // handed out from this pool or its sub-pools

    PoolCore(AscendC::TPosition p, uint32_t cap) : pos(p), capacity(cap) {}

    void Check(const char* api, const Loc& loc) const
    {
        const CoreState& c = Core(loc);
        if (!init) Fail(loc, Str(api, " on a TBufPool that no InitBufPool has set up"));
        if (serial != c.serial)
            Fail(loc, Str(api, " on a TBufPool set up in another block's run (create it inside the kernel)"));
    }

    void Begin(uint32_t want, const Loc& loc)
    {
        if (want == 0) Fail(loc, "InitBufPool: len must be > 0");
        const CoreState& c = Core(loc);
        mem = PositionMem(pos, loc);
        CheckCoreKind(mem, pos, loc);
        len = (want + 31) / 32 * 32;
        cur = start;
        count = 0;
        init = true;
        serial = c.serial;
        blocks.clear();
    }

    // TPipe::InitBufPool(pool, len): len bytes of the position's memory.
    void FromPipe(uint32_t want, const Loc& loc)
    {
        CoreState& c = Core(loc);
        const int mi = static_cast<int>(PositionMem(pos, loc));
        if (c.static_live[mi])
            Fail(loc, Str("InitBufPool: a LocalMemAllocator of ", MemName(static_cast<Mem>(mi)), " is alive"));
        start = static_cast<uint32_t>(c.used[mi]);
        Begin(want, loc);
        // The devkit's own check of InitBufPool (CPU-debug TPipe::InitBufPool against bufferInitLen:
        // UB 192 KiB on 2201) is the whole memory, not InitBuffer's usable budget: the devkit's
        // tbufpool_management sample reserves all 192 KiB in one pool.
        const uint64_t limit = std::max<uint64_t>(c.budget[mi], c.mem[mi].size());
        if (c.used[mi] + len > limit)
            Fail(loc, Str("InitBufPool(len=", want, ") needs ", len, " B of ", MemName(mem), " but ", c.used[mi],
                          " B are already taken: total ", c.used[mi] + len, " B > the ", limit, " B of ", MemName(mem),
                          " on ", c.soc_name));
        c.used[mi] += len;
        c.allocs.push_back({mem, pos, 1, len, loc.line(), false});
        parent = nullptr;
    }

    // pool.InitBufPool(this, len): the next len bytes of the parent pool.
    void Sub(PoolCore& p, uint32_t want, const Loc& loc)
    {
        p.Check("InitBufPool", loc);
        if (capacity > p.capacity - p.count)
            Fail(loc, Str("InitBufPool: the sub-pool's bufIDSize ", capacity, " exceeds the ", p.capacity - p.count,
                          " buffer ids its parent has left"));
        start = p.cur;
        Begin(want, loc);
        SameMem(p, loc);
        if (p.cur + len > p.start + p.len)
            Fail(loc, Str("InitBufPool(len=", want, "): the parent pool has ", p.start + p.len - p.cur, " of its ",
                          p.len, " B left"));
        p.cur += len;
        parent = &p;
    }

    // InitBufPool(this, len, share): share's start address and length.
    void Shared(PoolCore& share, uint32_t want, PoolCore* par, const Loc& loc)
    {
        share.Check("InitBufPool (shareBuf)", loc);
        if (par != nullptr && capacity > par->capacity)
            Fail(loc, Str("InitBufPool: a shared sub-pool's bufIDSize ", capacity, " exceeds its parent's ",
                          par->capacity));
        start = share.start;
        Begin(want, loc);
        SameMem(share, loc);
        if (len > share.len)
            Fail(loc, Str("InitBufPool(len=", want, ", shareBuf): longer than the ", share.len, " B of the pool it "
                          "shares"));
        parent = par != nullptr ? par : share.parent;
    }

    void SameMem(const PoolCore& other, const Loc& loc) const
    {
        if (other.mem != mem)
            Fail(loc, Str("InitBufPool: a ", PosName(pos), " pool (", MemName(mem), ") inside a ", PosName(other.pos),
                          " pool (", MemName(other.mem), ")"));
    }

    void TakeIds(uint32_t n, const char* api, const Loc& loc)
    {
        if (count + n > capacity)
            Fail(loc, Str(api, ": the pool hands out at most bufIDSize = ", capacity, " buffers; ", count,
                          " are taken, ", n, " more asked for"));
        count += n;
    }

    // One block [addr, addr + bytes) of this pool for a queue slot or a TBuf.
    BlockInfo* NewBlock(AscendC::TPosition p, uint32_t addr, uint32_t want, const void* owner, bool queue,
                        const char* api, const Loc& loc)
    {
        Check(api, loc);
        CoreState& c = Core(loc);
        if (PositionMem(p, loc) != mem)
            Fail(loc, Str(api, ": a ", PosName(p), " buffer (", MemName(PositionMem(p, loc)), ") in a ", PosName(pos),
                          " pool (", MemName(mem), ")"));
        const uint32_t bytes = (want + 31) / 32 * 32;
        if (want == 0) Fail(loc, Str(api, ": len must be > 0"));
        if (addr % 32 != 0) Fail(loc, Str(api, ": address ", addr, " is not 32 B aligned"));
        if (addr < start || static_cast<uint64_t>(addr) + bytes > static_cast<uint64_t>(start) + len)
            Fail(loc, Str(api, ": ", MemName(mem), " bytes [", addr, ", ", static_cast<uint64_t>(addr) + bytes,
                          ") lie outside the pool's [", start, ", ", start + len, ")"));
        if (c.buffer_count + 1 > 64)
            Fail(loc, Str(api, ": a kernel may hold at most 64 buffers, ", c.buffer_count, " are already initialised"));
        BlockInfo b;
        b.mem = mem;
        b.pos = p;
        b.addr = addr;
        b.bytes = bytes;
        b.state = queue ? BlockInfo::State::Free : BlockInfo::State::Scratch;
        b.owner = owner;
        b.line = loc.line();
        c.blocks.push_back(b);
        ++c.buffer_count;
        for (PoolCore* q = this; q != nullptr; q = q->parent) q->blocks.push_back(&c.blocks.back());
        return &c.blocks.back();
    }

    template <class Q>
    void InitQueue(Q& que, uint32_t num, uint32_t want, const Loc& loc)
    {
        Check("TBufPool::InitBuffer", loc);
        if (num == 0 || want == 0) Fail(loc, "TBufPool::InitBuffer: num and len must be > 0");
        if (!que.slots_.empty() && que.serial_ == serial && que.slots_[0] != nullptr &&
            que.slots_[0]->state != BlockInfo::State::Dead)
            Fail(loc, "InitBuffer called twice for the same queue");
        const uint32_t rounded = (want + 31) / 32 * 32;
        if (static_cast<uint64_t>(cur) + static_cast<uint64_t>(rounded) * num > static_cast<uint64_t>(start) + len)
            Fail(loc, Str("TBufPool::InitBuffer(num=", num, ", len=", want, ") needs ", rounded * num, " B but the pool "
                          "has ", start + len - cur, " of its ", len, " B left"));
        TakeIds(num, "TBufPool::InitBuffer", loc);
        que.fifo_.clear();
        que.slots_.clear();
        for (uint32_t i = 0; i < num; ++i)
            que.slots_.push_back(NewBlock(Q::kPos, cur + i * rounded, rounded, &que, true, "TBufPool::InitBuffer", loc));
        que.serial_ = serial;
        cur += rounded * num;
    }

    template <class B>
    void InitTBuf(B& buf, AscendC::TPosition p, uint32_t want, const Loc& loc)
    {
        Check("TBufPool::InitBuffer", loc);
        if (buf.block_ != nullptr && buf.serial_ == serial && buf.block_->state != BlockInfo::State::Dead)
            Fail(loc, "InitBuffer called twice for the same TBuf");
        const uint32_t rounded = (want + 31) / 32 * 32;
        if (want == 0 || static_cast<uint64_t>(cur) + rounded > static_cast<uint64_t>(start) + len)
            Fail(loc, Str("TBufPool::InitBuffer(TBuf, len=", want, "): the pool has ", start + len - cur, " of its ", len,
                          " B left"));
        TakeIds(1, "TBufPool::InitBuffer", loc);
        buf.block_ = NewBlock(p, cur, rounded, &buf, false, "TBufPool::InitBuffer", loc);
        buf.serial_ = serial;
        cur += rounded;
    }

    void Reset(const Loc& loc)
    {
        Check("TBufPool::Reset", loc);
        CoreState& c = Core(loc);
        for (BlockInfo* b : blocks) {
            if (b->state == BlockInfo::State::Dead) continue;
            b->state = BlockInfo::State::Dead;
            if (c.buffer_count > 0) --c.buffer_count;
        }
        blocks.clear();
        cur = start;
        count = 0;
    }

    // Custom pools (EXTERN_IMPL_BUFPOOL).
    AscendC::TBufHandle Handle(uint32_t id, const Loc& loc)
    {
        Check("GetBufHandle", loc);
        if (id >= capacity)
            Fail(loc, Str("GetBufHandle(", id, "): the pool has BUFID_SIZE = ", capacity, " buffer ids"));
        return {this, id};
    }
    void SetCur(uint32_t addr, const Loc& loc)
    {
        Check("SetCurAddr", loc);
        if (addr < start || addr > start + len)
            Fail(loc, Str("SetCurAddr(", addr, "): outside the pool's [", start, ", ", start + len, "]"));
        cur = addr;
    }
    void SetCount(uint32_t n, const Loc& loc)
    {
        Check("SetCurBufSize", loc);
        if (n > capacity) Fail(loc, Str("SetCurBufSize(", n, "): the pool has BUFID_SIZE = ", capacity, " buffer ids"));
        count = n;
    }

    // que.InitStartBufHandle(h, num, len) / que.InitBufHandle(pool, i, h, addr, len).
    template <class Q>
    static void StartHandles(Q& que, const AscendC::TBufHandle& h, uint32_t num, const Loc& loc)
    {
        if (h.pool == nullptr) Fail(loc, "InitStartBufHandle: the handle comes from no pool (GetBufHandle)");
        h.pool->Check("InitStartBufHandle", loc);
        if (num == 0) Fail(loc, "InitStartBufHandle: num must be > 0");
        if (h.id + num > h.pool->capacity)
            Fail(loc, Str("InitStartBufHandle: buffer ids ", h.id, "..", h.id + num - 1, " exceed the pool's BUFID_SIZE ",
                          h.pool->capacity));
        que.fifo_.clear();
        que.slots_.assign(num, nullptr);
        que.ResetCursor();
        que.serial_ = h.pool->serial;
    }
};

}  // namespace megafuse_emu

namespace AscendC {

template <TPosition pos, uint32_t bufIDSize = 4>
class TBufPool {
    static_assert(bufIDSize >= 1 && bufIDSize <= 16, "TBufPool: bufIDSize is at most 16 (devkit)");
    static_assert(pos == TPosition::VECIN || pos == TPosition::VECOUT || pos == TPosition::VECCALC ||
                      pos == TPosition::A1 || pos == TPosition::B1 || pos == TPosition::C1,
                  "TBufPool: position VECIN, VECOUT, VECCALC, A1, B1 or C1 (devkit)");

public:
    TBufPool() = default;
    TBufPool(const TBufPool&) = delete;
    TBufPool& operator=(const TBufPool&) = delete;

    template <class Q>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        mf_pool_.InitQueue(que, num, len, loc);
        return true;
    }
    template <TPosition bufPos>
    bool InitBuffer(TBuf<bufPos>& buf, uint32_t len, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        mf_pool_.InitTBuf(buf, bufPos, len, loc);
        return true;
    }
    template <class P>
    bool InitBufPool(P& sub, uint32_t len, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        sub.MfEmuPool().Sub(mf_pool_, len, loc);
        return true;
    }
    template <class P, class S>
    bool InitBufPool(P& sub, uint32_t len, S& share, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        sub.MfEmuPool().Shared(share.MfEmuPool(), len, &mf_pool_, loc);
        return true;
    }
    void Reset(megafuse_emu::Loc loc = megafuse_emu::Loc::current()) { mf_pool_.Reset(loc); }

    megafuse_emu::PoolCore& MfEmuPool() { return mf_pool_; }  // emulator internals

private:
    megafuse_emu::PoolCore mf_pool_{pos, bufIDSize};
};

}  // namespace AscendC

#define EXTERN_IMPL_BUFPOOL(EXT_BUFPOOL, POSITION, BUFID_SIZE)                                                   \
public:                                                                                                          \
    ::megafuse_emu::PoolCore& MfEmuPool() { return mf_pool_; }                                                   \
    void Init() { mf_pool_.count = 0; }                                                                          \
    void Reset(::megafuse_emu::Loc loc = ::megafuse_emu::Loc::current()) { mf_pool_.Reset(loc); }               \
    ::AscendC::TBufHandle GetBufHandle(uint32_t id, ::megafuse_emu::Loc loc = ::megafuse_emu::Loc::current())   \
    {                                                                                                            \
        return mf_pool_.Handle(id, loc);                                                                         \
    }                                                                                                            \
    void SetCurAddr(uint32_t addr, ::megafuse_emu::Loc loc = ::megafuse_emu::Loc::current())                    \
    {                                                                                                            \
        mf_pool_.SetCur(addr, loc);                                                                              \
    }                                                                                                            \
    uint32_t GetCurAddr() const { return mf_pool_.cur; }                                                         \
    void SetCurBufSize(uint32_t n, ::megafuse_emu::Loc loc = ::megafuse_emu::Loc::current())                    \
    {                                                                                                            \
        mf_pool_.SetCount(n, loc);                                                                               \
    }                                                                                                            \
    uint32_t GetCurBufSize() const { return mf_pool_.count; }                                                    \
                                                                                                                 \
private:                                                                                                         \
    ::megafuse_emu::PoolCore mf_pool_{POSITION, BUFID_SIZE};                                                     \
                                                                                                                 \
public:
