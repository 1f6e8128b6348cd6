"""`python -m models build --resolution`: the OCR-style detector at 960 x 960 (issue 30), bad values refused."""

import onnx
import pytest

import models
from models.__main__ import main


def test_detector_at_960(tmp_path, capsys):
    out = tmp_path / "det.onnx"
    assert main(["build", "ocr_detector", "--resolution", "960", "-o", str(out)]) == 0
    m = onnx.shape_inference.infer_shapes(onnx.load(out), strict_mode=True)
    dims = lambda vi: [d.dim_value for d in vi.type.tensor_type.shape.dim]   # noqa: E731
    assert dims(m.graph.input[0]) == [1, 3, 960, 960] and dims(m.graph.output[0]) == [1, 1, 960, 960]


@pytest.mark.parametrize("argv, msg", [
    (["ocr_detector", "--resolution", "950"], "multiple of 16"),
    (["ocr_detector", "--resolution", "0"], "multiple of 16"),
    (["dwsep", "--resolution", "64"], "does not take --resolution"),
])
def test_bad_resolution_is_one_line_error(tmp_path, capsys, argv, msg):
    assert main(["build", *argv, "-o", str(tmp_path / "x.onnx")]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1 and not (tmp_path / "x.onnx").exists()


def test_builder_refuses_misaligned_resolution():
    with pytest.raises(ValueError, match="multiple of 16"):
        models.ocr_detector(resolution=100)
