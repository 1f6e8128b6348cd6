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
};

/* Runs kernel_fn once per block index 0..block_dim-1, sequentially, each block on a fresh
 * core (empty UB/L1/L0, no queues). args[i] is a GM buffer of arg_sizes[i] bytes, or, when
 * arg_sizes[i] == 0, an integer scalar passed by value (or a null pointer).
 * Returns 0 on success; otherwise 1 and a message "kernel 'K' line N: ..." in err. */
__attribute__((visibility("default"))) int megafuse_emu_run(
    void* kernel_fn, const char* kernel_name, int block_dim, int nargs, void** args,
    const uint64_t* arg_sizes, const struct MegafuseEmuSoc* soc, char* err, int errlen);

/* Comma-separated counter names, in the order megafuse_emu_counters writes them. */
__attribute__((visibility("default"))) int megafuse_emu_counter_names(char* buf, int len);

/* Counters of the last run: core >= 0 for one block, core == -1 for the sum over blocks.
 * Writes min(n, number of counters) values; returns how many, or -1 for a bad core. */
__attribute__((visibility("default"))) int megafuse_emu_counters(int core, uint64_t* out, int n);

/* Number of blocks whose counters the last run recorded. */
__attribute__((visibility("default"))) int megafuse_emu_num_cores(void);

#ifdef __cplusplus
}
#endif

#endif /* MEGAFUSE_EMU_RUNTIME_API_H */
