// y = x * Sigmoid(x) (float), TPipe style: the pipe is created in the kernel and reached from
// the operator class through GetTPipePtr; one TBuf holds both the sigmoid result and the
// Sigmoid scratch space, carved with TBuf::GetWithOffset; the tail tile (blockLength not a
// multiple of tileLength, nor of 8 elements) moves with DataCopyPad.
#include "kernel_operator.h"

struct SwishTiling {
    uint32_t blockLength;  // elements per block
    uint32_t tileLength;   // elements per full tile (a multiple of 8)
};
REGISTER_TILING_DEFAULT(SwishTiling);

constexpr uint32_t kTmpBytes = 1024;  // Sigmoid scratch

class KernelSwish {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const SwishTiling& t)
    {
        blockLength = t.blockLength;
        tileLength = t.tileLength;
        const uint64_t base = AscendC::GetBlockIdx() * static_cast<uint64_t>(blockLength);
        xGm.SetGlobalBuffer((__gm__ float*)x + base, blockLength);
        yGm.SetGlobalBuffer((__gm__ float*)y + base, blockLength);
        AscendC::TPipe* pipe = AscendC::GetTPipePtr();
        pipe->InitBuffer(inQueue, 2, tileLength * sizeof(float));
        pipe->InitBuffer(outQueue, 2, tileLength * sizeof(float));
        pipe->InitBuffer(calcBuf, tileLength * sizeof(float) + kTmpBytes);
    }

    __aicore__ inline void Process()
    {
        for (uint32_t done = 0; done < blockLength; done += tileLength) {
            const uint32_t len = blockLength - done < tileLength ? blockLength - done : tileLength;
            CopyIn(done, len);
            Compute(len);
            CopyOut(done, len);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t off, uint32_t len)
    {
        AscendC::LocalTensor<float> x = inQueue.AllocTensor<float>();
        AscendC::DataCopyExtParams p{1, len * static_cast<uint32_t>(sizeof(float)), 0, 0, 0};
        AscendC::DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
        AscendC::DataCopyPad(x, xGm[off], p, pad);
        inQueue.EnQue(x);
    }

    __aicore__ inline void Compute(uint32_t len)
    {
        AscendC::LocalTensor<float> x = inQueue.DeQue<float>();
        AscendC::LocalTensor<float> y = outQueue.AllocTensor<float>();
        AscendC::LocalTensor<float> sig = calcBuf.GetWithOffset<float>(tileLength, 0);
        AscendC::LocalTensor<uint8_t> tmp = calcBuf.GetWithOffset<uint8_t>(kTmpBytes, tileLength * sizeof(float));
        AscendC::Sigmoid(sig, x, tmp, len);
        AscendC::Mul(y, x, sig, len);
        outQueue.EnQue(y);
        inQueue.FreeTensor(x);
    }

    __aicore__ inline void CopyOut(uint32_t off, uint32_t len)
    {
        AscendC::LocalTensor<float> y = outQueue.DeQue<float>();
        AscendC::DataCopyExtParams p{1, len * static_cast<uint32_t>(sizeof(float)), 0, 0, 0};
        AscendC::DataCopyPad(yGm[off], y, p);
        outQueue.FreeTensor(y);
    }

    AscendC::TQue<AscendC::TPosition::VECIN, 2> inQueue;
    AscendC::TQue<AscendC::TPosition::VECOUT, 2> outQueue;
    AscendC::TBuf<AscendC::TPosition::VECCALC> calcBuf;
    AscendC::GlobalTensor<float> xGm, yGm;
    uint32_t blockLength = 0, tileLength = 0;
};

extern "C" __global__ __vector__ void swish_tbuf(GM_ADDR x, GM_ADDR y, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    AscendC::TPipe pipe;
    KernelSwish op;
    op.Init(x, y, t);
    op.Process();
}
