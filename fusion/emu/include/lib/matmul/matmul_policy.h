// The Matmul's last two template parameters (devkit matmul_intf / Matmul模板参数 page):
// MM_CB = MatmulCallBackFunc<DataCopyOut, CopyA1, CopyB1> (user copy functions; nullptr = the
// library's own; CopyA1 / CopyB1 are emulated in matmul_intf.h, DataCopyOut is refused) and MM_POLICY, a template `template <const auto& CFG, typename...> class` from
// AscendC::Impl::Detail. Emulated policies: MatmulPolicy (default) and NBuffer33MatmulPolicy
// (a data path of the MDL template: same result; Iterate is not allowed with it, as in the
// devkit), TrianUpperMatmulPolicy / TrianLowerMatmulPolicy (IterateAll computes only the base
// blocks on or above / on or below the block diagonal of the single-core C, the devkit's
// matmul_triangle sample; the other blocks of C are left as they were). Other policies fail to
// compile naming the missing name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace AscendC {

template <auto DataCopyOut = nullptr, auto CopyA1 = nullptr, auto CopyB1 = nullptr>
struct MatmulCallBackFunc {
    static constexpr bool kCopyOut = !std::is_same_v<decltype(DataCopyOut), std::nullptr_t>;
    static constexpr bool kCopyA1 = !std::is_same_v<decltype(CopyA1), std::nullptr_t>;
    static constexpr bool kCopyB1 = !std::is_same_v<decltype(CopyB1), std::nullptr_t>;
    static constexpr auto CopyA1Ptr = CopyA1;
    static constexpr auto CopyB1Ptr = CopyB1;
};

namespace Impl {
constexpr int32_t QUEUE_DEPTH = 1;  // the matmul library's queue depth (devkit matmul config utils)
}

// The L0C (CO1) type of a Matmul whose inputs are T: float for half / bfloat16_t / float, int32_t
// for int8_t and int4b_t.
struct int4b_t;
template <typename T>
struct GetMmDstType {
    using Type = std::conditional_t<std::is_same_v<T, int8_t> || std::is_same_v<T, int4b_t>, int32_t, float>;
};

namespace Impl::Detail {

enum class EmuPolicy { Default, NBuffer33, TrianUpper, TrianLower };

template <const auto& CFG = CFG_NORM, typename... Rest>
struct MatmulPolicy {
    static constexpr EmuPolicy kEmuPolicy = EmuPolicy::Default;
};
template <const auto& CFG = CFG_NORM, typename... Rest>
struct NBuffer33MatmulPolicy {
    static constexpr EmuPolicy kEmuPolicy = EmuPolicy::NBuffer33;
};
template <const auto& CFG = CFG_NORM, typename... Rest>
struct TrianUpperMatmulPolicy {
    static constexpr EmuPolicy kEmuPolicy = EmuPolicy::TrianUpper;
};
template <const auto& CFG = CFG_NORM, typename... Rest>
struct TrianLowerMatmulPolicy {
    static constexpr EmuPolicy kEmuPolicy = EmuPolicy::TrianLower;
};

}  // namespace Impl::Detail
}  // namespace AscendC
