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

