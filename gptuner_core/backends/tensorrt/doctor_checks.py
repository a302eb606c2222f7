"""``gptuner doctor``'s checks: can gptuner's TensorRT backends run here, and do they behave?

Requirements first, in order (each check's ``detail`` is the precise reason when it fails): Linux,
``tensorrt`` >= 11.1 with build routes, cuda-python and an NVIDIA driver that can serve it, a builder
with a non-empty knob database (loaded leniently: what was skipped is listed, assumption U3), and
for the ``trtexec`` backend a ``trtexec`` with the tuner. Then a tiny ONNX model (built here, in
code) goes through the real backends:

* ``tensorrt``: the default route and one non-default route: route read-back (U1), the engine
  inspector's layer-tensor keys (U2), the timing cache round trip (file written, re-read, accepted
  by ``create_timing_cache``), outputs against ONNX Runtime; the same model with external weights
  (parse with the model path);
* ``trtexec``: the default and the non-default route, outputs against ONNX Runtime, a timing run.

The run stops at the first failed check (later checks depend on it). Nothing here is run by the
test suite past the first missing requirement: no TensorRT can be installed on our machines.
"""

from __future__ import annotations

import platform
import sys
import traceback
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


OK, FAIL, SKIP, INFO = "ok", "FAIL", "skip", "info"
TOLERANCE = 1e-3  # max |TensorRT - ONNX Runtime| for the fp32 model (TF32 is TensorRT's default)


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    name: str
    status: str
    detail: str = ""


class Stop(Exception):
    """A requirement is missing; the report ends here."""


def tiny_model(path: Path, *, external: bool = False) -> Path:
    """``y = relu(x @ w + b)``, x: float32[2, 16] -> y: float32[2, 8]."""
    import numpy as np
    import onnx
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    graph = helper.make_graph(nodes, "doctor", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    if external:
        onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                  location=path.name + ".data", size_threshold=0)
    else:
        onnx.save(model, str(path))
    return path


def feeds() -> dict[str, Any]:
    import numpy as np

    return {"x": np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)}


def reference(model: Path) -> dict[str, Any]:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds()), strict=True))


def compare(got: dict[str, Any], want: dict[str, Any]) -> str:
    import numpy as np

    worst = max(float(np.max(np.abs(np.asarray(got[k], np.float64) - want[k]))) for k in want)
    if worst > TOLERANCE:
        msg = f"outputs differ from ONNX Runtime by up to {worst:.3g} (> {TOLERANCE:g})"
        raise Stop(msg)
    return f"max |diff| vs ONNX Runtime {worst:.3g}"


class Doctor:
    """Runs the checks in order; ``checks`` is the report so far."""

    def __init__(self, workdir: Path, *, trtexec: bool = True) -> None:
        self.workdir = workdir
        self.with_trtexec = trtexec
        self.checks: list[Check] = []
        self.db: Any = None
        self._pending: list[Check] = []
        self._routes_json = ""

    def _add(self, name: str, status: str, detail: str = "") -> None:
        """An ``info`` line, reported under the check that produced it."""
        self._pending.append(Check(name=name.strip(), status=status, detail=detail))

    def _finish(self, name: str, status: str, detail: str) -> None:
        self.checks.append(Check(name=name, status=status, detail=detail))
        self.checks += self._pending
        self._pending = []

    def run(self) -> bool:
        steps: list[tuple[str, Callable[[], str]]] = [
            ("platform", self.platform),
            ("tensorrt", self.tensorrt),
            ("cuda-python", self.cuda_python),
            ("builder", self.builder),
            ("knob database", self.knob_database),
            ("tensorrt: default route", lambda: self.trt_build("default")),
            ("tensorrt: non-default route", lambda: self.trt_build("other")),
            ("tensorrt: external-data model", self.external_data),
        ]
        if self.with_trtexec:
            steps += [("trtexec", self.trtexec_probe),
                      ("trtexec: default route", lambda: self.trtexec_build("default")),
                      ("trtexec: non-default route", lambda: self.trtexec_build("other"))]
        for name, step in steps:
            try:
                self._finish(name, OK, step())
            except Stop as exc:
                self._finish(name, FAIL, str(exc))
                return False
            except Exception as exc:  # noqa: BLE001 - every failure is a line of the report
                last = traceback.extract_tb(exc.__traceback__)[-1]
                self._finish(name, FAIL, f"{type(exc).__name__}: {exc} (at {Path(last.filename).name}:{last.lineno})")
                return False
        return True

    # -- requirements ----------------------------------------------------------------------
    def platform(self) -> str:
        text = f"{platform.system()} {platform.machine()}, Python {platform.python_version()}"
        if not sys.platform.startswith("linux"):
            msg = f"{text}: the Global Performance Tuner needs Linux (trtexec tunes with fork(); Windows builds have no knob database)"
            raise Stop(msg)
        return text

    def tensorrt(self) -> str:
        from gptuner_core.backends.tensorrt.probe import probe_tensorrt

        res = probe_tensorrt(create_builder=False)
        if not res.available:
            raise Stop(res.reason)
        return f"TensorRT {res.version} (IBuilderConfig.build_route and all_build_routes present)"

    def cuda_python(self) -> str:
        from gptuner_core.backends.tensorrt.probe import probe_cuda_python

        reason = probe_cuda_python()
        if reason:
            raise Stop(reason)
        from gptuner_core.backends.tensorrt.runner import _runtime

        rt = _runtime()
        drv, run = rt.cudaDriverGetVersion()[1], rt.cudaRuntimeGetVersion()[1]
        return f"cuda-python runtime {run // 1000}.{run % 1000 // 10}, driver supports CUDA {drv // 1000}.{drv % 1000 // 10}"

    def builder(self) -> str:
        from gptuner_core.backends.tensorrt.probe import probe_tensorrt

        res = probe_tensorrt()
        if not res.available:
            raise Stop(res.reason)
        self._routes_json = res.routes_json
        return f"all_build_routes: {len(res.routes_json)} characters"

    def knob_database(self) -> str:
        from gptuner_core.backends.tensorrt.knob_loader import clean
        from gptuner_core.knobs import KnobDatabase

        data, report = clean(self._routes_json, source="all_build_routes")
        self.db = KnobDatabase.from_json(data)
        for line in report:
            self._add("knob database", INFO, line)
        bounded = sum(1 for k in self.db if k.bounded)
        return (f"tuner {self.db.tuner_version}: {len(self.db)} knobs ({bounded} bounded), "
                f"{len(report)} entries skipped or defaulted (U3)")

    # -- the tensorrt backend ----------------------------------------------------------------
    def _other_routes(self) -> Iterator[Any]:
        from gptuner_core.routes import Route

        for knob in self.db:
            if knob.bounded and len(knob.values) > 1:
                value = next(v for v in knob.values if v != knob.default)
                yield Route.parse(f"{knob.name}={value}")

    def trt_build(self, which: str) -> str:
        from gptuner_core.backends.tensorrt import TensorRTBackend
        from gptuner_core.errors import BackendError
        from gptuner_core.routes import Route

        model = tiny_model(self.workdir / "tiny.onnx")
        be = TensorRTBackend({"timing_cache": "shared", "timing_cache_path": str(self.workdir / "timing.cache")})
        routes = [Route()] if which == "default" else list(self._other_routes())[:5]
        errors = []
        for route in routes:
            try:
                res = be.build(model, route, self.workdir / "trt" / (which + str(len(errors))), calibration=feeds())
                break
            except BackendError as exc:
                errors.append(f"{route}: {exc}")
        else:
            msg = "no route built: " + " | ".join(errors) if errors else "no non-default bounded knob in the database"
            raise Stop(msg)
        rb = res.info["route_readback"]
        self._add("U1 route read-back", INFO, f"requested {rb['requested']!r}, read back {rb['read_back']!r}"
                  + (f" ({'; '.join(rb['notes'])})" if rb["notes"] else ""))
        self._add("U2 inspector keys", INFO, self._inspector_keys(Path(res.artifact)))
        self._add("timing cache round trip", INFO, self._timing_cache_round_trip(Path(res.info["timing_cache_path"])))
        with be.load(res) as runner:
            out = runner.infer(feeds())
        return f"route {rb['requested'] or '(default)'}: built in {res.info['build_s']} s; {compare(out, reference(model))}"

    def _inspector_keys(self, engine_path: Path) -> str:
        import json

        import tensorrt as trt

        logger = trt.Logger(trt.Logger.WARNING)
        engine = trt.Runtime(logger).deserialize_cuda_engine(engine_path.read_bytes())
        data = json.loads(engine.create_engine_inspector().get_engine_information(trt.LayerInformationFormat.JSON))
        keys: set[str] = set()
        for layer in data.get("Layers", []):
            for t in (layer.get("Inputs") or []) + (layer.get("Outputs") or []) if isinstance(layer, dict) else []:
                if isinstance(t, dict):
                    keys |= set(t)
        top = sorted(k for k in data if k != "Layers")
        return f"top-level {top}; layer tensor keys {sorted(keys)}"

    def _timing_cache_round_trip(self, path: Path) -> str:
        import tensorrt as trt

        data = path.read_bytes()
        if not data:
            msg = f"timing cache {path} is empty after a build"
            raise Stop(msg)
        config = trt.Builder(trt.Logger(trt.Logger.ERROR)).create_builder_config()
        cache = config.create_timing_cache(data)
        again = bytes(memoryview(cache.serialize())) if cache is not None else b""
        if not again:
            msg = f"TensorRT could not re-read the timing cache it wrote ({path}, {len(data)} bytes)"
            raise Stop(msg)
        return f"{path.name}: {len(data)} bytes written, re-read and re-serialized ({len(again)} bytes)"

    def external_data(self) -> str:
        from gptuner_core.backends.tensorrt import TensorRTBackend
        from gptuner_core.routes import Route

        model = tiny_model(self.workdir / "ext" / "tiny_ext.onnx", external=True)
        be = TensorRTBackend({"timing_cache": "isolated"})
        res = be.build(model, Route(), self.workdir / "ext" / "build", calibration=feeds())
        with be.load(res) as runner:
            out = runner.infer(feeds())
        return f"weights in {model.name}.data parsed with the model path; {compare(out, reference(model))}"

    # -- the trtexec backend -----------------------------------------------------------------
    def trtexec_probe(self) -> str:
        from gptuner_core.backends.tensorrt.trtexec import probe_trtexec

        ok, reason, text = probe_trtexec()
        if not ok:
            raise Stop(reason + " (run with --no-trtexec to check only the tensorrt backend)")
        from gptuner_core.backends.tensorrt import trtexec_protocol as proto

        return f"trtexec {proto.version_from_banner(text) or '(version not in banner)'} with --tuneBuildRoutes"

    def trtexec_build(self, which: str) -> str:
        from gptuner_core.backends.tensorrt import TrtexecBackend
        from gptuner_core.routes import Route

        model = tiny_model(self.workdir / "tiny.onnx")
        be = TrtexecBackend({"timing_cache": "isolated"})
        route = Route() if which == "default" else next(iter(self._other_routes()))
        res = be.build(model, route, self.workdir / "trtexec" / which, calibration=feeds())
        with be.load(res) as runner:
            runner.prepare(feeds())
            ns = runner.time_calls(10)
            out = runner.infer(feeds())
        return (f"route {str(route) or '(default)'}: trtexec gpu_time_ms {res.info['trtexec_gpu_time_ms']:.4g}, "
                f"10 calls {ns / 1e6:.4g} ms; {compare(out, reference(model))}")
