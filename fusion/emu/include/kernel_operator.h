// megafuse host emulation of the Ascend C kernel API (the subset generated kernels use).
//
// A kernel written against the devkit's kernel_operator.h compiles against this header with
// g++ -std=c++20 and runs on the host through the runtime in ../runtime/emu_runtime.cpp; see
// ../README.md for what is emulated, the rules enforced, and the gaps. Every API function has
// a trailing std::source_location parameter (defaulted) so a broken rule is reported with the
// kernel's source line; call sites are the devkit's.
#pragma once

#include "megafuse_emu/base.h"
#include "megafuse_emu/state.h"
#include "megafuse_emu/tensor.h"
#include "megafuse_emu/pipe.h"
#include "megafuse_emu/data_copy.h"
#include "megafuse_emu/data_copy_pad_legacy.h"
#include "megafuse_emu/vector.h"
#include "megafuse_emu/cube.h"
#include "megafuse_emu/sync.h"
#include "megafuse_emu/static_alloc.h"
#include "megafuse_emu/devkit.h"
#include "megafuse_emu/devkit_extra.h"
#include "megafuse_emu/ln_reduce.h"
#include "megafuse_emu/atomic.h"
#include "megafuse_emu/launch.h"
#include "megafuse_emu/block_sync.h"
#include "megafuse_emu/cube_extra.h"
#include "megafuse_emu/vec_plumbing.h"
#include "megafuse_emu/adv_math.h"
#include "megafuse_emu/vec_basic.h"
#include "megafuse_emu/vec_cmp.h"
#include "megafuse_emu/vec_reduce.h"
#include "megafuse_emu/vec_fill.h"
#include "megafuse_emu/vec_mask.h"
#include "megafuse_emu/vec_gather.h"
#include "megafuse_emu/adv_std.h"
#include "megafuse_emu/adv_reduce.h"
#include "megafuse_emu/adv_quant.h"
#include "megafuse_emu/adv_softmax.h"
#include "megafuse_emu/adv_select.h"
#include "megafuse_emu/adv_broadcast.h"
#include "utils/debug/asc_printf.h"
#include "megafuse_emu/tiling_bytes.h"
#include "megafuse_emu/utils_macros.h"
#include "megafuse_emu/coord_layout.h"
#include "megafuse_emu/symbol_override.h"
