// ListTensorDesc / TensorDesc (devkit kernel_operator_list_tensor_intf.h): megafuse_emu/list_tensor.h.
#pragma once
#include "kernel_operator.h"
#include "megafuse_emu/list_tensor.h"
