// AscendC::Std: the devkit's kernel-side subset of <type_traits> / <tuple>, which on the host
// is the standard library's.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

namespace AscendC {
namespace Std {
using std::add_const;
using std::add_const_t;
using std::add_cv;
using std::add_cv_t;
using std::add_lvalue_reference;
using std::add_lvalue_reference_t;
using std::add_pointer;
using std::add_pointer_t;
using std::add_rvalue_reference;
using std::add_rvalue_reference_t;
using std::add_volatile;
using std::add_volatile_t;
using std::conditional;
using std::conditional_t;
using std::decay;
using std::decay_t;
using std::enable_if;
using std::enable_if_t;
using std::false_type;
using std::forward;
using std::get;
using std::integral_constant;
using std::is_arithmetic;
using std::is_array;
using std::is_const;
using std::is_floating_point;
using std::is_integral;
using std::is_pointer;
using std::is_reference;
using std::is_same;
using std::is_same_v;
using std::is_void;
using std::make_tuple;
using std::move;
using std::remove_const;
using std::remove_const_t;
using std::remove_cv;
using std::remove_cv_t;
using std::remove_pointer;
using std::remove_pointer_t;
using std::remove_reference;
using std::remove_reference_t;
using std::remove_volatile;
using std::remove_volatile_t;
using std::true_type;
using std::tuple;
using std::tuple_element;
using std::tuple_size;
}  // namespace Std
}  // namespace AscendC
