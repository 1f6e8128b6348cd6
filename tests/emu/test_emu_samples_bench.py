"""benchmarks/emu_samples.py on a devkit-style sample of our own: the README's run block, the
CMake cache defaults as -D definitions, the sample's own generator and verifier, exclusions."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("emu_samples", ROOT / "benchmarks" / "emu_samples.py")
emu_samples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(emu_samples)

_CMAKE = """cmake_minimum_required(VERSION 3.16)
set(SCENARIO_NUM "1" CACHE STRING "Scenario number")
add_definitions(-DSCENARIO_NUM=${SCENARIO_NUM})
add_executable(demo scale.asc)
"""

_README = """# scale
## 支持的产品
| Atlas A2 训练系列产品 | >= CANN 9.0.0 |
## 编译运行
```bash
SCENARIO_NUM=2
mkdir -p build && cd build;
cmake .. -DCMAKE_ASC_ARCHITECTURES=dav-2201 -DSCENARIO_NUM=$SCENARIO_NUM;make -j;
python3 ../scripts/gen_data.py -scenarioNum $SCENARIO_NUM
./demo
python3 ../scripts/verify_result.py output/output.bin output/golden.bin
```
"""

_ASC = r"""
#include <fstream>
#include <vector>
#include "acl/acl.h"
__global__ __vector__ void scale(GM_ADDR x, GM_ADDR y)
{
    for (int i = 0; i < 64; ++i) ((__gm__ float*)y)[i] = ((__gm__ float*)x)[i] * SCENARIO_NUM;
}
int main()
{
    std::vector<float> h(64);
    std::ifstream("input/x.bin", std::ios::binary).read((char*)h.data(), 256);
    uint8_t *x, *y;
    aclrtMalloc((void**)&x, 256, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&y, 256, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(x, 256, h.data(), 256, ACL_MEMCPY_HOST_TO_DEVICE);
    scale<<<1, nullptr, nullptr>>>(x, y);
    aclrtMemcpy(h.data(), 256, y, 256, ACL_MEMCPY_DEVICE_TO_HOST);
    std::ofstream("output/output.bin", std::ios::binary).write((char*)h.data(), 256);
    return 0;
}
"""

_GEN = """import os, sys
import numpy as np
n = int(sys.argv[2])
os.makedirs("input", exist_ok=True); os.makedirs("output", exist_ok=True)
x = np.arange(64, dtype=np.float32)
x.tofile("input/x.bin"); (x * n).tofile("output/golden.bin")
"""

_VERIFY = """import sys
import numpy as np
ok = np.array_equal(np.fromfile(sys.argv[1], np.float32), np.fromfile(sys.argv[2], np.float32))
print("test pass!" if ok else "[ERROR] result error")
"""


def _sample(root: Path) -> Path:
    s = root / "examples" / "01_simd_cpp_api" / "03_basic_api" / "scale"
    (s / "scripts").mkdir(parents=True)
    (s / "CMakeLists.txt").write_text(_CMAKE)
    (s / "README.md").write_text(_README)
    (s / "scale.asc").write_text(_ASC)
    (s / "scripts" / "gen_data.py").write_text(_GEN)
    (s / "scripts" / "verify_result.py").write_text(_VERIFY)
    return s


def test_plan_reads_readme_and_cmake(tmp_path):
    p = emu_samples.plan(_sample(tmp_path))
    assert p["sources"] == ["scale.asc"] and p["defines"] == ["-DSCENARIO_NUM=2"]
    assert p["gen"] == ["python3", "../scripts/gen_data.py", "-scenarioNum", "2"]
    assert p["verify"][-2:] == ["output/output.bin", "output/golden.bin"]


def test_sample_passes_with_its_own_generator_and_verifier(tmp_path):
    s = _sample(tmp_path)
    res = emu_samples.run_sample(s, s.relative_to(tmp_path), "ascend910b2", 60)
    assert res["verdict"] == "pass" and res["how"] == "sample's verifier", res


def test_wrong_result_is_a_fail_and_950_only_is_excluded(tmp_path):
    s = _sample(tmp_path)
    (s / "scripts" / "gen_data.py").write_text(_GEN.replace("(x * n)", "(x * n + 1)"))
    assert emu_samples.run_sample(s, s.relative_to(tmp_path), "ascend910b2", 60)["verdict"] == "fail"
    (s / "README.md").write_text(_README.replace("Atlas A2 训练系列产品", "Ascend 950PR"))
    res = emu_samples.run_sample(s, s.relative_to(tmp_path), "ascend910b2", 60)
    assert res == {"sample": str(s.relative_to(tmp_path)), "verdict": "excluded", "reason": "Ascend 950 only"}


def test_plan_evaluates_string_regex_match(tmp_path):
    s = _sample(tmp_path)
    (s / "CMakeLists.txt").write_text(_CMAKE + 'string(REGEX MATCH "([0-9]+)" ARCH_NUM "${CMAKE_ASC_ARCHITECTURES}")\n'
                                      "add_definitions(-DASC_ARCHITECTURES=${ARCH_NUM})\n")
    assert emu_samples.plan(s)["defines"] == ["-DSCENARIO_NUM=2", "-DASC_ARCHITECTURES=2201"]


def test_exported_readme_variable_is_substituted(tmp_path):
    s = _sample(tmp_path)
    (s / "README.md").write_text(_README.replace("SCENARIO_NUM=2\n", "export SCENARIO_NUM=3   # 1-3\n"))
    p = emu_samples.plan(s)
    assert p["gen"][-2:] == ["-scenarioNum", "3"] and p["defines"] == ["-DSCENARIO_NUM=3"]


def test_dav3510_only_cmake_without_product_section_is_excluded(tmp_path):
    s = _sample(tmp_path)
    (s / "CMakeLists.txt").write_text('set(CMAKE_ASC_ARCHITECTURES "dav-3510" CACHE STRING "arch")\n' + _CMAKE)
    no_products = "# scale\nAtlas A2 系列产品中多个读操作同时访问同一个bank group就会引发冲突。\n" + \
        _README.split("## 支持的产品\n| Atlas A2 训练系列产品 | >= CANN 9.0.0 |\n")[1].replace(
            "-DCMAKE_ASC_ARCHITECTURES=dav-2201 ", "")
    (s / "README.md").write_text(no_products)
    p = emu_samples.plan(s)
    assert emu_samples.excluded(s.relative_to(tmp_path), p) == "Ascend 950 only"
    (s / "README.md").write_text(_README.replace("-DCMAKE_ASC_ARCHITECTURES=dav-2201 ", ""))  # A2 product listed
    assert emu_samples.excluded(s.relative_to(tmp_path), emu_samples.plan(s)) is None


def test_kernel_assert_stops_the_kernel_and_matches_a_readme_expected_assertion(tmp_path):
    """A kernel `assert` that fails is the kernel's error at its line (not a SIGABRT of the run);
    a README that shows that very assertion failing as the sample's result makes it a pass."""
    s = _sample(tmp_path)
    (s / "scale.asc").write_text("#include <cassert>\n#include \"kernel_operator.h\"\n" + _ASC.replace(
        "    for (int i", '    assert(SCENARIO_NUM < 2 && "scenario too large");\n    for (int i'))
    res = emu_samples.run_sample(s, s.relative_to(tmp_path), "ascend910b2", 60)
    assert res["verdict"] == "refused", res
    assert res["reason"].endswith("line 9: Assertion `SCENARIO_NUM < 2 && \"scenario too large\"' failed "
                                  "[block 0/1, scale.asc]"), res
    (s / "README.md").write_text(_README + "\n```\n[ASSERT] scale.asc:9: Assertion `SCENARIO_NUM < 2 && "
                                 "\"scenario too large\"' failed.\n```\n")
    assert emu_samples.run_sample(s, s.relative_to(tmp_path), "ascend910b2", 60)["verdict"] == "pass"


_HELLO = r"""
#include "acl/acl.h"
#include "utils/debug/asc_printf.h"
__global__ __vector__ void hello() { printf("Hello %d\n", (int)AscendC::GetBlockIdx() / 2); }
int main()
{
    hello<<<4, nullptr, nullptr>>>();
    return 0;
}
"""


def test_readme_expected_output_is_the_check_of_a_sample_without_verifier(tmp_path):
    """No verifier, no pass line: the README's expected-result block is compared line by line
    (as a multiset, the device printf's core tag ignored); a missing line is a fail."""
    s = tmp_path / "examples" / "01_simd_cpp_api" / "00_introduction" / "hello"
    s.mkdir(parents=True)
    (s / "CMakeLists.txt").write_text("add_executable(demo hello.asc)\n")
    (s / "hello.asc").write_text(_HELLO)
    block = "\n".join(f"  [AIV Block {b}/4] Hello {b // 2}" for b in range(4))
    readme = ("# hello\n## 支持的产品\n| Atlas A2 训练系列产品 | >= CANN 9.0.0 |\n```bash\nmkdir -p build && cd build;\n"
              "cmake ..;make -j;\n./demo\n```\n- 执行结果\n  执行结果如下。\n  ```bash\n" + block + "\n  ```\n")
    (s / "README.md").write_text(readme)
    assert emu_samples.expected_output(readme)[0] == "[AIV Block 0/4] Hello 0"
    res = emu_samples.run_sample(s, s.relative_to(tmp_path), "ascend910b2", 60)
    assert res["verdict"] == "pass" and res["how"] == "the README's expected output (4 lines)", res
    (s / "README.md").write_text(readme.replace("Block 3/4] Hello 1", "Block 3/4] Hello 2"))
    res = emu_samples.run_sample(s, s.relative_to(tmp_path), "ascend910b2", 60)
    assert res["verdict"] == "fail" and "'[AIV Block 3/4] Hello 2'" in res["reason"], res


def test_quoted_definition_and_the_910b_arch_for_an_a2_sample(tmp_path):
    """A string definition keeps its quotes; a README that builds for dav-3510 in its example
    while listing A2 products is built for dav-2201 (the emulated SoC), not excluded."""
    s = _sample(tmp_path)
    (s / "CMakeLists.txt").write_text(_CMAKE + 'target_compile_definitions(demo PRIVATE ARCH_NAME="${CMAKE_ASC_ARCHITECTURES}")\n')
    (s / "README.md").write_text(_README.replace("-DCMAKE_ASC_ARCHITECTURES=dav-2201", "-DCMAKE_ASC_ARCHITECTURES=dav-3510"))
    p = emu_samples.plan(s)
    assert '-DARCH_NAME="dav-2201"' in p["defines"] and p["arch"] == "dav-3510"
    assert emu_samples.excluded(s.relative_to(tmp_path), p) is None


def test_cmake_numeric_conditions_and_the_910b_architecture(tmp_path):
    # if (MODE EQUAL 1) ... else(): the sample's README picks MODE 0, so only the else branch's
    # definition is passed; the README builds for dav-3510 but the CMake offers dav-2201, which
    # is what the 910B2 benchmark emulates
    assert emu_samples._cond_true("MODE EQUAL 1", {"MODE": "0"}) is False
    assert emu_samples._cond_true("MODE EQUAL 1", {"MODE": "1"}) is True
    assert emu_samples._cond_true("N GREATER 4", {"N": "abc"}) is False
    assert emu_samples._cond_true("N LESS 4", {}) is None
    cmake = ('set(CMAKE_ASC_ARCHITECTURES "dav-3510" CACHE STRING "NPU architecture: dav-2201, dav-3510")\n'
             'if (MODE EQUAL 1)\n  add_definitions(-DLOWER)\nelse()\n  add_definitions(-DUPPER)\nendif()\n'
             'if(CMAKE_ASC_ARCHITECTURES STREQUAL "dav-2201")\n  add_definitions(-DARCH=2201)\nendif()\n'
             "add_executable(demo k.asc)\n")
    readme = ("# k\n## 支持的产品\n| Atlas A2 训练系列产品 |\n```bash\n"
              "cmake .. -DCMAKE_ASC_ARCHITECTURES=dav-3510 -DMODE=0;make -j;\n./demo\n```\n")
    (tmp_path / "CMakeLists.txt").write_text(cmake)
    (tmp_path / "README.md").write_text(readme)
    (tmp_path / "k.asc").write_text("")
    p = emu_samples.plan(tmp_path)
    assert p["defines"] == ["-DUPPER", "-DARCH=2201"], p["defines"]
