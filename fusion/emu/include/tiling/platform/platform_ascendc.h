// Host platform queries of the devkit samples (platform_ascendc::PlatformAscendC): core counts
// and the library workspace size, for the SoC the program is built for (MEGAFUSE_EMU_HOST_SOC,
// from fusion/soc.py). GetLibApiWorkSpaceSize: the 16 MiB the device reserves in front of the
// user workspace (devkit GetUserWorkspace page; see ../../README.md).
#pragma once

#include <cstdint>

#include "megafuse_emu/runtime_api.h"

namespace platform_ascendc {

enum class SocVersion { ASCEND910B, ASCEND310P, RESERVED_VERSION };

class PlatformAscendC {
public:
    explicit PlatformAscendC(const MegafuseEmuSoc& soc) : soc_(soc) {}
    uint32_t GetCoreNumAic() const { return static_cast<uint32_t>(soc_.cube_cores); }
    uint32_t GetCoreNumAiv() const { return static_cast<uint32_t>(soc_.vector_cores); }
    uint32_t GetCoreNum() const { return soc_.arch == 2201 ? GetCoreNumAiv() : GetCoreNumAic(); }
    uint32_t GetLibApiWorkSpaceSize() const { return 16u * 1024u * 1024u; }
    SocVersion GetSocVersion() const { return soc_.arch == 2201 ? SocVersion::ASCEND910B : SocVersion::ASCEND310P; }
    const MegafuseEmuSoc& Soc() const { return soc_; }

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
