"""ONNX Runtime CPU backend: precision transforms + session options as build routes.

Build = validate the route against the model's knob database, normalize knobs that cannot have an
effect (reported in the effective route and ``info["normalized"]``), apply the precision transform
(cached across candidates), create the session with ``optimized_model_filepath``. The artifact is a
directory ``<workdir>/ort`` holding the optimized model ONNX Runtime wrote and ``session.json``
(the effective session options), so two candidates are duplicates exactly when ORT runs the same
graph with the same options.

Rejected as a build failure (BackendError): unknown knobs and values outside a knob's list, fp16
combined with quantization, static quantization without matching calibration inputs, a
quantization that quantizes no node, any error raised by the quantizer or by session creation.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

from gptuner_core.backends._base import Availability
from gptuner_core.backends._base import Backend
from gptuner_core.backends._base import BuildResult
from gptuner_core.backends.onnxruntime import knobs as K
from gptuner_core.backends.onnxruntime import model as M
from gptuner_core.backends.onnxruntime import session as S
from gptuner_core.backends.onnxruntime import transforms as T
from gptuner_core.errors import BackendError
from gptuner_core.errors import InvalidRouteError


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.backends._base import TensorSpec
    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.routes import Route

ARTIFACT_DIR = "ort"
OPTIMIZED_NAME = "model.optimized.onnx"
CACHE_DIR_NAME = ".ort-transform-cache"
_CPU_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx_vnni",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "amx_int8",
    "amx_bf16",
    "asimd",
    "asimddp",
    "i8mm",
    "sve",
)


def cpu_description() -> str:
    """CPU model name, core count and the ISA flags quantized kernels depend on."""
    name, flags = "", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Hardware", "Model") and not name:
                    name = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    if not name:
        import platform

        name = platform.processor() or platform.machine() or "unknown CPU"
    shown = [f for f in _CPU_FLAGS if f in flags]
    return f"{name} ({os.cpu_count()} cores; {' '.join(shown) or 'no SIMD flags read'})"


class OnnxRuntimeBackend(Backend):
    """ONNX Runtime on the CPU (``CPUExecutionProvider``)."""

    name: ClassVar[str] = "onnxruntime"
    option_declarations: ClassVar[dict[str, tuple[str, Any]]] = {
        "cache_dir": (
            "Directory for transformed (quantized / fp16) models shared by candidates; empty = "
            f"'{CACHE_DIR_NAME}' beside the candidates' work directories.",
            "",
        ),
    }

    @classmethod
    def availability(cls) -> Availability:
        try:
            import onnxruntime as ort
        except Exception as exc:
            return Availability(available=False, reason=f"cannot import onnxruntime ({exc})")
        providers = ort.get_available_providers()
        if "CPUExecutionProvider" not in providers:
            return Availability(
                available=False,
                reason=f"onnxruntime has no CPUExecutionProvider (providers: {providers})",
                version=ort.__version__,
            )
        return Availability(available=True, version=ort.__version__)

    # -- parent-side, cheap ---------------------------------------------------------------
    def describe(self, model: Path) -> KnobDatabase:
        proto = M.load_model(model)
        M.check_outputs(proto, str(model))
        return K.build_knob_database(proto)

    def model_files(self, model: Path) -> list[Path]:
        """The ``.onnx`` file and its external data files (fingerprint, model copies)."""
        return M.model_files(model)

    def planned_identity(self, model: Path, route: Route) -> str | None:
        """Hash of every knob's normalized value (inputs to the transform and the session)."""
        import hashlib

        _, _, values, _ = self.plan(model, route)
        blob = json.dumps(dict(sorted(values.items())), sort_keys=True).encode()
        return "ort-plan:" + hashlib.sha256(blob).hexdigest()

    def artifact_identity(self, build: BuildResult) -> str | None:
        """Canonical hash of the optimized model + session options (see ``identity``)."""
        from gptuner_core.backends.onnxruntime.identity import artifact_identity

        if not (build.artifact / OPTIMIZED_NAME).is_file():
            return None
        loaded = build.info.get("transformed_model")  # external data lies beside it
        return artifact_identity(build.artifact, OPTIMIZED_NAME, Path(loaded).parent if loaded else None)

    def input_specs(self, model: Path) -> list[TensorSpec]:
        return M.input_specs(M.load_model(model))

    def output_names(self, model: Path) -> list[str] | None:
        from gptuner_core.backends._base import onnx_output_names

        return onnx_output_names(model)

    def environment(self) -> dict[str, str]:
        import onnxruntime as ort

        build = ort.get_build_info() if hasattr(ort, "get_build_info") else ""
        return {
            "backend_version": ort.__version__,
            "device": cpu_description(),
            "driver": "",
            "runtime": f"onnxruntime {ort.__version__}" + (f" ({build})" if build else ""),
            "providers": ",".join(ort.get_available_providers()),
        }

    # -- planning (pure) ------------------------------------------------------------------
    def plan(
        self, model: Path, route: Route
    ) -> tuple[Any, KnobDatabase, dict[str, str], list[str]]:
        """(parsed model, knob db, normalized values of every knob, normalization notes)."""
        proto = M.load_model(model)
        db = K.build_knob_database(proto)
        try:
            route.validate(db)
        except InvalidRouteError as exc:
            msg = f"route rejected for model '{Path(model).name}': {exc}"
            raise BackendError(msg) from None
        defaults = {k.name: k.default for k in db}
        values, notes = T.normalize(route.resolved(db), defaults)
        values, more = S.normalize(values, defaults)
        return proto, db, values, notes + more

    # -- child-side -----------------------------------------------------------------------
    def build(
        self,
        model: Path,
        route: Route,
        workdir: Path,
        *,
        calibration: dict[str, np.ndarray] | None = None,
    ) -> BuildResult:
        import onnxruntime as ort

        model = Path(model)
        workdir = Path(workdir)
        proto, db, values, notes = self.plan(model, route)
        params = T.params_from_values(values)
        cache_dir = (
            Path(self.options["cache_dir"])
            if self.options.get("cache_dir")
            else workdir.parent / CACHE_DIR_NAME
        )
        outcome = T.apply_transform(
            model, proto, M.file_sha256(model), params, cache_dir, calibration
        )
        artifact = workdir / ARTIFACT_DIR
        artifact.mkdir(parents=True, exist_ok=True)
        optimized = artifact / OPTIMIZED_NAME
        session_values = {n: v for n, v in values.items() if n.startswith("-ort:")}
        t0 = time.perf_counter()
        try:
            sess = ort.InferenceSession(
                str(outcome.path),
                S.session_options(session_values, str(optimized)),
                providers=["CPUExecutionProvider"],
            )
        except Exception as exc:
            msg = (
                f"ONNX Runtime could not create a session for route '{route}': "
                f"{type(exc).__name__}: {str(exc)[:400]}"
            )
            raise BackendError(msg) from None
        session_s = time.perf_counter() - t0
        applied = S.read_back(sess, session_values)
        effective_all = {**values, **applied}
        for name, got in applied.items():
            if got != values[name]:
                notes.append(f"{name}={values[name]} -> {got} (as ONNX Runtime reports it)")
        (artifact / "session.json").write_text(
            json.dumps(
                {
                    "session": dict(sorted(applied.items())),
                    "transform": params.to_json(),
                    "transformed_model_sha256": M.file_sha256(outcome.path),
                },
                indent=1,
                sort_keys=True,
            )
        )
        effective = " ".join(f"{n}={effective_all[n]}" for n, _ in route.assignments)
        info = {
            "transformed_model": str(outcome.path),
            "transform": params.to_json(),
            "transform_cached": outcome.cached,
            "transform_s": round(outcome.seconds, 4),
            "session_s": round(session_s, 4),
            "quantized_nodes": list(outcome.quantized_nodes),
            "op_counts": outcome.op_counts,
            "normalized": notes,
            "session_values": session_values,
            "applied_options": S.applied_options(sess),
            "optimized_model": str(optimized),
        }
        del sess
        return BuildResult(artifact=artifact, effective_route=effective, info=info)

    def artifact_files(self, build: BuildResult) -> list[tuple[Path, str]]:
        """The external data files the optimized model refers to: they lie beside the model the
        build loaded (``info["transformed_model"]``), not in the artifact folder."""
        optimized = Path(build.artifact) / OPTIMIZED_NAME
        loaded = build.info.get("transformed_model")
        if not optimized.is_file() or not loaded:
            return []
        rels = [str(f.relative_to(optimized.parent)) for f in M.external_data_files(optimized)]
        return [(Path(loaded).parent / rel, rel) for rel in rels]

    def load(self, build: BuildResult) -> Any:
        import onnxruntime as ort

        from gptuner_core.backends.onnxruntime.runner import OrtRunner

        try:
            path = Path(build.info["transformed_model"])
            values = dict(build.info["session_values"])
        except (KeyError, TypeError):
            msg = (
                "build result was not produced by the onnxruntime backend "
                f"(info keys: {sorted(build.info)}; expected transformed_model, session_values)"
            )
            raise BackendError(msg) from None
        proto = M.load_model(path, check=False)
        try:
            sess = ort.InferenceSession(
                str(path), S.session_options(values), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            msg = f"ONNX Runtime could not load '{path}': {type(exc).__name__}: {str(exc)[:400]}"
            raise BackendError(msg) from None
        return OrtRunner(sess, M.input_specs(proto))

    def repro(self, model: Path, route: Route) -> dict[str, str]:
        _, _, values, notes = self.plan(model, route)
        params = T.params_from_values(values)
        session_values = {n: v for n, v in values.items() if n.startswith("-ort:")}
        return {"python": repro_snippet(Path(model), params, session_values, notes)}


def repro_snippet(
    model: Path, params: T.TransformParams, session_values: dict[str, str], notes: list[str]
) -> str:
    """A standalone Python script reproducing the transform and the session of a route."""
    lines = [
        "# Reproduces a gptuner onnxruntime route outside gptuner.",
        *(f"# normalized: {n}" for n in notes),
        "import numpy as np",
        "import onnxruntime as ort",
        f"model = {str(model)!r}",
    ]
    if params.fp16:
        lines += [
            "import onnx",
            "from onnxruntime.transformers.float16 import convert_float_to_float16",
            "onnx.save(convert_float_to_float16(onnx.load(model), keep_io_types=True), 'transformed.onnx')",
            "model = 'transformed.onnx'",
        ]
    elif params.mode != "off":
        q = "from onnxruntime import quantization as q"
        if params.preprocess:
            lines += [
                q,
                "try:",
                "    q.quant_pre_process(model, 'preprocessed.onnx')",
                "except Exception:  # incomplete symbolic shape inference: retry without it",
                "    q.quant_pre_process(model, 'preprocessed.onnx', skip_symbolic_shape=True)",
                "model = 'preprocessed.onnx'",
            ]
        common = (
            f"op_types_to_quantize={T._OP_TYPES[params.op_types]!r}, "
            f"per_channel={params.per_channel}, reduce_range={params.reduce_range}, "
            f"weight_type=q.QuantType.{T._QTYPES[params.weight_type]}, "
            f"nodes_to_exclude={list(params.excluded_nodes)!r}"
        )
        if params.mode == "dynamic":
            lines += [q, f"q.quantize_dynamic(model, 'transformed.onnx', {common})"]
        else:
            fmt = "QDQ" if params.mode == "qdq" else "QOperator"
            lines += [
                q,
                "calib = dict(np.load('calibration.npz'))  # your calibration inputs, by input name",
                "class Reader(q.CalibrationDataReader):",
                "    def __init__(self):",
                f"        n = len(next(iter(calib.values()))[:{T.MAX_CALIBRATION_ROWS}])",
                f"        self.it = iter([{{k: v[i:i + {T.CALIBRATION_CHUNK}] for k, v in calib.items()}}"
                f" for i in range(0, n, {T.CALIBRATION_CHUNK})])",
                "    def get_next(self):",
                "        return next(self.it, None)",
                f"q.quantize_static(model, 'transformed.onnx', Reader(), quant_format=q.QuantFormat.{fmt}, "
                f"activation_type=q.QuantType.{T._QTYPES[params.activation_type]}, "
                f"calibrate_method=q.CalibrationMethod.{T._CALIB[params.calibration]}, {common})",
            ]
        lines.append("model = 'transformed.onnx'")
    lines += [
        "so = ort.SessionOptions()",
        "so.log_severity_level = 3",
        f"so.graph_optimization_level = ort.GraphOptimizationLevel.{S.OPT_LEVELS[session_values.get(K.OPT_LEVEL, 'all')]}",
        f"so.execution_mode = ort.ExecutionMode.{S.EXEC_MODES[session_values.get(K.EXEC_MODE, 'sequential')]}",
        f"so.intra_op_num_threads = {int(session_values.get(K.INTRA, '0'))}",
        f"so.inter_op_num_threads = {int(session_values.get(K.INTER, '0'))}",
    ]
    for name, attr in S._BOOL_ATTRS.items():
        if name in session_values:
            lines.append(f"so.{attr} = {session_values[name] == 'on'}")
    for key, value in S.config_entries(session_values).items():
        lines.append(f"so.add_session_config_entry({key!r}, {value!r})")
    lines += [
        "so.optimized_model_filepath = 'optimized.onnx'",
        "sess = ort.InferenceSession(model, so, providers=['CPUExecutionProvider'])",
        "print([i.name for i in sess.get_inputs()], '->', [o.name for o in sess.get_outputs()])",
    ]
    return "\n".join(lines) + "\n"
