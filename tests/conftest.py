import os
import tempfile

os.environ.setdefault("TVM_NUM_THREADS", "2")
# Never let a user's tuning database steer the tests' tile choices.
os.environ["MEGAFUSE_TUNING_DB"] = os.path.join(tempfile.mkdtemp(prefix="megafuse-test-db-"), "tuning.jsonl")


import onnx  # noqa: E402
import pytest  # noqa: E402

import factories  # noqa: E402  (tests/factories.py: graphs, SoCs, plans shared by the test modules)


@pytest.fixture(scope="module")
def block_path(tmp_path_factory):
    """A small DW-separable block (32 -> 64 @28, fp32) as an ONNX file, for command-line tests."""
    import models

    p = tmp_path_factory.mktemp("m") / "block.onnx"
    onnx.save(models.dwsep_block(cin=32, cout=64, h=28), p)
    return str(p)


@pytest.fixture(scope="module")
def v2_56(tmp_path_factory):
    """MobileNetV2 at 56 px, width 0.35, whole (tests/driver: chains with GEMM stages): b3/b4's
    expansions run at 14 x 14 (196 pixels, not a multiple of 16), so standalone their stages keep the
    identity-DW copy; b2's (28 x 28) is gemm_only; its late expansions and head run at 4 x 4 and 2 x 2."""
    from models.mobilenet import mobilenet_v2

    p = tmp_path_factory.mktemp("v2s56") / "v2s56.onnx"
    onnx.save(mobilenet_v2(resolution=56, width=0.35), p)
    return str(p)


def run_cli(capsys, *argv):
    """(exit code, stdout, stderr) of `megafuse ARGV`."""
    from fusion.cli.main import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def emu_cache(tmp_path_factory):
    """One emulator build cache per test module: hermetic, and each kernel compiles once."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEGAFUSE_CACHE_DIR", str(tmp_path_factory.mktemp("megafuse-cache")))
        yield


@pytest.fixture(params=["ascend910b2", "ascend310p3"])
def each_soc(request):
    """Each SoC of the table in turn (factories.B910, factories.P310)."""
    return {"ascend910b2": factories.B910, "ascend310p3": factories.P310}[request.param]

