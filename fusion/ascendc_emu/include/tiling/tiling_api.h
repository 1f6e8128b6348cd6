// Host tiling API of the devkit samples: the op tiling definition macros. The matmul / softmax
// host tiling classes are not emulated (a sample using them fails to compile naming the class).
#pragma once
#include "register/tilingdata_base.h"
