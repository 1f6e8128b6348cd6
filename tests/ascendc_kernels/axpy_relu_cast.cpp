// z = half(relu(alpha * float(x) + float(y))) for half x, y: widen with Cast into float TBuf
// scratch, compute in float, narrow with Cast(CAST_RINT). Each core's last tile may be
// shorter than a DataBlock multiple, so it moves with DataCopyPad.
#include "kernel_operator.h"

struct AxpyReluTiling {
    uint32_t totalLength;  // elements over all cores (a multiple of the core count)
    uint32_t tileLength;   // elements per full tile, a multiple of 16
    float alpha;
};

class KernelAxpyReluCast {
public:
    __aicore__ inline KernelAxpyReluCast() {}

    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const AxpyReluTiling& t)
    {
        coreLength = t.totalLength / AscendC::GetBlockNum();
        tileLength = t.tileLength;
        alpha = t.alpha;
        const uint32_t offset = coreLength * AscendC::GetBlockIdx();
        xGm.SetGlobalBuffer((__gm__ half*)x + offset, coreLength);
        yGm.SetGlobalBuffer((__gm__ half*)y + offset, coreLength);
        zGm.SetGlobalBuffer((__gm__ half*)z + offset, coreLength);
        pipe.InitBuffer(inQueueX, 1, tileLength * sizeof(half));
        pipe.InitBuffer(inQueueY, 1, tileLength * sizeof(half));
        pipe.InitBuffer(outQueueZ, 1, tileLength * sizeof(half));
        // float scratch rounded up to whole 64-lane repeats: Relu runs in the repeat form
        const uint32_t floatsPerRepeat = 256 / sizeof(float);
        const uint32_t scratch = (tileLength + floatsPerRepeat - 1) / floatsPerRepeat * floatsPerRepeat;
        pipe.InitBuffer(calcBufX, scratch * sizeof(float));
        pipe.InitBuffer(calcBufY, scratch * sizeof(float));
    }

    __aicore__ inline void Process()
    {
        for (uint32_t done = 0; done < coreLength; done += tileLength) {
            const uint32_t len = coreLength - done < tileLength ? coreLength - done : tileLength;
            CopyIn(done, len);
            Compute(len);
            CopyOut(done, len);
        }
    }

private:
    __aicore__ inline bool Aligned(uint32_t len) const { return len * sizeof(half) % 32 == 0; }

    __aicore__ inline void CopyIn(uint32_t offset, uint32_t len)
    {
        AscendC::LocalTensor<half> xLocal = inQueueX.AllocTensor<half>();
        AscendC::LocalTensor<half> yLocal = inQueueY.AllocTensor<half>();
        if (Aligned(len)) {
            AscendC::DataCopy(xLocal, xGm[offset], len);
            AscendC::DataCopy(yLocal, yGm[offset], len);
        } else {
            AscendC::DataCopyExtParams copyParams{1, static_cast<uint32_t>(len * sizeof(half)), 0, 0, 0};
            AscendC::DataCopyPadExtParams<half> padParams{false, 0, 0, 0};
            AscendC::DataCopyPad(xLocal, xGm[offset], copyParams, padParams);
            AscendC::DataCopyPad(yLocal, yGm[offset], copyParams, padParams);
        }
        inQueueX.EnQue(xLocal);
        inQueueY.EnQue(yLocal);
    }

    __aicore__ inline void Compute(uint32_t len)
    {
        AscendC::LocalTensor<half> xLocal = inQueueX.DeQue<half>();
        AscendC::LocalTensor<half> yLocal = inQueueY.DeQue<half>();
        AscendC::LocalTensor<half> zLocal = outQueueZ.AllocTensor<half>();
        AscendC::LocalTensor<float> xf = calcBufX.Get<float>();
        AscendC::LocalTensor<float> yf = calcBufY.Get<float>();

        AscendC::Cast(xf, xLocal, AscendC::RoundMode::CAST_NONE, len);
        AscendC::Cast(yf, yLocal, AscendC::RoundMode::CAST_NONE, len);
        AscendC::Axpy(yf, xf, alpha, len);  // yf += alpha * xf
        // repeat form: 64 float lanes per repeat, contiguous blocks and repeats
        const uint8_t repeats = static_cast<uint8_t>((len + 63) / 64);
        AscendC::Relu(yf, yf, 64, repeats, {1, 1, 8, 8});
        AscendC::Cast(zLocal, yf, AscendC::RoundMode::CAST_RINT, len);

        outQueueZ.EnQue(zLocal);
        inQueueX.FreeTensor(xLocal);
        inQueueY.FreeTensor(yLocal);
    }

    __aicore__ inline void CopyOut(uint32_t offset, uint32_t len)
    {
        AscendC::LocalTensor<half> zLocal = outQueueZ.DeQue<half>();
        if (Aligned(len)) {
            AscendC::DataCopy(zGm[offset], zLocal, len);
        } else {
            AscendC::DataCopyExtParams copyParams{1, static_cast<uint32_t>(len * sizeof(half)), 0, 0, 0};
            AscendC::DataCopyPad(zGm[offset], zLocal, copyParams);
        }
        outQueueZ.FreeTensor(zLocal);
    }

    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, 1> inQueueX, inQueueY;
    AscendC::TQue<AscendC::TPosition::VECOUT, 1> outQueueZ;
    AscendC::TBuf<AscendC::TPosition::VECCALC> calcBufX, calcBufY;
    AscendC::GlobalTensor<half> xGm, yGm, zGm;
    uint32_t coreLength = 0;
    uint32_t tileLength = 0;
    float alpha = 0;
};

extern "C" __global__ __aicore__ void axpy_relu_cast(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace,
                                                     GM_ADDR tiling)
{
    GET_TILING_DATA_WITH_STRUCT(AxpyReluTiling, tilingData, tiling);
    KernelAxpyReluCast op;
    op.Init(x, y, z, tilingData);
    op.Process();
}
