// Host platform queries of the devkit samples (platform_ascendc::PlatformAscendC): core counts
// and the library workspace size, for the SoC the program is built for (MEGAFUSE_EMU_HOST_SOC,
// from fusion/soc.py). GetLibApiWorkSpaceSize: the 16 MiB the device reserves in front of the
// user workspace (devkit GetUserWorkspace page; see ../../README.md).
#pragma once

#include <cstdint>

#include "megafuse_emu/runtime_api.h"

namespace platform_ascendc {

enum class SocVersion { ASCEND910B, ASCEND310P, RESERVED_VERSION };
// devkit GetCoreMemSize page: the memory kinds, in its order.
enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };

class PlatformAscendC {
public:
    explicit PlatformAscendC(const MegafuseEmuSoc& soc) : soc_(soc) {}
    uint32_t GetCoreNumAic() const { return static_cast<uint32_t>(soc_.cube_cores); }
    uint32_t GetCoreNumAiv() const { return static_cast<uint32_t>(soc_.vector_cores); }
    uint32_t GetCoreNum() const { return soc_.arch == 2201 ? GetCoreNumAiv() : GetCoreNumAic(); }
    uint32_t GetLibApiWorkSpaceSize() const { return 16u * 1024u * 1024u; }
    SocVersion GetSocVersion() const { return soc_.arch == 2201 ? SocVersion::ASCEND910B : SocVersion::ASCEND310P; }
    const MegafuseEmuSoc& Soc() const { return soc_; }
    // Per-core memory sizes in bytes from the SoC table (fusion/core/soc.py); UB is the physical
    // size. L2 / HBM are not in the table: 0.
    void GetCoreMemSize(const CoreMemType& t, uint64_t& size) const
    {
        size = t == CoreMemType::L0_A ? soc_.l0a_bytes : t == CoreMemType::L0_B ? soc_.l0b_bytes
             : t == CoreMemType::L0_C ? soc_.l0c_bytes : t == CoreMemType::L1   ? soc_.l1_bytes
             : t == CoreMemType::UB   ? soc_.ub_bytes  : 0;
    }

private:
    MegafuseEmuSoc soc_;
};

class PlatformAscendCManager {
public:
    static PlatformAscendC* GetInstance(const char* = nullptr)
    {
#ifdef MEGAFUSE_EMU_HOST_SOC
        static PlatformAscendC p(MegafuseEmuSoc MEGAFUSE_EMU_HOST_SOC);
        return &p;
#else
        return nullptr;
#endif
    }
};

}  // namespace platform_ascendc
