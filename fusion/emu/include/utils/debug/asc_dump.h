// DumpTensor lives in the emulation's kernel_operator.h (megafuse_emu/devkit_extra.h).
#pragma once
#include "kernel_operator.h"
