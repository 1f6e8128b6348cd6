// The older DataCopyPad prototypes (devkit "DataCopyPad" page): DataCopyParams (blockLen in
// bytes, uint16 fields; GM-side stride in bytes, UB-side stride in DataBlocks) and
// DataCopyPadParams (paddingValue as uint64_t bits, its low sizeof(T) bytes used). Same
// semantics as the DataCopyExtParams forms in data_copy.h, to which they forward.
#pragma once

#include "data_copy.h"

namespace AscendC {

struct DataCopyPadParams {
    DataCopyPadParams() {}
    DataCopyPadParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue,
                      const uint64_t padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue)
    {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
};

template <typename T>
void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                 const DataCopyPadParams& pad, megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    static_assert(sizeof(T) <= sizeof(uint64_t), "DataCopyPad element type");
    T value;
    std::memcpy(&value, &pad.paddingValue, sizeof(T));  // the low bytes (little-endian host)
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0),
                DataCopyPadExtParams<T>(pad.isPad, pad.leftPadding, pad.rightPadding, value), loc);
}

template <typename T>
void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p,
                 megafuse_emu::Loc loc = megafuse_emu::Loc::current())
{
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0), loc);
}

}  // namespace AscendC
