// AscendCL runtime error queries the devkit samples call after a launch (aclrtGetLastError /
// aclrtPeekAtLastError with an aclrtLastErrLevel). In the emulator a kernel that breaks a rule
// stops the program with the fault line before the host code runs on, so a program that
// reaches these calls has no pending device error: both return ACL_SUCCESS.
#pragma once

#include "acl/acl.h"

typedef enum aclrtLastErrLevel { ACL_RT_THREAD_LEVEL = 0 } aclrtLastErrLevel;

inline aclError aclrtGetLastError(aclrtLastErrLevel) { return ACL_SUCCESS; }
inline aclError aclrtPeekAtLastError(aclrtLastErrLevel) { return ACL_SUCCESS; }
