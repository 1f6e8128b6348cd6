"""aclrtc (acl/acl_rt_compile.h): a kernel source string compiled at run time by the emulator's
own build, loaded and launched through the argument array; a template kernel by its name
expression; a kernel fault ends the program with the emulator's line; a wrong --npu-arch is a
compile error with a log."""

from __future__ import annotations

from fusion.cli.main import main as cli_main

_PROG = r"""
#include <cstdio>
#include <vector>
#include "acl/acl.h"
#include "acl/acl_rt_compile.h"
static const char* kSrc = R"(
#include "kernel_operator.h"
template <typename T>
__global__ __vector__ void scale(GM_ADDR x, GM_ADDR y, int32_t n, int32_t k)
{
    AscendC::GlobalTensor<T> xg, yg;
    xg.SetGlobalBuffer((__gm__ T*)x, n);
    yg.SetGlobalBuffer((__gm__ T*)y, n);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> b;
    pipe.InitBuffer(b, n * sizeof(T));
    AscendC::LocalTensor<T> t = b.Get<T>();
    AscendC::DataCopy(t, xg, n);
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::Muls(t, t, (T)k, n);
    AscendC::PipeBarrier<PIPE_ALL>();
    AscendC::DataCopy(yg, t, n);
}
extern "C" __global__ __vector__ void hello() { printf("hello %d\n", (int)AscendC::GetBlockIdx()); }
)";
int main(int argc, char** argv)
{
    const char* arch = argc > 1 ? argv[1] : "--npu-arch=dav-2201";
    int n = argc > 2 ? atoi(argv[2]) : 64;
    aclrtcProg prog;
    aclrtcCreateProg(&prog, kSrc, "scale.asc", 0, nullptr, nullptr);
    aclrtcAddNameExpr(prog, "scale<float>");
    const char* opts[] = {arch};
    if (aclrtcCompileProg(prog, 1, opts) != ACL_SUCCESS) {
        size_t sz = 0;
        aclrtcGetCompileLogSize(prog, &sz);
        std::vector<char> log(sz);
        aclrtcGetCompileLog(prog, log.data());
        printf("compile error: %s", log.data());
        return 3;
    }
    size_t size = 0;
    aclrtcGetBinDataSize(prog, &size);
    std::vector<char> bin(size);
    aclrtcGetBinData(prog, bin.data());
    const char* lowered = nullptr;
    aclrtcGetLoweredName(prog, "scale<float>", &lowered);
    aclrtBinHandle h = nullptr;
    aclrtBinaryLoadFromData(bin.data(), size, nullptr, &h);
    aclrtFuncHandle scale = nullptr, hello = nullptr;
    aclrtBinaryGetFunction(h, lowered, &scale);
    aclrtBinaryGetFunction(h, "hello", &hello);
    float host[64];
    for (int i = 0; i < 64; ++i) host[i] = i;
    void *x = nullptr, *y = nullptr;
    aclrtMalloc(&x, sizeof(host), ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc(&y, sizeof(host), ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(x, sizeof(host), host, sizeof(host), ACL_MEMCPY_HOST_TO_DEVICE);
    int32_t k = 3;
    void* args[] = {&x, &y, &n, &k};
    aclrtLaunchKernelWithArgsArray(scale, 1, nullptr, nullptr, args);
    aclrtLaunchKernelWithArgsArray(hello, 2, nullptr, nullptr, nullptr);
    aclrtMemcpy(host, sizeof(host), y, sizeof(host), ACL_MEMCPY_DEVICE_TO_HOST);
    printf("y %g %g\n", host[1], host[63]);
    aclrtBinaryUnLoad(h);
    aclrtcDestroyProg(&prog);
    return 0;
}
"""


def test_rtc_compiles_loads_and_launches(tmp_path, capsys):
    (tmp_path / "rtc.cpp").write_text(_PROG)
    assert cli_main(["emu", "run", str(tmp_path / "rtc.cpp"), "--workdir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == ["hello 0", "hello 1", "y 3 189"]


def test_rtc_kernel_fault_and_wrong_arch(tmp_path, capsys):
    (tmp_path / "rtc.cpp").write_text(_PROG)
    # 20 floats = 80 B: a DataCopy that is not a multiple of 32 B stops the run (exit 1)
    assert cli_main(["emu", "run", str(tmp_path / "rtc.cpp"), "--workdir", str(tmp_path),
                     "--program-arg=--npu-arch=dav-2201", "--program-arg=20"]) == 1
    assert "kernel 'scale' line 13: DataCopy of 80 bytes is not a multiple of 32 B (use DataCopyPad) [block 0/1, scale.asc]" in capsys.readouterr().err
    assert cli_main(["emu", "run", str(tmp_path / "rtc.cpp"), "--workdir", str(tmp_path),
                     "--program-arg=--npu-arch=dav-3510"]) != 0   # the program's own exit status 3
    assert "compile error: aclrtcCompileProg: --npu-arch=dav-3510: this program is built for dav-2201" in \
        capsys.readouterr().out
