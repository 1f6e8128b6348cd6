"""Program-level devkit names: AscendC::printf declared as the devkit's variadic template (a host
printf in a file with `using namespace AscendC` stays the C library's), half arguments printed as
numbers, convert_from_bytes (AOT constant tilings) and ACL_ERROR_NONE."""

from __future__ import annotations

from fusion.cli.main import main as cli_main

_PROG = r"""
#include "acl/acl.h"
#include "kernel_operator.h"
using namespace AscendC;
struct Tiling { int32_t m, n; };
static constexpr uint8_t kBytes[] = {3, 0, 0, 0, 5, 0, 0, 0};
template <class T> struct Holder { static constexpr T value = convert_from_bytes<T>(kBytes); };
static_assert(Holder<Tiling>::value.m == 3 && Holder<Tiling>::value.n == 5);
__global__ __vector__ void say(int32_t k)
{
    half h = static_cast<half>(1.5f);
    printf("block %d k %d h %.2f\n", (int)GetBlockIdx(), k, h);
}
int main()
{
    if (aclInit(nullptr) != ACL_ERROR_NONE) return 1;
    say<<<2, nullptr, nullptr>>>(Holder<Tiling>::value.m);
    printf("host done\n");
    return 0;
}
"""


def test_printf_overloads_and_aot_bytes(tmp_path, capsys):
    (tmp_path / "p.asc").write_text(_PROG)
    assert cli_main(["emu", "run", str(tmp_path / "p.asc"), "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["block 0 k 3 h 1.50", "block 1 k 3 h 1.50", "host done"], out
