// LocalTensor (a view of a buffer in UB/L1/L0) and GlobalTensor (a view of GM), with the
// checks every API runs before touching memory.
#pragma once

#include "init_check.h"
#include "state.h"

namespace megafuse_emu {

// What a LocalTensor refers to. operator[] cannot take a source location (it has exactly
// one parameter), so an offset past the end only marks the view bad; the error is raised,
// with the line, by the first API that uses the view.
struct TensorRef {
    BlockInfo* block = nullptr;
    uint64_t serial = 0;  // CoreState::serial of the block run that issued it
    uint32_t gen = 0;
    uint64_t off = 0;  // bytes from the start of the buffer
    uint64_t len = 0;  // bytes visible from off
    bool bad = false;
    uint64_t bad_index = 0;
    uint64_t bad_size = 0;
};

// A memory the core of a MIX launch does not have (UB on the AIC, L1/L0/BT on an AIV): shared
// code may declare buffers there (pipe.h CheckCoreKind), but their data exists on the other core.
inline bool ForeignMem(const CoreState& c, Mem m) { return c.mix != nullptr && c.mem[static_cast<int>(m)].empty(); }

// Checks that a LocalTensor may be used now and that elements [first, first + count) of
// size esize exist in it; returns the address of element `first`.
inline uint8_t* LocalAccess(const TensorRef& r, size_t esize, uint64_t first, uint64_t count,
                            const char* api, const char* operand, const Loc& loc, const char* unit = "elements")
{
    CoreState& c = Core(loc);
    if (r.block == nullptr)
        Fail(loc, Str(api, ": ", operand, " is an uninitialized LocalTensor (not from AllocTensor, "
                      "DeQue or TBuf::Get)"));
    if (r.serial != c.serial)
        Fail(loc, Str(api, ": ", operand, " is a LocalTensor kept from another block's run"));
    if (r.bad)
        Fail(loc, Str(api, ": ", operand, " is a view at operator[] offset ", r.bad_index,
                      " past the end of a LocalTensor of ", r.bad_size, " elements"));
    const BlockInfo& b = *r.block;
    using S = BlockInfo::State;
    if (b.state == S::Dead)
        Fail(loc, Str(api, ": ", operand, " refers to a buffer released by TPipe Reset/Destroy"));
    if (b.state == S::Free)
        Fail(loc, Str(api, ": ", operand, " is used after FreeTensor (its ", PosName(b.pos),
                      " buffer may already hold other data)"));
    if (b.gen != r.gen)
        Fail(loc, Str(api, ": ", operand, " is a stale handle: its ", PosName(b.pos),
                      " buffer went through EnQue/DeQue or FreeTensor since this tensor was obtained "
                      "(use the tensor DeQue returned)"));
    if (b.state == S::Enqueued)
        Fail(loc, Str(api, ": ", operand, " is used after EnQue and before DeQue (the ",
                      PosName(b.pos), " buffer belongs to the queue's consumer)"));
    if (ForeignMem(c, b.mem)) {
        const bool ub = b.mem == Mem::UB;
        Fail(loc, Str(api, ": ", operand, " is a ", PosName(b.pos), " tensor in ", MemName(b.mem), ", which ",
                      c.kind == CoreKind::Cube ? "the AIC" : "an AIV", " of a MIX kernel does not have (its "
                      "InitBuffer at line ", b.line, " only reserved addresses, as in the devkit's build for this "
                      "core type): ", ub ? "the vector instructions and UB copies run on the AIVs; guard them with "
                      "`if ASCEND_IS_AIV { ... }`" : "the cube instructions and L1/L0 copies run on the AIC; guard "
                      "them with `if ASCEND_IS_AIC { ... }`"));
    }
    const uint64_t elems = r.len / esize;
    if (first + count > elems)
        Fail(loc, Str(api, " accesses ", operand, " ", unit, " [", first, ", ", first + count,
                      ") but the LocalTensor holds ", elems, " ", unit));
    return c.MemPtr(b.mem, b.addr) + r.off + first * esize;
}

// Byte-granular form for copies whose layout is given in bytes (DataCopyPad, ND2NZ).
inline uint8_t* LocalAccessBytes(const TensorRef& r, uint64_t first, uint64_t bytes, const char* api,
                                 const char* operand, const Loc& loc)
{
    return LocalAccess(r, 1, first, bytes, api, operand, loc, "bytes");
}

inline uint64_t LocalAddr(const TensorRef& r) { return r.block->addr + r.off; }

inline void CheckLocalAlign(const TensorRef& r, uint64_t align, const char* api, const char* operand,
                            const Loc& loc)
{
    if (LocalAddr(r) % align != 0)
        Fail(loc, Str(api, ": ", operand, " starts at ", MemName(r.block->mem), " byte address ",
                      LocalAddr(r), ", which is not ", align, "-byte aligned"));
}

inline void CheckMem(const TensorRef& r, Mem want, const char* api, const char* operand, const Loc& loc)
{
    LocalAccess(r, 1, 0, 0, api, operand, loc);  // a usable tensor first
    if (r.block->mem != want)
        Fail(loc, Str(api, ": ", operand, " must be in ", MemName(want), " but is a ",
                      PosName(r.block->pos), " tensor in ", MemName(r.block->mem)));
}

// Checks that bytes [p, p + n) lie inside the kernel argument buffer that `origin` (the
// pointer given to SetGlobalBuffer, or the tiling pointer) points into.
inline void CheckGmRegion(const uint8_t* origin, const uint8_t* p, uint64_t n, const char* api, const Loc& loc,
                          const std::string& where = "")
{
    for (const GmRegion& r : Core(loc).gm) {
        if (origin < r.base || origin >= r.base + r.bytes) continue;
        if (p >= r.base && p + n <= r.base + r.bytes) return;
        const auto first = static_cast<int64_t>(p - r.base);
        Fail(loc, Str(api, ": GM bytes [", first, ", ", first + static_cast<int64_t>(n), ") of kernel argument ",
                      r.arg, " run outside its ", r.bytes, "-byte buffer", where));
    }
    Fail(loc, Str(api, ": GM address ", static_cast<const void*>(origin),
                  " is outside every kernel argument buffer", where));
}

}  // namespace megafuse_emu

namespace megafuse_emu {
// A static tensor at a fixed address (static_alloc.h).
TensorRef StaticTensorRef(AscendC::TPosition pos, uint64_t addr, uint64_t bytes, const char* api, const Loc& loc);
}  // namespace megafuse_emu

namespace AscendC {

// A tensor's logical shape for the advanced APIs that read it (devkit ShapeInfo /
// LocalTensor::SetShapeInfo): up to 8 dims and a data format; it changes no access check.
enum class DataFormat : uint8_t { ND = 0, NZ, NCHW, NC1HWC0, NHWC, NCDHW, NDC1HWC0, FRACTAL_Z_3D };
struct ShapeInfo {
    static constexpr int kMaxDims = 8;
    ShapeInfo() {}
    ShapeInfo(const uint8_t inputShapeDim, const uint32_t inputShape[], const DataFormat inputFormat = DataFormat::ND)
        : shapeDim(inputShapeDim), originalShapeDim(inputShapeDim), dataFormat(inputFormat)
    {
        for (int i = 0; i < inputShapeDim && i < kMaxDims; ++i) shape[i] = originalShape[i] = inputShape[i];
    }
    ShapeInfo(const uint8_t inputShapeDim, const uint32_t inputShape[], const uint8_t inputOriginalShapeDim,
              const uint32_t inputOriginalShape[], const DataFormat inputFormat)
        : shapeDim(inputShapeDim), originalShapeDim(inputOriginalShapeDim), dataFormat(inputFormat)
    {
        for (int i = 0; i < inputShapeDim && i < kMaxDims; ++i) shape[i] = inputShape[i];
        for (int i = 0; i < inputOriginalShapeDim && i < kMaxDims; ++i) originalShape[i] = inputOriginalShape[i];
    }
    uint8_t shapeDim = 0;
    uint8_t originalShapeDim = 0;
    uint32_t shape[kMaxDims] = {};
    uint32_t originalShape[kMaxDims] = {};
    DataFormat dataFormat = DataFormat::ND;
};

template <typename T>
class LocalTensor {
public:
    using PrimType = T;
    LocalTensor() = default;
    // dst = src0 + src1 and the like (devkit operator overloads; symbol_override.h): the vector op
    // runs at the assignment, over dst.GetSize() elements.
    template <typename E, typename = std::enable_if_t<E::kSymbolOverride>>
    LocalTensor& operator=(const E& expr)
    {
        expr.Run(*this);
        return *this;
    }

    void SetShapeInfo(const ShapeInfo& info) { shape_info_ = info; }
    ShapeInfo GetShapeInfo() const { return shape_info_; }
    ShapeInfo shape_info_;  // emulator internals

    // Static-tensor programming: tileSize elements at byte address addr of pos's memory.
    LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
        : ref_(megafuse_emu::StaticTensorRef(pos, addr, static_cast<uint64_t>(tileSize) * sizeof(T),
                                             "LocalTensor(TPosition, addr, tileSize)", loc))
    {}

    T GetValue(uint32_t index, megafuse_emu::Loc loc = megafuse_emu::Loc::current()) const
    {
        megafuse_emu::CheckMem(ref_, megafuse_emu::Mem::UB, "GetValue", "tensor", loc);
        T v;
        const uint8_t* p = megafuse_emu::LocalAccess(ref_, sizeof(T), index, 1, "GetValue", "tensor", loc);
        megafuse_emu::CheckWritten(p, sizeof(T), "GetValue", "tensor", loc);
        std::memcpy(&v, p, sizeof(T));
        return v;
    }

    void SetValue(uint32_t index, const T& value, megafuse_emu::Loc loc = megafuse_emu::Loc::current()) const
    {
        megafuse_emu::CheckMem(ref_, megafuse_emu::Mem::UB, "SetValue", "tensor", loc);
        uint8_t* p = megafuse_emu::LocalAccess(ref_, sizeof(T), index, 1, "SetValue", "tensor", loc);
        std::memcpy(p, &value, sizeof(T));
        megafuse_emu::MarkWritten(p, sizeof(T));
    }

    LocalTensor operator[](uint32_t offset) const
    {
        LocalTensor v = *this;
        if (ref_.bad) return v;
        const uint64_t size = GetSize();
        if (offset > size) {
            v.ref_.bad = true;
            v.ref_.bad_index = offset;
            v.ref_.bad_size = size;
            return v;
        }
        v.ref_.off += static_cast<uint64_t>(offset) * sizeof(T);
        v.ref_.len -= static_cast<uint64_t>(offset) * sizeof(T);
        return v;
    }

    uint32_t GetSize() const { return static_cast<uint32_t>(ref_.len / sizeof(T)); }

    // The view's byte address in its on-chip memory (devkit GetPhyAddr), 0 for an unset tensor.
    uint64_t GetPhyAddr() const { return ref_.block ? megafuse_emu::LocalAddr(ref_) : 0; }

    // Shrinks or regrows the view inside its buffer.
    void SetSize(uint32_t size, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        if (ref_.block == nullptr) megafuse_emu::Fail(loc, "SetSize on an uninitialized LocalTensor");
        if (ref_.off + static_cast<uint64_t>(size) * sizeof(T) > ref_.block->bytes)
            megafuse_emu::Fail(loc, megafuse_emu::Str("SetSize(", size, ") exceeds the ", ref_.block->bytes,
                                                      "-byte buffer"));
        ref_.len = static_cast<uint64_t>(size) * sizeof(T);
    }

    template <typename U>
    LocalTensor<U> ReinterpretCast() const
    {
        LocalTensor<U> v;
        v.ref_ = ref_;
        return v;
    }

    TPosition GetPosition() const { return ref_.block ? ref_.block->pos : TPosition::MAX; }

    megafuse_emu::TensorRef ref_;  // emulator internals
};

// L2 cache policy of a GlobalTensor's accesses (devkit SetL2CacheHint / CacheMode). The host
// has no L2 model, so the hint is kept (GetL2CacheHint) and changes no result or counter.
enum class CacheMode : uint8_t { CACHE_MODE_NORMAL = 0, CACHE_MODE_DISABLE, CACHE_MODE_LAST, CACHE_MODE_PERSISTENT };
enum class CacheRwMode : uint8_t { READ = 1, WRITE = 2, RW = 3 };

template <typename T>
class GlobalTensor {
public:
    template <CacheRwMode rwMode = CacheRwMode::RW>
    void SetL2CacheHint(CacheMode mode) { l2_hint_ = mode; }
    CacheMode GetL2CacheHint() const { return l2_hint_; }
    CacheMode l2_hint_ = CacheMode::CACHE_MODE_NORMAL;  // emulator internals

    using PrimType = T;
    GlobalTensor() = default;

    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize,
                         megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        set_line_ = loc.line();
        ptr_ = origin_ = buffer;
        off_ = 0;
        size_ = bufferSize;
        set_ = true;
        bad_ = false;
    }

    // Without a size the view extends to the end of the kernel argument buffer holding it.
    void SetGlobalBuffer(__gm__ T* buffer, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        set_line_ = loc.line();
        ptr_ = origin_ = buffer;
        off_ = 0;
        set_ = true;
        bad_ = false;
        size_ = 0;
        const auto* p = reinterpret_cast<const uint8_t*>(buffer);
        for (const megafuse_emu::GmRegion& r : megafuse_emu::Core(loc).gm)
            if (p >= r.base && p < r.base + r.bytes) size_ = static_cast<uint64_t>(r.base + r.bytes - p) / sizeof(T);
    }

    T GetValue(uint64_t offset, megafuse_emu::Loc loc = megafuse_emu::Loc::current()) const
    {
        T v;
        std::memcpy(&v, Access(offset, 1, "GlobalTensor::GetValue", loc), sizeof(T));
        megafuse_emu::Count(megafuse_emu::GM_SCALAR_READS);
        return v;
    }

    void SetValue(uint64_t offset, const T& value, megafuse_emu::Loc loc = megafuse_emu::Loc::current()) const
    {
        std::memcpy(Access(offset, 1, "GlobalTensor::SetValue", loc), &value, sizeof(T));
        megafuse_emu::Count(megafuse_emu::GM_SCALAR_WRITES);
    }

    GlobalTensor operator[](uint64_t offset) const
    {
        GlobalTensor v = *this;
        if (bad_ || !set_) return v;
        if (offset > size_) {
            v.bad_ = true;
            v.bad_index_ = off_ + offset;
            v.bad_size_ = off_ + size_;
            return v;
        }
        v.ptr_ += offset;
        v.off_ += offset;
        v.size_ -= offset;
        return v;
    }

    uint64_t GetSize() const { return size_; }
    __gm__ T* GetPhyAddr() const { return ptr_; }
    // The address of element `offset` (devkit GetPhyAddr(offset)); an address only, not checked.
    __gm__ T* GetPhyAddr(uint64_t offset) const { return ptr_ + offset; }

    // Checks elements [first, first + count) against SetGlobalBuffer's size and the kernel's
    // argument buffers; returns the address of element `first`.
    uint8_t* Access(uint64_t first, uint64_t count, const char* api, const megafuse_emu::Loc& loc) const
    {
        return AccessBytes(first * sizeof(T), count * sizeof(T), api, loc);
    }

    // Byte-granular form for DataCopyPad, whose GM strides are in bytes.
    uint8_t* AccessBytes(uint64_t first, uint64_t bytes, const char* api, const megafuse_emu::Loc& loc) const
    {
        using megafuse_emu::Fail;
        using megafuse_emu::Str;
        if (!set_) Fail(loc, Str(api, ": GlobalTensor used before SetGlobalBuffer"));
        if (bad_)
            Fail(loc, Str(api, ": GlobalTensor view at operator[] offset ", bad_index_,
                          " is past its SetGlobalBuffer size ", bad_size_));
        if (first + bytes > size_ * sizeof(T))
            Fail(loc, Str(api, " accesses GlobalTensor elements [", off_ + first / sizeof(T), ", ",
                          off_ + (first + bytes + sizeof(T) - 1) / sizeof(T), ") past its SetGlobalBuffer size ",
                          off_ + size_));
        if (reinterpret_cast<uintptr_t>(ptr_) % sizeof(T) != 0)
            Fail(loc, Str(api, ": GM address is not aligned to sizeof(", megafuse_emu::TypeName<T>(), ")"));
        auto* p = reinterpret_cast<uint8_t*>(ptr_) + first;
        megafuse_emu::CheckGmRegion(reinterpret_cast<const uint8_t*>(origin_), p, bytes, api, loc,
                                    Str(" (GlobalTensor set at line ", set_line_, ")"));
        return p;
    }

    T* ptr_ = nullptr;  // emulator internals
    T* origin_ = nullptr;  // SetGlobalBuffer's pointer: accesses stay in its argument buffer
    uint64_t off_ = 0;     // elements from origin_ (for messages)
    uint32_t set_line_ = 0;
    uint64_t size_ = 0;
    bool set_ = false;
    bool bad_ = false;
    uint64_t bad_index_ = 0;
    uint64_t bad_size_ = 0;
};

}  // namespace AscendC
