"""trtexec-style shape options, batch axes and value ranges as typed records."""

from __future__ import annotations

import pytest

from gptuner_core.backends._base import TensorSpec
from gptuner_core.errors import DatasetError
from gptuner_core.shapes import ShapeSpec
from gptuner_core.shapes import ValueRange
from gptuner_core.shapes import default_batch_axes
from gptuner_core.shapes import input_specs
from gptuner_core.shapes import parse_batch_axes
from gptuner_core.shapes import parse_profile
from gptuner_core.shapes import parse_shapes
from gptuner_core.shapes import parse_value_ranges


class TestParse:
    """The text forms."""

    def test_shapes_like_trtexec(self) -> None:
        """``name:1x3x224x224``, names with colons, scalars."""
        assert parse_shapes("x:1x3x224x224,input:0:2x4,sr:,k:scalar") == {
            "x": (1, 3, 224, 224), "input:0": (2, 4), "sr": (), "k": (),
        }
        with pytest.raises(DatasetError, match=r"shape '1x3xa' of input 'x' is not DIMxDIMx"):
            parse_shapes("x:1x3xa")
        with pytest.raises(DatasetError, match=r"'x' is not NAME:VALUE"):
            parse_shapes("x")

    def test_profile(self) -> None:
        """--shapes is static; min/max default to opt; order min <= opt <= max."""
        prof = parse_profile(shapes="a:1x4", opt_shapes="b:8x16", max_shapes="b:32x16")
        assert prof["a"] == ShapeSpec(name="a", min=(1, 4), opt=(1, 4), max=(1, 4))
        assert prof["b"] == ShapeSpec(name="b", min=(8, 16), opt=(8, 16), max=(32, 16))
        with pytest.raises(DatasetError, match="no --optShapes entry"):
            parse_profile(min_shapes="b:1x16")
        with pytest.raises(DatasetError, match="min <= opt <= max"):
            parse_profile(min_shapes="b:9x16", opt_shapes="b:8x16")
        with pytest.raises(DatasetError, match="in --shapes and in"):
            parse_profile(shapes="b:1x2", opt_shapes="b:1x2")

    def test_axes_and_ranges(self) -> None:
        assert parse_batch_axes("state:1,sr:none") == {"state": 1, "sr": None}
        assert parse_value_ranges("ids:0..30522,sr:16000,x:-1.5..2") == {
            "ids": ValueRange(low=0, high=30522), "sr": ValueRange(low=16000),
            "x": ValueRange(low=-1.5, high=2),
        }
        with pytest.raises(DatasetError, match="value range 5..5 is empty"):
            parse_value_ranges("ids:5..5")
        with pytest.raises(DatasetError, match="must be an axis >= 0 or 'none'"):
            parse_batch_axes("state:-1")


class TestDefaults:
    """Default batch axes from the model's declared shapes."""

    def test_named_and_anonymous(self) -> None:
        specs = [
            TensorSpec(name="x", dtype="float32", shape=("batch", 8)),
            TensorSpec(name="h", dtype="float32", shape=(2, "batch", 16)),
            TensorSpec(name="fixed_seq", dtype="int64", shape=(1, "seq")),
            TensorSpec(name="k", dtype="int64", shape=()),
        ]
        assert default_batch_axes(specs) == {"x": 0, "h": 1, "fixed_seq": 0, "k": None}
        # a fixed-batch model with an unnamed sequence stays batched along axis 0
        assert default_batch_axes([TensorSpec(name="t", dtype="int64", shape=(1, None))]) == {"t": 0}

    def test_shape_override_checked(self) -> None:
        spec = TensorSpec(name="x", dtype="float32", shape=(None, 3, None, None))
        (got,) = input_specs([spec], shapes={"x": (1, 3, 48, 192)})
        assert got.shape_override == (1, 3, 48, 192)
        with pytest.raises(DatasetError, match=r"axis 1: fixed at 3"):
            input_specs([spec], shapes={"x": (1, 4, 48, 192)})
        with pytest.raises(DatasetError, match="rank 2"):
            input_specs([spec], shapes={"x": (1, 4)})


def test_stack_outputs_along_each_outputs_batch_axis() -> None:
    """Per-batch outputs are joined along the axis that holds the rows (stateN: axis 1)."""
    import numpy as np

    from gptuner_core.shapes import stack_outputs

    batches = [
        {"output": np.zeros((4, 1)), "stateN": np.zeros((2, 4, 128)), "k": np.ones(3)},
        {"output": np.ones((2, 1)), "stateN": np.ones((2, 2, 128)), "k": np.ones(3)},
    ]
    out = stack_outputs(batches, [4, 2])
    assert out["output"].shape == (6, 1) and out["stateN"].shape == (2, 6, 128)
    assert out["stateN"][:, 4:].min() == 1.0
    assert out["k"].shape == (2, 3)  # no row axis: one entry per batch
