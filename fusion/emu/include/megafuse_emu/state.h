// Per-core emulator state: the on-chip memories, the buffers handed out by TPipe, the
// counters, and the error reporter every rule check goes through.
#pragma once

#include <array>
#include <functional>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base.h"
#include "runtime_api.h"

namespace megafuse_emu {

// BT: the bias table (TPosition C2) of arch 2201 cube cores.
enum class Mem : uint8_t { UB = 0, L1, L0A, L0B, L0C, BT, COUNT };
constexpr int kNumMem = static_cast<int>(Mem::COUNT);

inline const char* MemName(Mem m)
{
    switch (m) {
        case Mem::UB: return "UB";
        case Mem::L1: return "L1";
        case Mem::L0A: return "L0A";
        case Mem::L0B: return "L0B";
        case Mem::L0C: return "L0C";
        case Mem::BT: return "BT (bias table)";
        default: return "GM";
    }
}

inline const char* PosName(AscendC::TPosition p)
{
    using AscendC::TPosition;
    switch (p) {
        case TPosition::GM: return "GM";
        case TPosition::A1: return "A1";
        case TPosition::A2: return "A2";
        case TPosition::B1: return "B1";
        case TPosition::B2: return "B2";
        case TPosition::C1: return "C1";
        case TPosition::C2: return "C2";
        case TPosition::CO1: return "CO1";
        case TPosition::CO2: return "CO2";
        case TPosition::VECIN: return "VECIN";
        case TPosition::VECOUT: return "VECOUT";
        case TPosition::VECCALC: return "VECCALC";
        default: return "unsupported position";
    }
}

// Counters, in the order the C API reports them. GM bytes count only DMA traffic (DataCopy,
// DataCopyPad, Fixpipe); scalar GetValue/SetValue on a GlobalTensor is counted separately.
enum Counter : int {
    GM_READ_BYTES = 0,    // GM -> UB / L1
    GM_WRITE_BYTES,       // UB / L0C -> GM
    DMA_GM_TO_UB,         // transfers (one per DataCopy / DataCopyPad call)
    DMA_GM_TO_L1,
    DMA_UB_TO_GM,
    DMA_L0C_TO_GM,        // Fixpipe
    DMA_UB_TO_UB,
    DMA_L1_TO_L0,         // LoadData
    L1_TO_L0_BYTES,
    VECTOR_INSTRUCTIONS,
    VECTOR_REPEATS,       // 256 B each
    MMAD_INSTRUCTIONS,
    CUBE_FRACTALS,        // 16 x C0 x 16 MAC blocks (16x16x16 for fp16)
    GM_SCALAR_READS,
    GM_SCALAR_WRITES,
    DMA_UB_TO_L1,         // on-chip moves of the cube data paths (no GM bytes)
    UB_TO_L1_BYTES,
    DMA_L0C_TO_UB,        // CO1 -> CO2 (arch 2002)
    L0C_TO_UB_BYTES,      // bytes read from L0C
    DMA_L1_TO_BT,         // C1 -> C2 (arch 2201)
    L1_TO_BT_BYTES,       // bytes read from L1
    L0_ALLOCS,            // AllocTensor on an A2 / B2 (L0A / L0B) queue
    L0_ALLOC_SWITCHES,    // ... that got another buffer of its queue than the one before (ping/pong)
    CROSS_FLAG_SETS,      // CrossCoreSetFlag calls (the synchronisation a program's flag-gated phase names)
    CROSS_FLAG_WAITS,     // CrossCoreWaitFlag calls
    SYNC_ALLS,            // SyncAll calls (hard or soft)
    NUM_COUNTERS
};

inline const char* const kCounterNames[NUM_COUNTERS] = {
    "gm_read_bytes", "gm_write_bytes", "dma_gm_to_ub", "dma_gm_to_l1", "dma_ub_to_gm",
    "dma_l0c_to_gm", "dma_ub_to_ub", "dma_l1_to_l0", "l1_to_l0_bytes", "vector_instructions",
    "vector_repeats", "mmad_instructions", "cube_fractals", "gm_scalar_reads",
    "gm_scalar_writes", "dma_ub_to_l1", "ub_to_l1_bytes", "dma_l0c_to_ub", "l0c_to_ub_bytes",
    "dma_l1_to_bt", "l1_to_bt_bytes", "l0_allocs", "l0_alloc_switches", "cross_flag_sets",
    "cross_flag_waits", "sync_alls"};

// One buffer handed out by TPipe::InitBuffer: a queue slot or a TBuf. LocalTensors refer to
// it and carry the generation they were issued under, so a tensor used after FreeTensor (or
// after its TPipe is gone) is recognised.
struct BlockInfo {
    enum class State : uint8_t { Free, Allocated, Enqueued, Scratch, Dead };
    Mem mem = Mem::UB;
    AscendC::TPosition pos = AscendC::TPosition::VECCALC;
    uint32_t addr = 0;   // byte address inside its memory
    uint32_t bytes = 0;  // length after rounding up to 32 B
    State state = State::Free;
    uint32_t gen = 0;
    const void* owner = nullptr;  // the TQueBind/TBuf object (or LocalMemAllocator)
    uint32_t line = 0;            // InitBuffer / Alloc line, named by the uninitialized-read check
    bool is_static = false;       // from LocalMemAllocator (static-tensor programming)
};

// What InitBuffer handed out, kept to itemise an over-budget message.
struct Allocation {
    Mem mem;
    AscendC::TPosition pos;
    uint32_t num;
    uint32_t len;  // per buffer, rounded to 32 B
    uint32_t line;
    bool queue;
};

enum class CoreKind : uint8_t { Unknown, Vector, Cube };

// Kernel types (devkit KernelMetaType order; the C API passes them as ints, see runtime_api.h).
enum class KernelType : int8_t {
    Unspecified = -1,  // megafuse_emu_run: one core per block, its kind fixed by the kernel
    AivOnly = 0, AicOnly, MixAiv1_0, MixAic1_0, MixAic1_1, MixAic1_2
};

inline bool IsMixType(KernelType t) { return t >= KernelType::MixAiv1_0; }

inline const char* KernelTypeName(int t)
{
    switch (t) {
        case 0: return "KERNEL_TYPE_AIV_ONLY";
        case 1: return "KERNEL_TYPE_AIC_ONLY";
        case 2: return "KERNEL_TYPE_MIX_AIV_1_0";
        case 3: return "KERNEL_TYPE_MIX_AIC_1_0";
        case 4: return "KERNEL_TYPE_MIX_AIC_1_1";
        case 5: return "KERNEL_TYPE_MIX_AIC_1_2";
        case 6: return "KERNEL_TYPE_AICORE";
        case 7: return "KERNEL_TYPE_VECTORCORE";
        case 8: return "KERNEL_TYPE_MIX_AICORE";
        case 9: return "KERNEL_TYPE_MIX_VECTOR_CORE";
        default: return "unknown kernel type";
    }
}

// The harness spelling of a kernel type (run(..., kernel_type=...)).
inline const char* KernelTypeArg(int t)
{
    switch (t) {
        case 0: return "aiv_only";
        case 1: return "aic_only";
        case 2: return "mix_aiv_1_0";
        case 3: return "mix_aic_1_0";
        case 4: return "mix_aic_1_1";
        case 5: return "mix_aic_1_2";
        default: return "?";
    }
}

struct MixLaunch;  // the scheduler of one MIX launch (emu_runtime.cpp)

// A kernel argument buffer: GM accesses must stay inside the one their tensor points into.
struct GmRegion {
    const uint8_t* base;
    uint64_t bytes;
    int arg;  // parameter index
};

// The GM atomic mode of a core (atomic.h): op 0 none, 1 add, 2 max, 3 min.
struct AtomicState {
    int op = 0;
    uint32_t elem = 0;
    const char* type = "";
    void (*combine)(uint8_t* gm, const uint8_t* src, uint64_t n, int op) = nullptr;
};

struct CoreState {
    MegafuseEmuSoc soc{};
    std::string soc_name;
    std::string kernel;
    int64_t block_idx = 0;  // GetBlockIdx(): on an AIV of a MIX launch group * ratio + sub_idx
    int64_t block_num = 1;  // GetBlockNum(): the launch's block_dim (AIC count for MIX)
    int64_t group = 0;      // the AI Core (block) this core belongs to: 0 .. block_dim-1
    int64_t sub_idx = 0;    // GetSubBlockIdx(): 0 or 1 on the AIVs of a 1:2 MIX launch, else 0
    int64_t ratio = 1;      // GetTaskRation(): AIVs per block on an AIV of a MIX launch, else 1
    uint64_t serial = 0;    // unique per emulated core: objects from another core are refused
    KernelType launch_type = KernelType::Unspecified;  // how the host launched the kernel
    MixLaunch* mix = nullptr;  // set on the cores of a MIX launch
    int mix_index = -1;        // this core's index in the MIX launch (or the cooperative launch)
    MixLaunch* coop = nullptr;  // the cooperative launch this core runs in (MIX, or non-MIX with SyncAll)
    int syncs = 0;              // SyncAll calls this core has passed
    // soft SyncAll: the calls this core made on each gmWorkspace slot (its 32 B flag counts them)
    std::map<const void*, int> soft_syncs;
    int determine_round = -1;  // NotifyNextBlock calls; -1 before InitDetermineComputeWorkspace (block_sync.h)
    uint8_t task_marks = 0;    // 1: WaitPreTaskEnd called, 2: SetNextTaskStart called (block_sync.h)

    std::array<std::vector<uint8_t>, kNumMem> mem;  // physical bytes of each memory
    std::array<std::vector<uint8_t>, kNumMem> written;  // 1 per byte ever written (init_check.h)
    std::array<uint64_t, kNumMem> budget{};         // what InitBuffer may hand out
    std::array<uint64_t, kNumMem> used{};           // bump pointer per memory
    std::vector<Allocation> allocs;
    std::deque<BlockInfo> blocks;  // deque: stable addresses for tensors to point at
    uint32_t buffer_count = 0;     // all InitBuffer buffers; the devkit allows at most 64

    std::vector<GmRegion> gm;  // kernel argument buffers

    std::array<uint64_t, NUM_COUNTERS> counters{};
    std::map<std::pair<int, int>, int> flags;  // (HardEvent, id) -> SetFlags not yet waited

    CoreKind kind = CoreKind::Unknown;  // on arch 2201 a core is either AIV (UB) or AIC (L1/L0)
    uint32_t kind_line = 0;             // where the kind was fixed; 0: by the launch
    bool kind_declared = false;  // KERNEL_TASK_TYPE_DEFAULT seen

    AtomicState atomic;                // SetAtomicAdd / ... (atomic.h)
    void* pipe = nullptr;              // the live TPipe (GetTPipePtr); AscendC::TPipe*
    uint64_t pad_value = 0;            // SetPadValue's bits (DataCopyPad with isPad = false)
    uint32_t pad_value_bytes = 0;      // sizeof the type SetPadValue was given; 0: never called
    std::array<uint32_t, kNumMem> static_head{};  // LocalMemAllocator bump pointer per memory
    std::array<bool, kNumMem> static_live{};      // a LocalMemAllocator of that memory exists
    std::string uninit_origin;  // first flow of never-written bytes (init_check.h NoteOrigin)

    uint8_t* MemPtr(Mem m, uint32_t addr) { return mem[static_cast<int>(m)].data() + addr; }
};

// The core the calling thread emulates: set by megafuse_emu_run for one block (non-MIX
// launches run the blocks one after the other on the calling thread) or by the thread of one
// core of a MIX launch. Defined in emu_runtime.cpp.
extern thread_local CoreState* g_core;

// "AIC", "AIV0", "AIV1": the core's name inside its block (MIX launches only).
inline std::string CoreName(const CoreState& c)
{
    if (c.kind == CoreKind::Cube) return "AIC";
    if (c.ratio > 1) return Str("AIV", c.sub_idx);
    return "AIV";
}

// Where a message happened: "block 1/4, file" or, on a MIX core, "block 1/4, AIV1 (GetBlockIdx 3), file".
inline std::string Where(const CoreState& c, const std::string& file)
{
    if (c.mix == nullptr) return Str("block ", c.block_idx, "/", c.block_num, ", ", file);
    return Str("block ", c.group, "/", c.block_num, ", ", CoreName(c), " (GetBlockIdx ", c.block_idx, "), ", file);
}

inline std::string BaseName(const Loc& loc)
{
    std::string file = loc.file_name();
    if (auto slash = file.find_last_of('/'); slash != std::string::npos) file = file.substr(slash + 1);
    return file;
}

// "kernel 'K' line N: msg [where]" for core c (which need not be the calling thread's).
inline std::string FormatAt(const CoreState& c, const Loc& loc, const std::string& msg)
{
    return Str("kernel '", c.kernel, "' line ", loc.line(), ": ", msg, " [", Where(c, BaseName(loc)), "]");
}

[[noreturn]] inline void Fail(const Loc& loc, const std::string& msg)
{
    if (g_core == nullptr) throw EmuError(Str("line ", loc.line(), ": ", msg, " [", BaseName(loc), "]"));
    throw EmuError(FormatAt(*g_core, loc, msg));
}

inline CoreState& Core(const Loc& loc)
{
    if (g_core == nullptr) Fail(loc, "AscendC API called outside megafuse_emu_run");
    return *g_core;
}

inline void Count(Counter c, uint64_t n = 1) { g_core->counters[c] += n; }

inline bool IsArch2201() { return g_core->soc.arch == 2201; }

// Cross-core synchronisation of a MIX launch (emu_runtime.cpp): CrossCoreSetFlag /
// CrossCoreWaitFlag after their arguments were checked. Wait blocks the calling core's thread
// until its flag counter is non-zero; both throw EmuError for broken rules.
void MixSetFlag(CoreState& c, int mode, int flag, const char* api, const Loc& loc);
void MixWaitFlag(CoreState& c, int flag, const char* api, const Loc& loc);
// SyncAll (emu_runtime.cpp): blocks until every member core of the barrier has called its
// matching SyncAll; members: the launch's AIVs (aiv_only) or all its cores, the first
// used_cores of them when used_cores > 0. A member that finishes first is a reported deadlock.
void LaunchSyncAll(CoreState& c, bool aiv_only, int used_cores, const char* api, const Loc& loc);
// Gives control of a cooperative launch to the next core that can run (a core polling GM for
// another core's write: DataCacheCleanAndInvalid); returns at once when none can, or when the
// launch runs its blocks one after the other.
void LaunchYield(CoreState& c);
// Blocks the calling core of a cooperative launch until ready() holds (checked whenever another
// core gives control away); `what` names the condition in the deadlock report (mm_sync.h).
void LaunchWaitUntil(CoreState& c, const std::function<bool()>& ready, const char* api, const std::string& what,
                     const Loc& loc);

}  // namespace megafuse_emu

// Which core type this code runs on: AscendC::AIV or AscendC::AIC on the cores of arch 2201
// (once the kind is known), AscendC::MIX on coupled cores. The devkit has it as a global
// (constexpr in each core type's compilation); here it is per emulated core (thread).
inline thread_local int32_t g_coreType = AscendC::MIX;

// The devkit's kernel-side globals block_idx / block_num (GetBlockIdx() / GetBlockNum()), set
// per emulated core when it starts running.
inline thread_local int64_t block_idx = 0;
inline thread_local int64_t block_num = 1;

namespace megafuse_emu {

// Fixes the core kind of the calling thread's core and keeps g_coreType in step.
inline void SetKind(CoreState& c, CoreKind k, uint32_t line)
{
    c.kind = k;
    c.kind_line = line;
    if (&c == g_core && c.soc.arch == 2201)
        g_coreType = k == CoreKind::Vector ? AscendC::AIV : k == CoreKind::Cube ? AscendC::AIC : AscendC::MIX;
}

}  // namespace megafuse_emu
