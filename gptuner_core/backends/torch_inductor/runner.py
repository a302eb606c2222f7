"""Run a ``torch.compile``d module on numpy feeds and time it.

* :meth:`TorchRunner.infer` converts numpy arrays to tensors on the device (floating inputs in the
  route's precision), runs, and returns float32 numpy outputs (half/bfloat16 outputs are cast
  back). The module was compiled for static shapes (``dynamic=False``); a batch of another size is
  cut into chunks of the compiled batch, the last chunk padded by repeating its last row and the
  padding dropped from the outputs, so accuracy evaluation over a data set with a partial last
  batch never triggers a recompile. This assumes batch-first inputs whose rows are independent
  (an inference model). Feeds whose shapes match no compiled batch layout are run as they are
  (Dynamo compiles another specialization).
* :meth:`TorchRunner.prepare` copies the inputs to the device once and runs them (a new shape
  compiles there, never inside timing); :meth:`TorchRunner.time_calls` runs them ``n`` times
  back-to-back, timed with CUDA events on a GPU and ``perf_counter_ns`` on the CPU.
* :meth:`TorchRunner.telemetry` reads the GPU through the measurement layer's
  :func:`gptuner_core.measurement.telemetry.gpu_telemetry` (NVML), mapped from the CUDA device
  index to the NVML index through ``CUDA_VISIBLE_DEVICES``.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.backends._base import Runner
from gptuner_core.backends.torch_inductor.model import flatten_outputs
from gptuner_core.errors import BackendError


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.backends.torch_inductor.build import CompiledModel


def nvml_index(cuda_index: int) -> int:
    """NVML index of CUDA device ``cuda_index`` (honours integer ``CUDA_VISIBLE_DEVICES``)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if not visible:
        return cuda_index
    parts = [p.strip() for p in visible.split(",") if p.strip()]
    if cuda_index < len(parts) and parts[cuda_index].isdigit():
        return int(parts[cuda_index])
    return cuda_index


class TorchRunner(Runner):
    """A compiled module from :mod:`gptuner_core.backends.torch_inductor.build`."""

    def __init__(self, compiled: CompiledModel) -> None:
        import torch

        self._torch = torch
        self.compiled = compiled
        self._prepared: tuple[Any, ...] | None = None
        self._batch = compiled.example_shapes[0][0] if compiled.example_shapes[0] else None
        self.identity = compiled.identity

    # -- conversion -------------------------------------------------------------------------
    def _tensors(self, feeds: dict[str, np.ndarray]) -> tuple[Any, ...]:
        import numpy as np

        c = self.compiled
        missing = [n for n in c.input_names if n not in feeds]
        if missing:
            msg = (
                f"torch backend: feeds lack input(s) {missing} "
                f"(expected {list(c.input_names)}, got {sorted(feeds)})"
            )
            raise BackendError(msg)
        out = []
        for name, dtype in zip(c.input_names, c.input_dtypes, strict=True):
            t = self._torch.from_numpy(np.ascontiguousarray(feeds[name])).to(dtype=dtype)
            if t.is_floating_point():
                t = t.to(dtype=c.compute_dtype)
            out.append(t.to(device=c.device))
        return tuple(out)

    def _call(self, inputs: tuple[Any, ...]) -> Any:
        """One untimed call, with the route's Inductor config in force in case it compiles."""
        from torch._inductor import config as inductor_config

        torch = self._torch
        self.compiled.switch.live = True  # loaded ahead without running: the first run is here
        if self.compiled.cudagraphs:
            torch.compiler.cudagraph_mark_step_begin()
        with inductor_config.patch(self.compiled.options), torch.no_grad():
            return self.compiled.fn(*inputs)

    def _host(self, tensors: list[Any]) -> list[np.ndarray]:
        torch = self._torch
        out = []
        for t in tensors:
            t = t.detach()
            if t.dtype in (torch.float16, torch.bfloat16):
                t = t.to(torch.float32)
            out.append(t.cpu().numpy().copy())
        return out

    def _run_exact(self, inputs: tuple[Any, ...]) -> list[np.ndarray]:
        shapes = tuple(tuple(t.shape) for t in inputs)
        names, tensors = flatten_outputs(self._call(inputs))
        self.compiled.compiled_shapes.add(shapes)
        return self._host(tensors)

    def _chunkable(self, inputs: tuple[Any, ...]) -> bool:
        example = self.compiled.example_shapes
        if self._batch is None or any(len(t.shape) == 0 for t in inputs):
            return False
        n = inputs[0].shape[0]
        return all(
            t.shape[0] == n and tuple(t.shape[1:]) == tuple(e[1:]) and len(e) > 0 and e[0] == self._batch
            for t, e in zip(inputs, example, strict=True)
        )

    # -- Runner contract ----------------------------------------------------------------------
    def infer(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import numpy as np

        inputs = self._tensors(feeds)
        shapes = tuple(tuple(t.shape) for t in inputs)
        names = self.compiled.output_names
        if shapes in self.compiled.compiled_shapes or not self._chunkable(inputs):
            return dict(zip(names, self._run_exact(inputs), strict=True))
        n, b = inputs[0].shape[0], self._batch
        pieces: list[list[np.ndarray]] = []
        for start in range(0, n, b):
            chunk = [t[start : start + b] for t in inputs]
            rows = chunk[0].shape[0]
            if rows < b:
                chunk = [
                    self._torch.cat([c, c[-1:].expand(b - rows, *c.shape[1:])], dim=0)
                    for c in chunk
                ]
            outs = self._run_exact(tuple(c.contiguous() for c in chunk))
            pieces.append([o[:rows] for o in outs])
        return {
            name: np.concatenate([p[i] for p in pieces], axis=0) for i, name in enumerate(names)
        }

    def _prepare(self, feeds: dict[str, np.ndarray]) -> None:
        inputs = self._tensors(feeds)
        self._run_exact(inputs)  # compiles a new shape here, outside timing
        self._prepared = inputs
        self._synchronize()

    def _synchronize(self) -> None:
        if self.compiled.device.type == "cuda":
            self._torch.cuda.synchronize(self.compiled.device)

    def _time_calls(self, n: int) -> int:
        torch = self._torch
        inputs = self._prepared
        fn = self.compiled.fn
        mark = torch.compiler.cudagraph_mark_step_begin if self.compiled.cudagraphs else None
        with torch.no_grad():
            if self.compiled.device.type == "cuda":
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(n):
                    if mark is not None:
                        mark()
                    fn(*inputs)
                end.record()
                end.synchronize()
                return int(round(start.elapsed_time(end) * 1e6))
            t0 = time.perf_counter_ns()
            for _ in range(n):
                fn(*inputs)
            return time.perf_counter_ns() - t0

    def telemetry(self) -> dict[str, Any]:
        device = self.compiled.device
        if device.type != "cuda":
            return {"device": str(device), "threads": self._torch.get_num_threads()}
        from gptuner_core.measurement.telemetry import gpu_telemetry

        index = device.index or 0
        torch = self._torch
        return {
            "device": str(device),
            "gpu": gpu_telemetry(nvml_index(index)),
            "memory_allocated_mb": round(torch.cuda.memory_allocated(device) / 2**20, 2),
            "max_memory_allocated_mb": round(torch.cuda.max_memory_allocated(device) / 2**20, 2),
        }

    def close(self) -> None:
        self._prepared = None
