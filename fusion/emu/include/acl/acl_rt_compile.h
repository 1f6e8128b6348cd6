// Runtime compilation (devkit aclrtc pages: aclrtcCreateProg / aclrtcCompileProg / aclrtcGetBinData
// ... and the aclrt binary-loading calls aclrtBinaryLoadFromData / aclrtBinaryGetFunction /
// aclrtLaunchKernelWithArgsArray / aclrtBinaryUnLoad). Here "compiling" a kernel source string
// runs the emulator's own build at run time: g++ with the emulation headers (kernel_operator.h
// force-included, as the device compiler knows the kernel keywords) and the emulation runtime,
// into a shared library that is the program's "device binary"; loading it dlopens it, and a
// launch runs the kernel like a `<<<>>>` launch (one emulator fault line ends the program). The
// compile command comes from the program build (MEGAFUSE_EMU_RTC_ARGV, set by `megafuse emu run`).
// Kernel entries: every `extern "C"` __global__ kernel of the source (aclrtBinaryGetFunction by
// its name) and every aclrtcAddNameExpr expression (by the name aclrtcGetLoweredName gives, the
// library's entry symbol). --npu-arch must name the arch the program is built for. The error
// codes below for compile and lookup failures are the emulator's (documented values unknown).
#pragma once

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "megafuse_emu/launch.h"
#include "megafuse_emu/rtc_launch.h"

extern char** environ;

constexpr aclError ACL_ERROR_RTC_INVALID_INPUT = 176001;   // emulator's value
constexpr aclError ACL_ERROR_RTC_COMPILATION = 176002;     // emulator's value
constexpr aclError ACL_ERROR_RTC_NO_NAME_EXPR = 176003;    // emulator's value
constexpr aclError ACL_ERROR_RTC_NOT_FOUND = 176004;       // emulator's value

struct MegafuseRtcProg {
    std::string src, name, log;
    std::vector<std::pair<std::string, std::string>> headers;  // include name, content
    std::vector<std::string> exprs;
    std::vector<char> bin;
    bool compiled = false;
};
typedef MegafuseRtcProg* aclrtcProg;

typedef void* aclrtBinHandle;
typedef void* aclrtFuncHandle;
typedef enum aclrtBinaryLoadOptionType { ACL_RT_BINARY_LOAD_OPT_MAGIC = 1 } aclrtBinaryLoadOptionType;
constexpr uint32_t ACL_RT_BINARY_MAGIC_ELF_AICORE = 0x43554245u;  // emulator's value
typedef union aclrtBinaryLoadOptionValue { uint32_t magic; } aclrtBinaryLoadOptionValue;
typedef struct aclrtBinaryLoadOption {
    aclrtBinaryLoadOptionType type;
    aclrtBinaryLoadOptionValue value;
} aclrtBinaryLoadOption;
typedef struct aclrtBinaryLoadOptions {
    aclrtBinaryLoadOption* options;
    size_t numOpt;
} aclrtBinaryLoadOptions;
typedef struct aclrtLaunchKernelCfg aclrtLaunchKernelCfg;

namespace megafuse_emu {

struct RtcBinary {
    void* dl = nullptr;
};
struct RtcFunction {
    MegafuseRtcEntry entry = nullptr;
    std::string name;
};

inline std::string RtcEntryName(const std::string& kernel) { return "megafuse_rtc_entry_" + kernel; }

// Kernel name -> launch type macro, from the kernel keywords of the source.
inline std::vector<std::pair<std::string, std::string>> RtcKernels(const std::string& src, bool extern_c_only)
{
    static const std::regex def(R"re((extern\s+"C"\s+)?((?:__\w+__\s+)*)__global__\s+((?:__\w+__\s+)*)void\s+([A-Za-z_]\w*)\s*\()re");
    std::vector<std::pair<std::string, std::string>> out;
    for (auto it = std::sregex_iterator(src.begin(), src.end(), def); it != std::sregex_iterator(); ++it) {
        const std::smatch& m = *it;
        if (extern_c_only && !m[1].matched) continue;
        const std::string quals = m[2].str() + " " + m[3].str();
        const char* type = quals.find("__vector__") != std::string::npos ? "MEGAFUSE_EMU_KERNEL_AIV_ONLY"
                           : quals.find("__cube__") != std::string::npos ? "MEGAFUSE_EMU_KERNEL_AIC_ONLY"
                                                                          : "MEGAFUSE_EMU_KERNEL_UNSPECIFIED";
        out.emplace_back(m[4].str(), type);
    }
    return out;
}

inline std::string RtcTypeOf(const std::string& src, const std::string& expr)
{
    std::string base = expr.substr(0, expr.find('<'));
    if (auto p = base.rfind("::"); p != std::string::npos) base = base.substr(p + 2);
    for (const auto& [name, type] : RtcKernels(src, false))
        if (name == base) return type;
    return "MEGAFUSE_EMU_KERNEL_UNSPECIFIED";
}

inline bool RtcSafeName(const std::string& n)
{
    return !n.empty() && n[0] != '/' && n.find("..") == std::string::npos && n.find('\n') == std::string::npos;
}

inline int RtcRun(const std::vector<std::string>& argv, const std::string& log_path)
{
    std::vector<char*> a;
    for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline std::string RtcSlurp(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

inline void RtcRemoveTree(const std::string& dir, const std::vector<std::string>& files)
{
    for (const std::string& f : files) ::unlink((dir + "/" + f).c_str());
    ::rmdir(dir.c_str());
}

inline const uint8_t* RtcFindAlloc(const void* p, uint64_t* bytes, bool* device) { return FindDeviceAlloc(p, bytes, device); }

}  // namespace megafuse_emu

inline aclError aclrtcCreateProg(aclrtcProg* prog, const char* src, const char* name, int numHeaders,
                                 const char** headers, const char** includeNames)
{
    if (prog == nullptr || src == nullptr || numHeaders < 0 || (numHeaders > 0 && (!headers || !includeNames)))
        return ACL_ERROR_RTC_INVALID_INPUT;
    auto* p = new MegafuseRtcProg;
    p->src = src;
    p->name = name ? name : "rtc_kernel";
    for (int i = 0; i < numHeaders; ++i) {
        if (!megafuse_emu::RtcSafeName(includeNames[i])) {
            delete p;
            return ACL_ERROR_RTC_INVALID_INPUT;
        }
        p->headers.emplace_back(includeNames[i], headers[i]);
    }
    *prog = p;
    return ACL_SUCCESS;
}

inline aclError aclrtcAddNameExpr(aclrtcProg prog, const char* expr)
{
    if (prog == nullptr || expr == nullptr || prog->compiled) return ACL_ERROR_RTC_INVALID_INPUT;
    prog->exprs.emplace_back(expr);
    return ACL_SUCCESS;
}

inline aclError aclrtcCompileProg(aclrtcProg prog, int numOptions, const char** options)
{
    using namespace megafuse_emu;
    if (prog == nullptr || numOptions < 0 || (numOptions > 0 && options == nullptr)) return ACL_ERROR_RTC_INVALID_INPUT;
#ifndef MEGAFUSE_EMU_RTC_ARGV
    prog->log = "aclrtcCompileProg: runtime compilation needs a program built by `megafuse emu run`\n";
    return ACL_ERROR_RTC_COMPILATION;
#else
    std::vector<std::string> argv = {MEGAFUSE_EMU_RTC_ARGV};
    std::vector<std::string> extra;
    for (int i = 0; i < numOptions; ++i) {
        const std::string o = options[i] ? options[i] : "";
        if (o.rfind("--npu-arch=", 0) == 0) {
            const std::string want = Str("dav-", __NPU_ARCH__);
            if (o.substr(11) != want) {
                prog->log = Str("aclrtcCompileProg: ", o, ": this program is built for ", want, " (", HostSoc("aclrtc").name,
                                "); the emulator compiles for that arch only\n");
                return ACL_ERROR_RTC_COMPILATION;
            }
        } else if (o.rfind("-D", 0) == 0 || o.rfind("-I", 0) == 0) {
            extra.push_back(o);
        } else if (o.rfind("-O", 0) != 0 && o != "-g") {
            prog->log = Str("aclrtcCompileProg: option '", o, "' is not emulated (--npu-arch=, -D, -I, -O, -g are)\n");
            return ACL_ERROR_RTC_COMPILATION;
        }
    }
    char tmpl[] = "/tmp/megafuse-rtc-XXXXXX";
    const char* tmpdir = ::mkdtemp(tmpl);
    if (tmpdir == nullptr) {
        prog->log = "aclrtcCompileProg: cannot create a temporary directory\n";
        return ACL_ERROR_RTC_COMPILATION;
    }
    const std::string dir = tmpdir;
    std::vector<std::string> files = {"kernel.cpp", "kernel.so", "log.txt"};
    for (const auto& [inc, text] : prog->headers) {
        std::ofstream(dir + "/" + inc, std::ios::binary) << text;
        files.push_back(inc);
    }
    std::string quoted = prog->name;
    for (char& ch : quoted)
        if (ch == '"' || ch == '\\' || ch == '\n') ch = '_';
    std::string unit = Str("#line 1 \"", quoted, "\"\n", prog->src, "\n#line 1 \"<aclrtc entries>\"\n",
                           "#include \"megafuse_emu/rtc_launch.h\"\n");
    auto entry = [&](const std::string& sym, const std::string& fn, const std::string& display, const std::string& type) {
        unit += Str("extern \"C\" __attribute__((visibility(\"default\"))) int ", sym,
                    "(const MegafuseRtcCall* call) { return ::megafuse_emu::RtcLaunch(&", fn, ", \"", display, "\", ",
                    type, ", call); }\n");
    };
    for (const auto& [name, type] : RtcKernels(prog->src, true)) entry(RtcEntryName(name), name, name, type);
    for (size_t i = 0; i < prog->exprs.size(); ++i) {
        std::string display = prog->exprs[i].substr(0, prog->exprs[i].find('<'));
        if (auto p = display.rfind("::"); p != std::string::npos) display = display.substr(p + 2);
        entry(RtcEntryName(Str("expr_", i)), prog->exprs[i], display, RtcTypeOf(prog->src, prog->exprs[i]));
    }
    std::ofstream(dir + "/kernel.cpp") << unit;
    // argv: compiler, flags..., the runtime object last; the unit goes before it.
    const std::string runtime = argv.back();
    argv.pop_back();
    argv.insert(argv.end(), extra.begin(), extra.end());
    for (const std::string& a : {std::string("-shared"), std::string("-iquote"), dir, std::string("-include"),
                                 std::string("kernel_operator.h"), std::string("-x"), std::string("c++"),
                                 dir + "/kernel.cpp", std::string("-x"), std::string("none"), runtime,
                                 std::string("-o"), dir + "/kernel.so"})
        argv.push_back(a);
    const int rc = RtcRun(argv, dir + "/log.txt");
    prog->log = RtcSlurp(dir + "/log.txt");
    if (rc != 0) {
        if (prog->log.empty()) prog->log = Str("aclrtcCompileProg: the compiler (", argv[0], ") did not run\n");
        RtcRemoveTree(dir, files);
        return ACL_ERROR_RTC_COMPILATION;
    }
    const std::string so = RtcSlurp(dir + "/kernel.so");
    prog->bin.assign(so.begin(), so.end());
    prog->compiled = true;
    RtcRemoveTree(dir, files);
    return ACL_SUCCESS;
#endif
}

inline aclError aclrtcGetCompileLogSize(aclrtcProg prog, size_t* size)
{
    if (prog == nullptr || size == nullptr) return ACL_ERROR_RTC_INVALID_INPUT;
    *size = prog->log.size() + 1;
    return ACL_SUCCESS;
}
inline aclError aclrtcGetCompileLog(aclrtcProg prog, char* log)
{
    if (prog == nullptr || log == nullptr) return ACL_ERROR_RTC_INVALID_INPUT;
    std::memcpy(log, prog->log.c_str(), prog->log.size() + 1);
    return ACL_SUCCESS;
}
inline aclError aclrtcGetBinDataSize(aclrtcProg prog, size_t* size)
{
    if (prog == nullptr || size == nullptr || !prog->compiled) return ACL_ERROR_RTC_INVALID_INPUT;
    *size = prog->bin.size();
    return ACL_SUCCESS;
}
inline aclError aclrtcGetBinData(aclrtcProg prog, char* data)
{
    if (prog == nullptr || data == nullptr || !prog->compiled) return ACL_ERROR_RTC_INVALID_INPUT;
    std::memcpy(data, prog->bin.data(), prog->bin.size());
    return ACL_SUCCESS;
}
inline aclError aclrtcGetLoweredName(aclrtcProg prog, const char* expr, const char** lowered)
{
    if (prog == nullptr || expr == nullptr || lowered == nullptr || !prog->compiled) return ACL_ERROR_RTC_INVALID_INPUT;
    for (size_t i = 0; i < prog->exprs.size(); ++i) {
        if (prog->exprs[i] != expr) continue;
        static thread_local std::string name;
        name = megafuse_emu::RtcEntryName(megafuse_emu::Str("expr_", i));
        *lowered = name.c_str();
        return ACL_SUCCESS;
    }
    return ACL_ERROR_RTC_NO_NAME_EXPR;
}
inline aclError aclrtcDestroyProg(aclrtcProg* prog)
{
    if (prog == nullptr || *prog == nullptr) return ACL_ERROR_RTC_INVALID_INPUT;
    delete *prog;
    *prog = nullptr;
    return ACL_SUCCESS;
}

inline aclError aclrtBinaryLoadFromData(const void* data, size_t length, const aclrtBinaryLoadOptions* options,
                                        aclrtBinHandle* binHandle)
{
    (void)options;
    if (data == nullptr || length == 0 || binHandle == nullptr) return ACL_ERROR_INVALID_PARAM;
    char path[] = "/tmp/megafuse-rtc-bin-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) return ACL_ERROR_INVALID_PARAM;
    const bool written = ::write(fd, data, length) == static_cast<ssize_t>(length);
    ::close(fd);
    void* dl = written ? ::dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    ::unlink(path);
    if (dl == nullptr) return ACL_ERROR_INVALID_PARAM;  // not a binary of aclrtcCompileProg
    *binHandle = new megafuse_emu::RtcBinary{dl};
    return ACL_SUCCESS;
}
inline aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char* kernelName, aclrtFuncHandle* funcHandle)
{
    if (binHandle == nullptr || kernelName == nullptr || funcHandle == nullptr) return ACL_ERROR_INVALID_PARAM;
    auto* bin = static_cast<megafuse_emu::RtcBinary*>(binHandle);
    std::string sym = kernelName;
    if (sym.rfind("megafuse_rtc_entry_", 0) != 0) sym = megafuse_emu::RtcEntryName(sym);
    void* f = ::dlsym(bin->dl, sym.c_str());
    if (f == nullptr) return ACL_ERROR_RTC_NOT_FOUND;
    *funcHandle = new megafuse_emu::RtcFunction{reinterpret_cast<MegafuseRtcEntry>(f), kernelName};
    return ACL_SUCCESS;
}
inline aclError aclrtLaunchKernelWithArgsArray(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
                                               aclrtLaunchKernelCfg* cfg, void** argsArray)
{
    (void)stream;
    (void)cfg;
    if (funcHandle == nullptr) return ACL_ERROR_INVALID_PARAM;
    auto* fn = static_cast<megafuse_emu::RtcFunction*>(funcHandle);
    char err[8192] = {0};
    MegafuseRtcCall call{numBlocks, argsArray, &megafuse_emu::HostSoc(fn->name.c_str()), err, sizeof(err),
                         &megafuse_emu::RtcFindAlloc};
    std::fflush(stdout);
    if (fn->entry(&call) != 0) megafuse_emu::HostFault(err);
    std::fflush(stdout);
    return ACL_SUCCESS;
}
inline aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle)
{
    if (binHandle == nullptr) return ACL_ERROR_INVALID_PARAM;
    auto* bin = static_cast<megafuse_emu::RtcBinary*>(binHandle);
    ::dlclose(bin->dl);
    delete bin;
    return ACL_SUCCESS;
}
