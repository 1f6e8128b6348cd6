// ListTensorDesc / TensorDesc (devkit ListTensorDesc and TensorDesc pages,
// kernel_operator_list_tensor_intf.h): a GM block describing a list of tensors, read on the
// kernel side. Layout (as the devkit sample's host code writes it): uint64 ptrOffset (byte
// offset of the pointer array), then per tensor one uint64 holding dim (low 32 bits) and index
// (high 32 bits) followed by dim uint64 shape values, then at ptrOffset one data pointer per
// tensor. length / shapeSize, when given, are checked (the devkit: "only for checking").
// Every read of the block is checked against the argument buffer holding it. A data pointer
// becomes a GM buffer of this core when it points into an aclrtMalloc block of the program
// (its whole block), so the kernel's accesses through it stay bounds-checked; anything else
// is refused.
#pragma once

#include <cstring>
#include <vector>

#include "launch.h"
#include "tensor.h"

namespace megafuse_emu {

inline uint64_t ReadGmU64(const uint8_t* origin, const uint8_t* p, const char* api, const Loc& loc)
{
    CheckGmRegion(origin, p, 8, api, loc, " (the ListTensorDesc block)");
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// Makes p usable as GM on this core: inside a known buffer, or inside an aclrtMalloc block.
inline void AdoptDevicePointer(const void* p, const char* api, const Loc& loc)
{
    CoreState& c = Core(loc);
    const auto* q = static_cast<const uint8_t*>(p);
    for (const GmRegion& r : c.gm)
        if (q >= r.base && q < r.base + r.bytes) return;
    uint64_t bytes = 0;
    bool device = false;
    const uint8_t* base = FindDeviceAlloc(p, &bytes, &device);
    if (base == nullptr || !device)
        Fail(loc, Str(api, ": data pointer ", p, " points into no kernel argument and no aclrtMalloc block"));
    c.gm.push_back(GmRegion{base, bytes, -1});
}

}  // namespace megafuse_emu

namespace AscendC {

template <class T>
class TensorDesc {
public:
    void SetShapeAddr(uint64_t* shapePtr) { shape_ = shapePtr; }
    uint64_t GetDim() const { return dim_; }
    uint64_t GetIndex() const { return index_; }
    uint64_t GetShape(uint32_t offset, megafuse_emu::Loc loc = megafuse_emu::Loc::current()) const
    {
        if (shape_ == nullptr) megafuse_emu::Fail(loc, "TensorDesc::GetShape before SetShapeAddr / GetDesc");
        if (offset >= dim_)
            megafuse_emu::Fail(loc, megafuse_emu::Str("TensorDesc::GetShape(", offset, "): the tensor has ", dim_, " dims"));
        return shape_[offset];
    }
    __gm__ T* GetDataPtr() const { return data_; }
    GlobalTensor<T> GetDataObj(megafuse_emu::Loc loc = megafuse_emu::Loc::current()) const
    {
        GlobalTensor<T> g;
        g.SetGlobalBuffer(data_, loc);
        return g;
    }

    uint64_t* shape_ = nullptr;  // emulator internals
    uint64_t dim_ = 0, index_ = 0;
    __gm__ T* data_ = nullptr;
};

class ListTensorDesc {
public:
    ListTensorDesc() = default;
    ListTensorDesc(__gm__ void* data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff,
                   megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        Init(data, length, shapeSize, loc);
    }

    void Init(__gm__ void* data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff,
              megafuse_emu::Loc loc = megafuse_emu::Loc::current())
    {
        using megafuse_emu::Fail;
        using megafuse_emu::Str;
        const char* api = "ListTensorDesc";
        base_ = static_cast<const uint8_t*>(data);
        if (base_ == nullptr) Fail(loc, "ListTensorDesc: the data pointer is null");
        const uint64_t ptr_offset = megafuse_emu::ReadGmU64(base_, base_, api, loc);
        if (ptr_offset < 8 || ptr_offset % 8 != 0)
            Fail(loc, Str("ListTensorDesc: ptrOffset ", ptr_offset, " is not a multiple of 8 past the header"));
        descs_.clear();
        uint64_t off = 8;
        while (off < ptr_offset) {
            const uint64_t word = megafuse_emu::ReadGmU64(base_, base_ + off, api, loc);
            descs_.push_back(off);
            off += 8 * (1 + (word & 0xffffffffu));
        }
        if (off != ptr_offset)
            Fail(loc, Str("ListTensorDesc: the tensor descriptions end at byte ", off, ", not at ptrOffset ", ptr_offset));
        ptrs_ = base_ + ptr_offset;
        const uint64_t end = ptr_offset + 8 * descs_.size();
        megafuse_emu::CheckGmRegion(base_, base_, end, api, loc, " (the ListTensorDesc block)");
        if (length != 0xffffffffu && length < end)
            Fail(loc, Str("ListTensorDesc: length ", length, " B, but the block takes ", end, " B"));
        if (shapeSize != 0xffffffffu && shapeSize != descs_.size())
            Fail(loc, Str("ListTensorDesc: shapeSize ", shapeSize, ", but the block holds ", descs_.size(), " tensors"));
    }

    uint32_t GetSize() const { return static_cast<uint32_t>(descs_.size()); }

    template <class T>
    __gm__ T* GetDataPtr(uint32_t index, megafuse_emu::Loc loc = megafuse_emu::Loc::current()) const
    {
        Index(index, "ListTensorDesc::GetDataPtr", loc);
        const uint64_t v = megafuse_emu::ReadGmU64(base_, ptrs_ + 8 * index, "ListTensorDesc::GetDataPtr", loc);
        auto* p = reinterpret_cast<__gm__ T*>(static_cast<uintptr_t>(v));
        if (p != nullptr) megafuse_emu::AdoptDevicePointer(p, "ListTensorDesc::GetDataPtr", loc);
        return p;
    }

    template <class T>
    void GetDesc(TensorDesc<T>& desc, uint32_t index, megafuse_emu::Loc loc = megafuse_emu::Loc::current()) const
    {
        Index(index, "ListTensorDesc::GetDesc", loc);
        if (desc.shape_ == nullptr) megafuse_emu::Fail(loc, "ListTensorDesc::GetDesc: call desc.SetShapeAddr first");
        const uint8_t* d = base_ + descs_[index];
        const uint64_t word = megafuse_emu::ReadGmU64(base_, d, "ListTensorDesc::GetDesc", loc);
        desc.dim_ = word & 0xffffffffu;
        desc.index_ = word >> 32;
        for (uint64_t i = 0; i < desc.dim_; ++i)
            desc.shape_[i] = megafuse_emu::ReadGmU64(base_, d + 8 * (1 + i), "ListTensorDesc::GetDesc", loc);
        desc.data_ = GetDataPtr<T>(index, loc);
    }

private:
    void Index(uint32_t index, const char* api, const megafuse_emu::Loc& loc) const
    {
        if (base_ == nullptr) megafuse_emu::Fail(loc, megafuse_emu::Str(api, " before Init"));
        if (index >= descs_.size())
            megafuse_emu::Fail(loc, megafuse_emu::Str(api, "(", index, "): the list holds ", descs_.size(), " tensors"));
    }

    const uint8_t* base_ = nullptr;
    const uint8_t* ptrs_ = nullptr;
    std::vector<uint64_t> descs_;  // byte offset of each tensor's description
};

}  // namespace AscendC
