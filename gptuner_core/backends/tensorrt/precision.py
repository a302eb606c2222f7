"""Precision knobs for TensorRT 11, applied as ONNX transforms before parsing.

TensorRT 11 networks are always strongly typed: ``BuilderFlag.FP16``/``INT8`` are gone and the
precision comes from the graph (Cast nodes, typed initializers, explicit Q/DQ; reference §6). So
gptuner's own knob ``-gptuner:precision`` rewrites the ONNX model and TensorRT builds what it is
given:

* ``fp32``: the model as is;
* ``fp16``: float tensors and initializers to float16, graph inputs/outputs kept float32
  (Cast nodes at the boundary), like ModelOpt AutoCast with ``keep_io_types=True``;
* ``int8_qdq``: explicit Q/DQ from static calibration on the study's inputs, with *symmetric*
  int8 activations and weights (TensorRT's explicit quantization needs zero points of 0).

``fp16`` reuses the ONNX Runtime backend's transform (``backends/onnxruntime/transforms.py``,
``apply_transform`` with ``TransformParams(fp16=True)``). ``int8_qdq`` calls
``onnxruntime.quantization.quantize_static`` directly, because TensorRT needs *symmetric*
activations (``ActivationSymmetric``), which the ONNX Runtime backend's parameters do not expose.
Both run on the CPU, so they are unit-tested here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import BackendError
from gptuner_core.knobs import Knob


if TYPE_CHECKING:
    import numpy as np


OWN_PREFIX = "-gptuner:"
PRECISION = "-gptuner:precision"
PRECISION_VALUES = ("fp32", "fp16", "int8_qdq")

PRECISION_KNOB = Knob(
    name=PRECISION,
    values=PRECISION_VALUES,
    default="fp32",
    help=(
        "gptuner: network precision as an ONNX transform (TensorRT 11 is strongly typed). "
        "fp32: unchanged; fp16: float16 inside, float32 I/O; int8_qdq: symmetric int8 Q/DQ "
        "calibrated on the study's inputs."
    ),
    allowed_text=f"{PRECISION}=[{'|'.join(PRECISION_VALUES)}]",
)


def own_knobs() -> list[Knob]:
    return [PRECISION_KNOB]


class _Reader:
    """``onnxruntime.quantization.CalibrationDataReader`` over named arrays, one row at a time."""

    def __init__(self, calibration: dict[str, np.ndarray]) -> None:
        self._n = min(len(a) for a in calibration.values())
        self._data = calibration
        self._i = 0

    def get_next(self) -> dict[str, Any] | None:
        if self._i >= self._n:
            return None
        row = {k: v[self._i : self._i + 1] for k, v in self._data.items()}
        self._i += 1
        return row

    def rewind(self) -> None:
        self._i = 0


def to_fp16(model: Path, out: Path) -> Path:
    """Reuses the ONNX Runtime backend's fp16 transform (``keep_io_types=True``), written to ``out``."""
    import hashlib
    import shutil

    import onnx

    from gptuner_core.backends.onnxruntime.transforms import TransformParams
    from gptuner_core.backends.onnxruntime.transforms import apply_transform

    m = onnx.load(str(model))
    sha = hashlib.sha256(model.read_bytes()).hexdigest()
    outcome = apply_transform(model, m, sha, TransformParams(fp16=True), out.parent / "transforms", None)
    shutil.copyfile(outcome.path, out)
    return out


def to_int8_qdq(model: Path, out: Path, calibration: dict[str, np.ndarray] | None) -> Path:
    if not calibration:
        msg = (
            f"{PRECISION}=int8_qdq needs calibration inputs (the study's dataset), got none; "
            "give the study a dataset or use fp32/fp16"
        )
        raise BackendError(msg)
    from onnxruntime.quantization import CalibrationDataReader
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_static

    class Reader(_Reader, CalibrationDataReader):
        pass

    quantize_static(
        str(model),
        str(out),
        Reader(calibration),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
        per_channel=True,
        extra_options={"ActivationSymmetric": True, "WeightSymmetric": True},
    )
    return out


def apply_precision(
    model: Path,
    value: str,
    workdir: Path,
    calibration: dict[str, np.ndarray] | None = None,
) -> Path:
    """The ONNX file TensorRT should parse for ``-gptuner:precision=<value>``."""
    if value == "fp32":
        return model
    if value not in PRECISION_VALUES:
        msg = f"Invalid value for knob: {PRECISION}={value} (allowed: [{'|'.join(PRECISION_VALUES)}])"
        raise BackendError(msg)
    out = workdir / f"model.{value}.onnx"  # build.converted_model_path
    try:
        if value == "fp16":
            return to_fp16(model, out)
        return to_int8_qdq(model, out, calibration)
    except BackendError:
        raise
    except Exception as exc:
        msg = f"precision transform {PRECISION}={value} failed on '{model}': {type(exc).__name__}: {exc}"
        raise BackendError(msg) from None
