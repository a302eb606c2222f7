"""ONNX Runtime's quantization pre-processing, applied before every quantization by default.

``onnxruntime.quantization.quant_pre_process`` folds constants, runs shape inference and ORT's
basic graph optimizations. Exports that store weights as ``Constant`` nodes (paddle2onnx: every
PP-OCR model) cannot be quantized without it: ``quantize_dynamic`` fails with "Expected
conv2d_157.w_0 to be an initializer" and QOperator with "'NoneType' object has no attribute
'data_type'". After it, the weights are initializers and both work.

ORT's symbolic shape inference fails on many real models ("Incomplete symbolic shape inference":
PP-OCR, MiniLM); the step then retries without it (ONNX shape inference + optimization only).
The result is cached beside the transformed models, keyed by the source model's hash.
The knob ``-quant:preprocess=off`` quantizes the model as exported.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.errors import BackendError


if TYPE_CHECKING:
    from collections.abc import Iterator
    from collections.abc import Sequence


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def preprocessed(model_path: Path, model_sha: str, cache_dir: Path) -> Path:
    """The pre-processed model (cached); raise BackendError when both attempts fail."""
    from onnxruntime.quantization import quant_pre_process

    dst = cache_dir / f"{model_sha[:24]}.pre.onnx"
    if dst.is_file():
        return dst
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f"{model_sha[:24]}.{os.getpid()}.pre.tmp.onnx"
    errors = []
    for skip_symbolic in (False, True):
        try:
            # ORT writes 'sym_shape_infer_temp.onnx' into the working directory when symbolic
            # shape inference is incomplete: run it from a scratch directory
            with tempfile.TemporaryDirectory(dir=cache_dir) as scratch, _cwd(Path(scratch)):
                quant_pre_process(
                    str(model_path.resolve()), str(tmp.resolve()), skip_symbolic_shape=skip_symbolic
                )
        except Exception as exc:  # noqa: BLE001 - reported below
            tmp.unlink(missing_ok=True)
            errors.append(f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}")
            continue
        os.replace(tmp, dst)
        return dst
    msg = (
        f"quantization pre-processing (onnxruntime quant_pre_process) failed on "
        f"'{model_path.name}' ({'; then without symbolic shape inference: '.join(errors)}); "
        "use -quant:preprocess=off to quantize the model as exported"
    )
    raise BackendError(msg)


def check_excluded_nodes(path: Path, excluded: Sequence[str]) -> None:
    """Refuse node exclusions whose node pre-processing removed or renamed (they would be ignored
    silently, quantizing a node the route keeps in fp32)."""
    if not excluded:
        return
    import onnx

    from gptuner_core.backends.onnxruntime.model import iter_nodes

    names = {n.name for n in iter_nodes(onnx.load(str(path), load_external_data=False))}
    gone = [n for n in excluded if n not in names]
    if gone:
        msg = (
            f"quantization pre-processing fused or renamed node(s) {gone}, so the route cannot "
            "keep them in fp32; use -quant:preprocess=off with these -quant:node: knobs"
        )
        raise BackendError(msg)
