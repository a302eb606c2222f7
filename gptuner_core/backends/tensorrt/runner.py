"""Run a TensorRT engine with cuda-python and time it with CUDA events.

* device buffers from ``cudaMalloc``, one non-blocking stream, ``set_tensor_address`` for every
  I/O tensor, ``execute_async_v3(stream)``;
* ``time_calls(n)``: ``cudaEventRecord(start)``, ``n`` launches, ``cudaEventRecord(stop)``, wait,
  ``cudaEventElapsedTime`` -> nanoseconds (device time, like trtexec's "GPU Compute Time");
* optional CUDA graph (trtexec's default): one ``execute_async_v3`` captured between
  ``cudaStreamBeginCapture``/``cudaStreamEndCapture``, instantiated once, replayed with
  ``cudaGraphLaunch``; re-captured whenever ``prepare`` changes the shapes;
* waiting: spin on ``cudaEventQuery`` (trtexec's default ``spin_wait``) or block in
  ``cudaEventSynchronize`` on events created with ``cudaEventBlockingSync``.

Every CUDA call goes through :func:`cuda_call`, which raises :class:`BackendError` with the error
name and text. cuda-python returns ``(err, *results)`` tuples (reference §7).
"""

from __future__ import annotations

import time
from typing import Any

from gptuner_core.backends._base import Runner
from gptuner_core.errors import BackendError


def _runtime() -> Any:
    try:
        from cuda.bindings import runtime as cudart
    except ImportError:
        try:
            from cuda import cudart  # cuda-python < 12.6 layout
        except ImportError as exc:
            msg = f"cuda-python is not importable ({exc}); pip install cuda-python"
            raise BackendError(msg) from None
    return cudart


def _error_text(err: Any) -> str:
    name = getattr(err, "name", None) or str(err)
    try:
        cudart = _runtime()
        res = cudart.cudaGetErrorString(err)
        text = res[1] if isinstance(res, tuple) else res
        if isinstance(text, bytes):
            text = text.decode(errors="replace")
        return f"{name}: {text}" if text else str(name)
    except Exception:  # noqa: BLE001 - best effort only
        return str(name)


def error_code(err: Any) -> int:
    """Integer value of a ``cudaError_t``/``CUresult`` enum member (or a plain int)."""
    return int(getattr(err, "value", err))


def cuda_call(result: Any, what: str = "CUDA call") -> Any:
    """Check the ``(err, *values)`` tuple of a cuda-python call; return the value(s).

    Returns ``None`` for no values, the value itself for one, a tuple for several.
    """
    if not isinstance(result, tuple) or not result:
        msg = f"{what}: unexpected cuda-python return value {result!r} (expected (err, ...))"
        raise BackendError(msg)
    err, values = result[0], result[1:]
    if error_code(err) != 0:
        msg = f"{what} failed: {_error_text(err)}"
        raise BackendError(msg)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


class TensorRTRunner(Runner):
    """A deserialized engine with one execution context, bound buffers and timing events."""

    def __init__(self, engine_path: str, *, cuda_graph: bool = True, spin_wait: bool = True) -> None:
        import tensorrt as trt

        self._trt = trt
        self._rt = _runtime()
        self.cuda_graph = cuda_graph
        self.spin_wait = spin_wait
        self._buffers: dict[str, tuple[int, int]] = {}  # name -> (device ptr, nbytes)
        self._out_shapes: dict[str, tuple[int, ...]] = {}
        self._graph_exec: Any = None
        self._stream: Any = None
        self._events: tuple[Any, Any] | None = None
        self._prepared_key: tuple[Any, ...] | None = None
        self._logger = trt.Logger(trt.Logger.WARNING)
        self._runtime_obj = trt.Runtime(self._logger)
        with open(engine_path, "rb") as f:
            self._engine = self._runtime_obj.deserialize_cuda_engine(f.read())
        if self._engine is None:
            msg = f"TensorRT could not deserialize engine '{engine_path}' (built by another TensorRT version or GPU?)"
            raise BackendError(msg)
        self._context = self._engine.create_execution_context()
        if self._context is None:
            msg = "TensorRT could not create an execution context (out of device memory?)"
            raise BackendError(msg)
        names = [self._engine.get_tensor_name(i) for i in range(self._engine.num_io_tensors)]
        self._inputs = [n for n in names if self._engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        self._outputs = [n for n in names if n not in self._inputs]
        rt = self._rt
        self._stream = cuda_call(
            rt.cudaStreamCreateWithFlags(rt.cudaStreamNonBlocking), "cudaStreamCreateWithFlags"
        )
        flags = rt.cudaEventDefault if spin_wait else rt.cudaEventBlockingSync
        self._events = (
            cuda_call(rt.cudaEventCreateWithFlags(flags), "cudaEventCreateWithFlags"),
            cuda_call(rt.cudaEventCreateWithFlags(flags), "cudaEventCreateWithFlags"),
        )

    # -- helpers ----------------------------------------------------------------------------
    def _np_dtype(self, name: str) -> Any:
        import numpy as np

        dtype = self._engine.get_tensor_dtype(name)
        try:
            return np.dtype(self._trt.nptype(dtype))
        except (TypeError, KeyError) as exc:
            msg = f"tensor '{name}' has data type {dtype}, which numpy cannot hold ({exc}); keep model I/O in fp32/fp16/int types"
            raise BackendError(msg) from None

    def _alloc(self, name: str, nbytes: int) -> int:
        old = self._buffers.get(name)
        if old is not None and old[1] >= nbytes:
            return old[0]
        if old is not None:
            cuda_call(self._rt.cudaFree(old[0]), f"cudaFree({name})")
        ptr = cuda_call(self._rt.cudaMalloc(max(nbytes, 1)), f"cudaMalloc({name}, {nbytes} bytes)")
        self._buffers[name] = (int(ptr), nbytes)
        return int(ptr)

    def _sync(self, event: Any) -> None:
        rt = self._rt
        if not self.spin_wait:
            cuda_call(rt.cudaEventSynchronize(event), "cudaEventSynchronize")
            return
        not_ready = error_code(rt.cudaError_t.cudaErrorNotReady)
        while True:
            res = rt.cudaEventQuery(event)
            err = res[0] if isinstance(res, tuple) else res
            code = error_code(err)
            if code == 0:
                return
            if code != not_ready:
                cuda_call((err,), "cudaEventQuery")

    def _enqueue(self) -> None:
        if not self._context.execute_async_v3(int(self._stream)):
            msg = "IExecutionContext.execute_async_v3 returned False (see the TensorRT log)"
            raise BackendError(msg)

    def _launch(self) -> None:
        if self._graph_exec is not None:
            cuda_call(self._rt.cudaGraphLaunch(self._graph_exec, self._stream), "cudaGraphLaunch")
        else:
            self._enqueue()

    def _capture(self) -> None:
        rt = self._rt
        if self._graph_exec is not None:
            cuda_call(rt.cudaGraphExecDestroy(self._graph_exec), "cudaGraphExecDestroy")
            self._graph_exec = None
        # One plain enqueue first: TensorRT may allocate or update state on the first run after a
        # shape change, which must not happen inside a capture.
        self._enqueue()
        cuda_call(rt.cudaStreamSynchronize(self._stream), "cudaStreamSynchronize")
        cuda_call(
            rt.cudaStreamBeginCapture(self._stream, rt.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal),
            "cudaStreamBeginCapture",
        )
        try:
            self._enqueue()
        finally:
            graph = cuda_call(rt.cudaStreamEndCapture(self._stream), "cudaStreamEndCapture")
        try:
            self._graph_exec = cuda_call(rt.cudaGraphInstantiate(graph, 0), "cudaGraphInstantiate")
        finally:
            cuda_call(rt.cudaGraphDestroy(graph), "cudaGraphDestroy")

    # -- Runner -----------------------------------------------------------------------------
    def _prepare(self, feeds: dict[str, Any]) -> None:
        import numpy as np

        missing = sorted(set(self._inputs) - set(feeds))
        if missing:
            msg = f"missing input(s) {missing} (engine inputs: {self._inputs}, got: {sorted(feeds)})"
            raise BackendError(msg)
        rt = self._rt
        h2d = rt.cudaMemcpyKind.cudaMemcpyHostToDevice
        arrays = {}
        for name in self._inputs:
            arr = np.ascontiguousarray(feeds[name], dtype=self._np_dtype(name))
            arrays[name] = arr
            if not self._context.set_input_shape(name, tuple(arr.shape)):
                msg = f"input '{name}' shape {list(arr.shape)} is outside the engine's profile {self._engine.get_tensor_profile_shape(name, 0)}"
                raise BackendError(msg)
        for name, arr in arrays.items():
            ptr = self._alloc(name, arr.nbytes)
            cuda_call(
                rt.cudaMemcpyAsync(ptr, arr.ctypes.data, arr.nbytes, h2d, self._stream),
                f"cudaMemcpyAsync(H2D {name})",
            )
            if not self._context.set_tensor_address(name, ptr):
                msg = f"set_tensor_address('{name}') failed"
                raise BackendError(msg)
        for name in self._outputs:
            shape = tuple(int(d) for d in self._context.get_tensor_shape(name))
            if any(d < 0 for d in shape):
                msg = f"output '{name}' has a data-dependent shape {list(shape)}; not supported by this runner"
                raise BackendError(msg)
            nbytes = int(np.prod(shape, dtype=np.int64)) * self._np_dtype(name).itemsize
            self._out_shapes[name] = shape
            if not self._context.set_tensor_address(name, self._alloc(name, nbytes)):
                msg = f"set_tensor_address('{name}') failed"
                raise BackendError(msg)
        cuda_call(rt.cudaStreamSynchronize(self._stream), "cudaStreamSynchronize")
        key = tuple((n, a.shape) for n, a in arrays.items()) + tuple(self._buffers.items())
        if self.cuda_graph and key != self._prepared_key:
            self._capture()
        self._prepared_key = key

    def _time_calls(self, n: int) -> int:
        rt = self._rt
        start, stop = self._events
        cuda_call(rt.cudaEventRecord(start, self._stream), "cudaEventRecord(start)")
        for _ in range(n):
            self._launch()
        cuda_call(rt.cudaEventRecord(stop, self._stream), "cudaEventRecord(stop)")
        self._sync(stop)
        ms = cuda_call(rt.cudaEventElapsedTime(start, stop), "cudaEventElapsedTime")
        return int(round(float(ms) * 1e6))

    def infer(self, feeds: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        self.prepare(feeds)
        rt = self._rt
        self._launch()
        d2h = rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
        outs = {}
        for name in self._outputs:
            arr = np.empty(self._out_shapes[name], dtype=self._np_dtype(name))
            cuda_call(
                rt.cudaMemcpyAsync(arr.ctypes.data, self._buffers[name][0], arr.nbytes, d2h, self._stream),
                f"cudaMemcpyAsync(D2H {name})",
            )
            outs[name] = arr
        cuda_call(rt.cudaStreamSynchronize(self._stream), "cudaStreamSynchronize")
        return outs

    def telemetry(self) -> dict[str, Any]:
        """GPU clocks, temperature and power via NVML (empty when nvidia-ml-py is missing)."""
        try:
            import pynvml

            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByIndex(0)
            return {
                "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "mem_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                "temperature_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "time": time.time(),
            }
        except Exception:  # noqa: BLE001 - telemetry is optional
            return {}

    def close(self) -> None:
        rt = self._rt
        errors = []
        if self._graph_exec is not None:
            errors.append(rt.cudaGraphExecDestroy(self._graph_exec))
            self._graph_exec = None
        for ptr, _ in self._buffers.values():
            errors.append(rt.cudaFree(ptr))
        self._buffers.clear()
        for ev in self._events or ():
            errors.append(rt.cudaEventDestroy(ev))
        self._events = None
        if self._stream is not None:
            errors.append(rt.cudaStreamDestroy(self._stream))
            self._stream = None
        self._context = None
        self._engine = None
        for res in errors:
            cuda_call(res if isinstance(res, tuple) else (res,), "CUDA cleanup")
