"""The torch (Inductor) backend on the CPU: knob database, model input, build, run, precision.

Builds are real Inductor C++ compiles of the tiny model in ``tests/data/torch_tiny_model.py``
(a few seconds each after the first); the knob and model-input tests compile nothing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gptuner_core.backends._base import BuildResult
from gptuner_core.backends._base import TensorSpec
from gptuner_core.backends.torch_inductor import TorchInductorBackend
from gptuner_core.errors import BackendError
from gptuner_core.errors import ConfigError
from gptuner_core.knobs import KnobDatabase
from gptuner_core.routes import Route
from gptuner_core.testing.backend_contract import skip_unless_available


torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, skip_unless_available(TorchInductorBackend)]

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "data" / "torch_tiny_model.py"
SAMPLE = ROOT / "assets" / "torch_digits_cnn.py"
SAMPLE_EVAL = ROOT / "assets" / "torch_digits_eval.npz"
GPU_ONLY = (
    "-inductor:coordinate_descent_tuning",
    "-inductor:triton.cudagraphs",
    "-inductor:shape_padding",
    "-inductor:split_reductions",
)


def _module_from(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree_sha(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _config_value(dotted: str) -> tuple[bool, Any]:
    import torch._inductor.config as config

    obj: Any = config
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False, None
        obj = getattr(obj, part)
    return True, obj


class TestKnobDatabase:
    """The knob database follows the installed torch._inductor.config."""

    @pytest.mark.parametrize("device_type", ["cpu", "cuda"])
    def test_inductor_knobs_name_existing_boolean_config_options(self, device_type: str) -> None:
        """Every -inductor: knob is an existing bool option, with the installed default first."""
        from gptuner_core.backends.torch_inductor.knobs import knob_database

        db = knob_database(device_type)
        inductor = [k for k in db if k.name.startswith("-inductor:")]
        assert inductor
        for knob in inductor:
            exists, value = _config_value(knob.name.removeprefix("-inductor:"))
            assert exists and isinstance(value, bool), knob.name
            assert knob.default == ("on" if value else "off"), knob.name
            assert knob.values is not None and knob.values[0] == knob.default
            assert sorted(knob.values) == ["off", "on"]
        assert all(k.help for k in db)
        assert KnobDatabase.from_json(json.loads(db.to_string())) == db

    def test_gpu_only_knobs_are_left_out_on_the_cpu(self) -> None:
        """CPU: no Triton/CUDA-graph knobs, no tf32, no CUDA-graph modes; CUDA: all of them."""
        from gptuner_core.backends.torch_inductor.knobs import knob_database

        cpu, cuda = knob_database("cpu"), knob_database("cuda")
        for name in GPU_ONLY:
            assert name not in cpu
            assert name in cuda or not _config_value(name.removeprefix("-inductor:"))[0]
        assert cpu["-torch:mode"].values == ("default", "max-autotune-no-cudagraphs")
        assert cuda["-torch:mode"].values == (
            "default",
            "reduce-overhead",
            "max-autotune",
            "max-autotune-no-cudagraphs",
        )
        assert cpu["-torch:precision"].values == ("fp32", "bf16", "fp16")
        assert cuda["-torch:precision"].values == ("fp32", "fp32_strict", "tf32", "bf16", "fp16")
        assert cpu.tuner_version == f"torch-{torch.__version__}/inductor/cpu"

    def test_unknown_or_non_boolean_config_names_are_dropped(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A spec naming an option the installed config lacks (or a non-bool one) is not listed."""
        from gptuner_core.backends.torch_inductor import knobs as K

        extra = (
            K.InductorKnobSpec(config="no_such_option_in_any_torch", help="x", devices=K._BOTH),
            K.InductorKnobSpec(config="cpp.threads", help="an int option", devices=K._BOTH),
        )
        monkeypatch.setattr(K, "INDUCTOR_KNOBS", K.INDUCTOR_KNOBS + extra)
        db = K.knob_database("cpu")
        assert "-inductor:no_such_option_in_any_torch" not in db
        assert "-inductor:cpp.threads" not in db
        assert "-inductor:freezing" in db

    def test_route_knobs_override_the_mode_preset(self) -> None:
        """The mode's preset is applied first; knobs named in the route override it."""
        from gptuner_core.backends.torch_inductor.knobs import inductor_options

        assert inductor_options({}, "default") == {}
        opts = inductor_options({"-inductor:max_autotune": "off"}, "max-autotune")
        assert opts["max_autotune"] is False
        assert opts["triton.cudagraphs"] is True
        assert opts["coordinate_descent_tuning"] is True

    def test_expressions_parse_against_the_database(self) -> None:
        """A tunable expression over the torch knobs parses and counts like trtexec's."""
        from gptuner_core.backends.torch_inductor.knobs import knob_database
        from gptuner_core.expressions import Expression

        db = knob_database("cuda")
        expr = Expression.parse(
            "-torch:mode=[default|reduce-overhead] -torch:precision=[fp32|tf32|fp16] "
            "-inductor:freezing=[off|on]",
            db,
        )
        assert expr.count("fast") == 1 + 1 + 2 + 1
        assert expr.count("full") == 2 * 3 * 2


class TestModelInput:
    """Model references: .pt2 programs and factories, and clear errors for bad ones."""

    @pytest.fixture
    def backend(self) -> TorchInductorBackend:
        return TorchInductorBackend({"device": "cpu"})

    def _factory_file(self, tmp_path: Path, body: str) -> Path:
        path = tmp_path / "entry.py"
        path.write_text("import torch\n\n\ndef factory():\n" + body)
        return path

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ("    raise RuntimeError('no weights here')\n", "factory raised RuntimeError: no weights"),
            ("    return 1, 2, 3\n", r"must return \(module, example_inputs\) \(got tuple of length 3\)"),
            ("    return object(), torch.zeros(1)\n", "must be a torch.nn.Module"),
            ("    return torch.nn.ReLU(), 'text'\n", "example_inputs must be a tensor"),
            ("    return torch.nn.ReLU(), ()\n", "example_inputs must be a tensor"),
        ],
    )
    def test_bad_factory_results_are_backend_errors(
        self, backend: TorchInductorBackend, tmp_path: Path, body: str, message: str
    ) -> None:
        """A factory that raises or returns the wrong things gives BackendError saying what."""
        entry = self._factory_file(tmp_path, body)
        with pytest.raises(BackendError, match=message):
            backend.input_specs(entry)

    @pytest.mark.parametrize(
        ("reference", "message"),
        [
            ("no_such_module_for_gptuner:factory", "cannot import module 'no_such_module_for_gptuner'"),
            (f"{TINY}:no_such_factory", "has no callable 'no_such_factory'"),
            (f"{TINY}:not-a-name", "expected a .pt2 file"),
            ("/nonexistent/dir/model.py:factory", "does not exist"),
            ("/nonexistent/dir/model.pt2", "does not exist"),
            ("model.onnx", "expected a .pt2 file"),
        ],
    )
    def test_bad_references_are_backend_errors(
        self, backend: TorchInductorBackend, reference: str, message: str
    ) -> None:
        """Unknown modules, missing factories or files and other formats give BackendError."""
        with pytest.raises(BackendError, match=message):
            backend.input_specs(Path(reference))
        with pytest.raises(BackendError):
            backend.describe(Path(reference))

    def test_entry_point_module_form(self, backend: TorchInductorBackend) -> None:
        """'package.module:factory' imports the module and calls the attribute (here a class)."""
        with pytest.raises(BackendError, match=r"must return \(module, example_inputs\) \(got JSONDecoder\)"):
            backend.input_specs(Path("json:JSONDecoder"))

    def test_sample_input_specs_and_eval_set_agree(self, backend: TorchInductorBackend) -> None:
        """The sample's input is 'x' (batch, 1, 16, 16) float32, as named in its evaluation set."""
        specs = backend.input_specs(SAMPLE)
        assert specs == [TensorSpec(name="x", dtype="float32", shape=("batch", 1, 16, 16))]
        with np.load(SAMPLE_EVAL) as data:
            assert sorted(data.files) == ["labels", "x"]
            assert data["x"].dtype == np.float32 and data["x"].shape[1:] == (1, 16, 16)
            assert data["labels"].shape == (data["x"].shape[0],)

    def test_sample_weights_are_trained(self) -> None:
        """The committed weights classify the held-out digits well in eager mode."""
        sample = _module_from(SAMPLE)
        module, _ = sample.factory()
        with np.load(SAMPLE_EVAL) as data:
            x, labels = data["x"], data["labels"]
        with torch.no_grad():
            logits = module(torch.from_numpy(x)).numpy()
        assert float((logits.argmax(1) == labels).mean()) >= 0.97

    @pytest.mark.parametrize(
        "options",
        [{"device": "gpu"}, {"device": "cuda:x"}, {"threads": -1}, {"compile_threads": True}, {"nope": 1}],
    )
    def test_bad_options_are_config_errors(self, options: dict[str, Any]) -> None:
        """Options are checked when the backend is made."""
        with pytest.raises(ConfigError):
            TorchInductorBackend(options)


@pytest.fixture(scope="module")
def backend() -> TorchInductorBackend:
    return TorchInductorBackend({"device": "cpu", "compile_threads": 1, "threads": 1})


@pytest.fixture(scope="module")
def builds(backend: TorchInductorBackend, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``builds(route_text, tag="")`` builds once per (route, tag) into its own workdir."""
    root = tmp_path_factory.mktemp("torch_builds")
    done: dict[tuple[str, str], BuildResult] = {}

    def get(route: str, tag: str = "") -> BuildResult:
        if (route, tag) not in done:
            workdir = root / f"c{len(done):03d}"
            done[(route, tag)] = backend.build(TINY, Route.parse(route), workdir)
        return done[(route, tag)]

    return get


@pytest.fixture(scope="module")
def tiny() -> Any:
    return _module_from(TINY)


def _eager(tiny: Any, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return tiny.build_module()(torch.from_numpy(x)).numpy()


@pytest.mark.slow
class TestBuildAndRun:
    """Real builds of the tiny model on the CPU."""

    def test_artifact_is_normalized_generated_code(self, backend: TorchInductorBackend, builds: Any) -> None:
        """The artifact holds the wrapper with inline C++ kernels, free of per-candidate paths."""
        built = builds("")
        files = sorted(p.name for p in built.artifact.iterdir())
        assert files == ["graph_000.py"]
        code = (built.artifact / "graph_000.py").read_text()
        assert "cpp_fused" in code and "def call(" in code
        assert "# AOT ID" not in code
        assert str(built.artifact.parent) not in code
        info = built.info
        assert info["compile_time_s"] > 0 and info["graphs"] == 1
        assert info["effective_config"]["freezing"] is False
        assert (built.artifact.parent / "build.json").is_file()
        db = backend.describe(TINY)
        assert Route.parse(built.effective_route).resolved(db) == Route.default(db).resolved(db)
        json.dumps(info)

    def test_same_route_same_hash_other_precision_other_hash(self, builds: Any) -> None:
        """Rebuilding a route in another folder gives identical files; fp16 gives other code."""
        first, again = builds(""), builds("", tag="again")
        assert first.artifact != again.artifact
        assert _tree_sha(first.artifact) == _tree_sha(again.artifact)
        assert _tree_sha(builds("-torch:precision=fp16").artifact) != _tree_sha(first.artifact)

    def test_infer_matches_eager_and_pads_a_partial_batch(
        self, backend: TorchInductorBackend, builds: Any, tiny: Any
    ) -> None:
        """Seven rows on a batch-4 build run as 4 + 3 (padded) with no new specialization.

        (A later build in the same process resets Dynamo, so the compiled batch may compile once
        more on its first call here; the partial batch must not add a compile.)
        """
        built = builds("")
        x = np.random.default_rng(3).standard_normal((7, 1, 6, 6)).astype(np.float32)
        with backend.load(built) as runner:
            runner.infer({"x": x[:4]})
            compiles = len(runner.compiled.snapshots)
            out = runner.infer({"x": x})
            assert len(runner.compiled.snapshots) == compiles, "a partial batch must not compile"
        assert list(out) == ["output"]
        assert out["output"].dtype == np.float32 and out["output"].shape == (7, 3)
        np.testing.assert_allclose(out["output"], _eager(tiny, x), rtol=1e-5, atol=1e-5)

    def test_prepare_compiles_a_new_batch_outside_timing(
        self, backend: TorchInductorBackend, builds: Any
    ) -> None:
        """prepare() on a new batch size compiles it; time_calls then times only runs."""
        built = builds("")
        x = np.zeros((2, 1, 6, 6), np.float32)
        with backend.load(built) as runner:
            with pytest.raises(BackendError, match="before prepare"):
                runner.time_calls(1)
            runner.prepare({"x": x})
            assert ((2, 1, 6, 6),) in runner.compiled.compiled_shapes
            elapsed = runner.time_calls(5)
            assert isinstance(elapsed, int) and 0 < elapsed < 5e9
            assert runner.telemetry() == {"device": "cpu", "threads": 1}
            with pytest.raises(BackendError, match=r"lack input\(s\) \['x'\]"):
                runner.infer({"y": x})

    @pytest.mark.parametrize("precision", ["fp16", "bf16"])
    def test_reduced_precision_changes_outputs_measurably(
        self, backend: TorchInductorBackend, builds: Any, precision: str
    ) -> None:
        """fp16/bf16 routes cast the model: outputs differ from fp32 beyond fp32 noise."""
        x = np.random.default_rng(5).standard_normal((4, 1, 6, 6)).astype(np.float32)
        with backend.load(builds("")) as runner:
            ref = runner.infer({"x": x})["output"]
        try:
            low = builds(f"-torch:precision={precision}")
        except BackendError as exc:
            pytest.skip(f"{precision} not supported by this CPU build of PyTorch: {exc}")
        assert low.info["dtype"] == {"fp16": "float16", "bf16": "bfloat16"}[precision]
        assert f"-torch:precision={precision}" in low.effective_route
        with backend.load(low) as runner:
            out = runner.infer({"x": x})["output"]
        assert out.dtype == np.float32
        err = float(np.max(np.abs(out - ref)))
        assert 1e-5 < err < 0.5, err

    def test_effective_config_is_read_back_with_overrides(self, builds: Any) -> None:
        """A route knob overrides the mode preset, and the build reports the values in force."""
        route = "-torch:mode=max-autotune-no-cudagraphs -inductor:max_autotune=off -inductor:freezing=on"
        built = builds(route)
        assert built.info["mode_options"]["max_autotune"] is True
        assert built.info["effective_config"]["max_autotune"] is False
        assert built.info["effective_config"]["freezing"] is True
        assert "-inductor:max_autotune=off" in built.effective_route
        assert "-inductor:freezing=on" in built.effective_route
        assert "-torch:mode=max-autotune-no-cudagraphs" in built.effective_route
        # Frozen: the parameters are constants, so the compiled graph takes only the input x.
        code = (built.artifact / "graph_000.py").read_text()
        unpack = next(line for line in code.split("def call(self, args):")[1].splitlines() if "= args" in line)
        assert unpack.split("=")[0].strip().rstrip(",").count(",") == 0, unpack
        default_code = (builds("").artifact / "graph_000.py").read_text()
        default_unpack = next(
            line for line in default_code.split("def call(self, args):")[1].splitlines() if "= args" in line
        )
        assert default_unpack.count(",") >= 4, default_unpack

    def test_load_without_the_in_process_cache_recompiles(
        self, backend: TorchInductorBackend, builds: Any
    ) -> None:
        """load() in a process that did not build recompiles from the build info (same outputs)."""
        from gptuner_core.backends.torch_inductor import build as B

        built = builds("-torch:precision=fp16")
        x = np.random.default_rng(7).standard_normal((4, 1, 6, 6)).astype(np.float32)
        with backend.load(built) as runner:
            before = runner.infer({"x": x})["output"]
        cached = B._COMPILED.pop(str(built.artifact))
        with backend.load(built) as runner:
            assert runner.compiled is not cached
            after = runner.infer({"x": x})["output"]
        np.testing.assert_array_equal(before, after)

    def test_unknown_artifact_is_a_backend_error(self, backend: TorchInductorBackend, tmp_path: Path) -> None:
        """An artifact neither built here nor described by build info cannot be loaded."""
        with pytest.raises(BackendError, match="was not built in this process"):
            backend.load(BuildResult(artifact=tmp_path / "generated", effective_route="", info={}))

    def test_repro_names_the_options(self, backend: TorchInductorBackend) -> None:
        """repro() gives a Python snippet with the route's precision and Inductor options."""
        text = backend.repro(TINY, Route.parse("-torch:precision=bf16 -inductor:freezing=on"))["python"]
        assert "torch.bfloat16" in text and "'freezing': True" in text


#: runs in a FRESH interpreter: PyTorch's own defaults first, then each route's flags, as JSON.
FLAGS_CHILD = """
import json, torch
from gptuner_core.backends.torch_inductor.precision import apply_precision_flags, framework_flags
own = framework_flags()
out = {"own": own}
for precision in ["tf32", "fp32", "fp32_strict", "fp16", "fp32"]:
    out.setdefault(precision, []).append(apply_precision_flags(precision, "cuda"))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def flags() -> dict[str, Any]:
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", FLAGS_CHILD], capture_output=True, text=True,
                         env=env, timeout=120, check=True)
    return json.loads(out.stdout)


class TestFrameworkDefaults:
    """Item 7: the 1.0x baseline is what the user gets from torch.compile without gptuner."""


    def test_default_route_leaves_every_flag_at_pytorchs_default(self, flags: dict[str, Any]) -> None:
        """fp32 (the default) = PyTorch's defaults: cuDNN convolutions in TF32, matmuls strict
        ('highest'), also after a tf32 route changed them in the same process."""
        own = flags["own"]
        assert own["cudnn.allow_tf32"] is True and own["cuda.matmul.allow_tf32"] is False
        assert own["float32_matmul_precision"] == "highest"
        assert flags["fp32"] == [own, own]

    def test_strict_fp32_stays_available(self, flags: dict[str, Any]) -> None:
        """fp32_strict turns TF32 off for cuDNN convolutions too; tf32 turns it on everywhere."""
        strict = flags["fp32_strict"][0]
        assert strict["cudnn.allow_tf32"] is False and strict["cuda.matmul.allow_tf32"] is False
        assert strict["float32_matmul_precision"] == "highest"
        tf32 = flags["tf32"][0]
        assert tf32["cudnn.allow_tf32"] and tf32["cuda.matmul.allow_tf32"]
        assert tf32["float32_matmul_precision"] == "high"
        assert flags["fp16"][0] == flags["own"]

    def test_knob_database_offers_fp32_strict_on_gpus_with_fp32_default(self) -> None:
        from gptuner_core.backends.torch_inductor.knobs import knob_database

        knob = knob_database("cuda")["-torch:precision"]
        assert knob.default == "fp32" and "fp32_strict" in knob.values
        assert "PyTorch's own defaults" in knob.help
        assert "fp32_strict" not in knob_database("cpu")["-torch:precision"].values
