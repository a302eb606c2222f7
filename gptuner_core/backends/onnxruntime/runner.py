"""Running and timing an ONNX Runtime session on host arrays.

``time_calls`` uses IOBinding: :meth:`OrtRunner.prepare` wraps the inputs in ``OrtValue``s once and
pre-allocates the outputs (shapes from one real run), so each timed ``run_with_iobinding`` call is
the session's own work, with no per-call numpy -> OrtValue conversion or output allocation. That
per-call Python overhead is route-independent and would otherwise dilute the differences between
routes on small models (it is a sizeable share of a 0.05 ms MLP call). ``infer`` uses plain
``session.run`` and returns fresh arrays for the accuracy gate.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.backends._base import Runner
from gptuner_core.errors import BackendError


if TYPE_CHECKING:
    import numpy as np
    import onnxruntime as ort

    from gptuner_core.backends._base import TensorSpec


class OrtRunner(Runner):
    """A live ``InferenceSession`` with its input specs."""

    def __init__(self, session: ort.InferenceSession, inputs: list[TensorSpec]) -> None:
        self._session = session
        self._inputs = {s.name: s for s in inputs}
        self._output_names = [o.name for o in session.get_outputs()]
        self._binding: Any = None
        self._keep: list[Any] = []

    @property
    def session(self) -> ort.InferenceSession:
        return self._session

    def _check(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import numpy as np

        missing = [n for n in self._inputs if n not in feeds]
        unknown = [n for n in feeds if n not in self._inputs]
        if missing or unknown:
            msg = (
                f"inputs do not match the model: expected {list(self._inputs)}, got {list(feeds)}"
                + (f" (missing {missing})" if missing else "")
                + (f" (unknown {unknown})" if unknown else "")
            )
            raise BackendError(msg)
        out = {}
        for name, spec in self._inputs.items():
            arr = np.asarray(feeds[name])
            if str(arr.dtype) != spec.dtype:
                msg = f"input '{name}': dtype {arr.dtype} does not match the model (expected {spec.dtype})"
                raise BackendError(msg)
            bad_rank = len(arr.shape) != len(spec.shape)
            bad_dim = any(
                isinstance(want, int) and want != got
                for want, got in zip(spec.shape, arr.shape, strict=False)
            )
            if bad_rank or bad_dim:
                msg = (
                    f"input '{name}': shape {tuple(arr.shape)} does not match the model "
                    f"(expected {spec.shape}, None/str = any size)"
                )
                raise BackendError(msg)
            out[name] = np.ascontiguousarray(arr).reshape(arr.shape)  # keeps scalars rank 0
        return out

    def infer(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        checked = self._check(feeds)
        try:
            outs = self._session.run(self._output_names, checked)
        except Exception as exc:
            msg = f"ONNX Runtime failed to run the model: {type(exc).__name__}: {str(exc)[:400]}"
            raise BackendError(msg) from None
        return dict(zip(self._output_names, outs, strict=True))

    def _prepare(self, feeds: dict[str, np.ndarray]) -> None:
        import numpy as np
        import onnxruntime as ort

        checked = self._check(feeds)
        first = self.infer(checked)
        binding = self._session.io_binding()
        keep: list[Any] = []
        for name, arr in checked.items():
            value = ort.OrtValue.ortvalue_from_numpy(arr)
            binding.bind_ortvalue_input(name, value)
            keep.append(value)
        for name, arr in first.items():
            value = ort.OrtValue.ortvalue_from_numpy(np.empty_like(arr))
            binding.bind_ortvalue_output(name, value)
            keep.append(value)
        self._binding, self._keep = binding, keep

    def _time_calls(self, n: int) -> int:
        run, binding = self._session.run_with_iobinding, self._binding
        t0 = time.perf_counter_ns()
        for _ in range(n):
            run(binding)
        return time.perf_counter_ns() - t0

    def close(self) -> None:
        self._binding = None
        self._keep = []
        self._session = None  # type: ignore[assignment]
