// Coordinates and layouts of the basic API (devkit kernel_operator_coord.h / _layout.h facts):
// Coord, Shape, Stride are Std::tuple aliases; MakeCoord / MakeShape / MakeStride build them;
// Layout<Shape, Stride> maps a coordinate to an element offset, Crd2Idx(coord, shape, stride)
// = the sum of coord_i * stride_i, recursing into nested tuples (hierarchical modes).
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "megafuse_emu/adv_std.h"

namespace AscendC {

template <typename... Ts>
using Coord = Std::tuple<Ts...>;
template <typename... Ts>
using Shape = Std::tuple<Ts...>;
template <typename... Ts>
using Stride = Std::tuple<Ts...>;

template <typename... Ts>
constexpr Coord<Ts...> MakeCoord(const Ts&... t) { return Coord<Ts...>(t...); }
template <typename... Ts>
constexpr Shape<Ts...> MakeShape(const Ts&... t) { return Shape<Ts...>(t...); }
template <typename... Ts>
constexpr Stride<Ts...> MakeStride(const Ts&... t) { return Stride<Ts...>(t...); }

namespace coord_detail {
template <typename T>
struct IsTuple : std::false_type {};
template <typename... Ts>
struct IsTuple<std::tuple<Ts...>> : std::true_type {};
}  // namespace coord_detail

template <typename C, typename S, typename D>
constexpr auto Crd2Idx(const C& coord, const S& shape, const D& stride)
{
    if constexpr (coord_detail::IsTuple<C>::value) {
        static_assert(std::tuple_size_v<C> == std::tuple_size_v<D>, "Crd2Idx: the coordinate and the stride differ in rank");
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
            return (static_cast<long long>(0) + ... + static_cast<long long>(
                Crd2Idx(std::get<I>(coord), std::get<I>(shape), std::get<I>(stride))));
        }(std::make_index_sequence<std::tuple_size_v<C>>{});
    } else {
        (void)shape;
        return static_cast<long long>(coord) * static_cast<long long>(stride);
    }
}

template <typename S, typename D>
class Layout {
public:
    constexpr Layout(const S& s = {}, const D& d = {}) : shape_(s), stride_(d) {}
    constexpr decltype(auto) layout() { return *this; }
    constexpr decltype(auto) layout() const { return *this; }
    constexpr const S& GetShape() const { return shape_; }
    constexpr const D& GetStride() const { return stride_; }
    template <typename C>
    constexpr auto operator()(const C& coord) const { return Crd2Idx(coord, shape_, stride_); }

private:
    S shape_;
    D stride_;
};

template <typename S, typename D>
constexpr Layout<S, D> MakeLayout(const S& shape, const D& stride) { return Layout<S, D>(shape, stride); }

template <typename T>
struct is_layout : Std::false_type {};
template <typename S, typename D>
struct is_layout<Layout<S, D>> : Std::true_type {};

}  // namespace AscendC
