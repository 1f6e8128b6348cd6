/* C entry points of the emulation runtime (fusion/ascendc_emu/runtime/emu_runtime.cpp).
 * The runtime is compiled together with one kernel source into one shared library; the
 * Python harness (fusion/ascendc_emu/harness.py) calls these through ctypes. */
#ifndef MEGAFUSE_EMU_RUNTIME_API_H
#define MEGAFUSE_EMU_RUNTIME_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per-core memory sizes of the SoC being emulated. The harness fills this from the one
 * hardware table of the project (fusion/soc.py), so the emulator holds no second table. */
struct MegafuseEmuSoc {
    const char* name;          /* e.g. "ascend910b2", used in messages */
    int32_t arch;              /* devkit arch id: 2201 (910B, split AIC/AIV) or 2002 (310P) */
    uint64_t ub_bytes;         /* physical Unified Buffer */
    uint64_t ub_usable_bytes;  /* what InitBuffer may hand out */
    uint64_t l1_bytes;
    uint64_t l0a_bytes;
    uint64_t l0b_bytes;
    uint64_t l0c_bytes;
    uint64_t bt_bytes;         /* bias table (TPosition C2); 0 where the arch has none */
    int32_t cube_cores;        /* AIC cores (AI cores on coupled chips); 0: unknown */
    int32_t vector_cores;      /* AIV cores (AI cores on coupled chips); 0: unknown */
};

/* Kernel types for megafuse_emu_run_typed (the devkit's KernelMetaType order). */
#define MEGAFUSE_EMU_KERNEL_UNSPECIFIED (-1) /* like megafuse_emu_run */
#define MEGAFUSE_EMU_KERNEL_AIV_ONLY 0
#define MEGAFUSE_EMU_KERNEL_AIC_ONLY 1
#define MEGAFUSE_EMU_KERNEL_MIX_AIV_1_0 2
#define MEGAFUSE_EMU_KERNEL_MIX_AIC_1_0 3
#define MEGAFUSE_EMU_KERNEL_MIX_AIC_1_1 4
#define MEGAFUSE_EMU_KERNEL_MIX_AIC_1_2 5

/* Core types reported by megafuse_emu_core_info. */
#define MEGAFUSE_EMU_CORE_UNKNOWN 0 /* a block that never fixed its kind (or a coupled core) */
#define MEGAFUSE_EMU_CORE_AIC 1
#define MEGAFUSE_EMU_CORE_AIV 2

/* Runs kernel_fn once per block index 0..block_dim-1, sequentially, each block on a fresh
 * core (empty UB/L1/L0, no queues), its kind (AIV/AIC on 2201) fixed by the kernel. args[i] is a GM buffer of arg_sizes[i] bytes, or, when
 * arg_sizes[i] == 0, an integer scalar passed by value (or a null pointer).
 * Returns 0 on success; otherwise 1 and a message "kernel 'K' line N: ..." in err. */
__attribute__((visibility("default"))) int megafuse_emu_run(
    void* kernel_fn, const char* kernel_name, int block_dim, int nargs, void** args,
    const uint64_t* arg_sizes, const struct MegafuseEmuSoc* soc, char* err, int errlen);

/* Like megafuse_emu_run with the kernel type the host launches (MEGAFUSE_EMU_KERNEL_*).
 *   AIV_ONLY / AIC_ONLY: block_dim blocks one after the other, each on a fresh core of that type.
 *   MIX_AIC_1_2 / MIX_AIC_1_1: block_dim groups of 1 AIC + 2 (1) AIVs, MIX_AIC_1_0 / MIX_AIV_1_0:
 *   block_dim AICs / AIVs; all cores of a MIX launch run as threads of one launch, handing
 *   control over at CrossCoreWaitFlag (see ../README.md). Arch 2201 only.
 * The kernel's KERNEL_TASK_TYPE_DEFAULT must name the same type (a MIX launch requires it). */
__attribute__((visibility("default"))) int megafuse_emu_run_typed(
    void* kernel_fn, const char* kernel_name, int kernel_type, int block_dim, int nargs, void** args,
    const uint64_t* arg_sizes, const struct MegafuseEmuSoc* soc, char* err, int errlen);

/* Comma-separated counter names, in the order megafuse_emu_counters writes them. */
__attribute__((visibility("default"))) int megafuse_emu_counter_names(char* buf, int len);

/* Counters of the last run: core >= 0 for one emulated core, core == -1 for the sum over cores.
 * Writes min(n, number of counters) values; returns how many, or -1 for a bad core. */
__attribute__((visibility("default"))) int megafuse_emu_counters(int core, uint64_t* out, int n);

/* Number of emulated cores whose counters the last run recorded: block_dim for a non-MIX
 * launch, block_dim * 3 for MIX_AIC_1_2 (per block: the AIC, then AIV0, AIV1), ... */
__attribute__((visibility("default"))) int megafuse_emu_num_cores(void);

/* What core `core` of the last run was: out[0] core type (MEGAFUSE_EMU_CORE_*), out[1] its
 * block (0 .. block_dim-1), out[2] GetSubBlockIdx(), out[3] GetBlockIdx(). Returns 0, or -1
 * for a bad core. */
__attribute__((visibility("default"))) int megafuse_emu_core_info(int core, int64_t* out);

/* A GM buffer of `bytes` zeroed bytes between two inaccessible guard pages (guard.h), named
 * `label` in out-of-bounds reports of a confined run; nullptr when out of memory. */
__attribute__((visibility("default"))) void* megafuse_emu_guard_alloc(uint64_t bytes, const char* label);

/* Frees a buffer from megafuse_emu_guard_alloc: 0, or -1 when p is not one. */
__attribute__((visibility("default"))) int megafuse_emu_guard_free(void* p);

#ifdef __cplusplus
}
#endif

#endif /* MEGAFUSE_EMU_RUNTIME_API_H */
