"""Contract test suite for :class:`gptuner_core.backends._base.Backend` implementations.

Bind it like optuna's ``StorageTestCase``: subclass :class:`BackendContract` in a test module and
provide three fixtures (plus optional ones)::

    pytestmark = skip_unless_available(OnnxRuntimeBackend)

    class TestOnnxRuntimeContract(BackendContract):
        @pytest.fixture
        def backend(self):
            return OnnxRuntimeBackend()

        @pytest.fixture
        def model(self):
            return ASSETS / "mlp_digits.onnx"

        @pytest.fixture
        def feeds(self):
            return {"input": np.zeros((4, 64), np.float32)}

Optional fixtures: ``calibration`` (named arrays for precision transforms; default: ``feeds``),
``output_names`` (the model's output names; default: ``None`` = only check that outputs exist),
``bad_model_suffix`` (file suffix for the not-a-model files; default: the model's own suffix).

The suite is backend-neutral: it only uses the abstract contract, never a library.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import pytest

from gptuner_core.backends._base import Backend
from gptuner_core.backends._base import BuildResult
from gptuner_core.backends._base import Runner
from gptuner_core.backends._base import TensorSpec
from gptuner_core.errors import BackendError
from gptuner_core.errors import GptunerError
from gptuner_core.knobs import KnobDatabase
from gptuner_core.routes import Route


if TYPE_CHECKING:
    from pathlib import Path


def skip_unless_available(backend_cls: type[Backend]) -> Any:
    """A ``pytestmark`` that skips a bound module when the backend cannot run here."""
    try:
        avail = backend_cls.availability()
    except Exception as exc:  # availability() must not raise; report it as the reason
        return pytest.mark.skip(reason=f"{backend_cls.__name__}.availability() raised {exc!r}")
    return pytest.mark.skipif(
        not avail.available, reason=f"backend '{backend_cls.name}' unavailable: {avail.reason}"
    )


class BackendContract:
    """Every backend: knob database, build, load, infer, time, and clear failures."""

    # -- optional fixtures with defaults ----------------------------------------------------
    @pytest.fixture
    def calibration(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
        return feeds

    @pytest.fixture
    def output_names(self) -> list[str] | None:
        return None

    @pytest.fixture
    def bad_model_suffix(self, model: Path) -> str:
        return model.suffix

    @pytest.fixture
    def built(
        self,
        backend: Backend,
        model: Path,
        tmp_path: Path,
        calibration: dict[str, np.ndarray] | None,
    ) -> BuildResult:
        db = backend.describe(model)
        workdir = tmp_path / "candidates" / "00000"
        workdir.mkdir(parents=True)
        return backend.build(model, Route.default(db), workdir, calibration=calibration)

    # -- parent-side methods ----------------------------------------------------------------
    def test_availability_is_reported(self, backend: Backend) -> None:
        """availability() never raises and says the backend runs (bound modules skip otherwise)."""
        avail = type(backend).availability()
        assert avail.available, avail.reason

    def test_describe_returns_valid_database(self, backend: Backend, model: Path) -> None:
        """describe() gives a non-empty knob database whose default route validates."""
        db = backend.describe(model)
        assert isinstance(db, KnobDatabase)
        assert len(db) > 0
        Route.default(db).validate(db)
        for knob in db:
            assert knob.name.startswith("-")
            assert knob.allows(knob.default), f"{knob.name}: default {knob.default!r} not allowed"
        assert KnobDatabase.from_json(json.loads(db.to_string())) == db

    def test_describe_is_deterministic(self, backend: Backend, model: Path) -> None:
        """Two describe() calls on the same model give the same database (same sha256)."""
        assert backend.describe(model).sha256 == backend.describe(model).sha256

    def test_input_specs_name_the_feeds(
        self, backend: Backend, model: Path, feeds: dict[str, np.ndarray]
    ) -> None:
        """input_specs() lists exactly the inputs the feeds provide."""
        specs = backend.input_specs(model)
        assert all(isinstance(s, TensorSpec) for s in specs)
        assert sorted(s.name for s in specs) == sorted(feeds)

    def test_environment_has_fingerprint_parts(self, backend: Backend) -> None:
        """environment() names the backend version, the device and the runtime as strings."""
        env = backend.environment()
        for key in ("backend_version", "device", "runtime"):
            assert isinstance(env.get(key), str) and env[key], key
        assert all(isinstance(v, str) for v in env.values())

    # -- build / load / run -------------------------------------------------------------------
    def test_build_default_route(self, backend: Backend, model: Path, built: BuildResult) -> None:
        """Building the default route yields an artifact, a valid effective route, JSON info."""
        assert built.artifact.exists()
        db = backend.describe(model)
        Route.parse(built.effective_route).validate(db)
        json.dumps(built.info)

    def test_build_is_reproducible(
        self,
        backend: Backend,
        model: Path,
        tmp_path: Path,
        calibration: dict[str, np.ndarray] | None,
        built: BuildResult,
    ) -> None:
        """Building the same route twice reports the same effective route."""
        workdir = tmp_path / "candidates" / "00001"
        workdir.mkdir(parents=True)
        again = backend.build(
            model, Route.default(backend.describe(model)), workdir, calibration=calibration
        )
        assert again.effective_route == built.effective_route

    def test_load_and_infer(
        self,
        backend: Backend,
        built: BuildResult,
        feeds: dict[str, np.ndarray],
        output_names: list[str] | None,
    ) -> None:
        """load() gives a Runner whose infer() returns named host arrays, batch-first."""
        batch = next(iter(feeds.values())).shape[0]
        with backend.load(built) as runner:
            assert isinstance(runner, Runner)
            out = runner.infer(feeds)
            again = runner.infer(feeds)
        assert out, "infer() returned no outputs"
        if output_names is not None:
            assert sorted(out) == sorted(output_names)
        for name, arr in out.items():
            assert isinstance(arr, np.ndarray), name
            assert arr.shape[0] == batch, (name, arr.shape)
            np.testing.assert_allclose(arr, again[name], rtol=1e-3, atol=1e-4)

    def test_time_calls_grows_with_n(
        self, backend: Backend, built: BuildResult, feeds: dict[str, np.ndarray]
    ) -> None:
        """time_calls(n) returns positive integer ns, and 20 calls take longer than 2."""
        with backend.load(built) as runner:
            runner.prepare(feeds)
            first = runner.time_calls(1)
            assert isinstance(first, int) and first > 0
            few = min(runner.time_calls(2) for _ in range(3))
            many = min(runner.time_calls(20) for _ in range(3))
        assert many > few > 0

    def test_timing_before_prepare_is_refused(self, backend: Backend, built: BuildResult) -> None:
        """The Runner base owns the guard: timing unprepared inputs is a BackendError."""
        from gptuner_core.errors import BackendError

        with backend.load(built) as runner:
            with pytest.raises(BackendError, match=r"time_calls\(\) before prepare\(\)"):
                runner.time_calls(1)

    def test_telemetry_is_a_dict(self, backend: Backend, built: BuildResult) -> None:
        """telemetry() returns a JSON-able dict (possibly empty)."""
        with backend.load(built) as runner:
            json.dumps(runner.telemetry())

    # -- failures ---------------------------------------------------------------------------
    def test_unknown_knob_is_rejected(
        self,
        backend: Backend,
        model: Path,
        tmp_path: Path,
        calibration: dict[str, np.ndarray] | None,
    ) -> None:
        """A route naming a knob the database lacks fails with a GptunerError naming it."""
        route = Route.parse("-gptuner-contract:no_such_knob=1")
        with pytest.raises(GptunerError, match="no_such_knob"):
            backend.build(model, route, tmp_path, calibration=calibration)

    def test_invalid_value_is_rejected(
        self,
        backend: Backend,
        model: Path,
        tmp_path: Path,
        calibration: dict[str, np.ndarray] | None,
    ) -> None:
        """A route with a value outside a bounded knob's list fails with a GptunerError."""
        db = backend.describe(model)
        knob = next((k for k in db if k.bounded), None)
        if knob is None:
            pytest.skip("database has no bounded knob")
        route = Route.parse(f"{knob.name}=__not_a_value__")
        with pytest.raises(GptunerError, match="__not_a_value__"):
            backend.build(model, route, tmp_path, calibration=calibration)

    def test_not_a_model_is_a_backend_error(
        self, backend: Backend, tmp_path: Path, bad_model_suffix: str
    ) -> None:
        """A file that is not a model gives BackendError from describe() and input_specs()."""
        bad = tmp_path / f"not_a_model{bad_model_suffix}"
        bad.write_bytes(b"this is not a model \x00\xff\x13 at all\n")
        with pytest.raises(BackendError):
            backend.describe(bad)
        with pytest.raises(BackendError):
            backend.input_specs(bad)

    def test_truncated_model_is_a_backend_error(
        self, backend: Backend, model: Path, tmp_path: Path
    ) -> None:
        """The first half of the model file gives BackendError, not a traceback."""
        cut = tmp_path / f"truncated{model.suffix}"
        data = model.read_bytes()
        cut.write_bytes(data[: len(data) // 2])
        with pytest.raises(BackendError):
            backend.input_specs(cut)

    def test_missing_model_is_a_backend_error(
        self, backend: Backend, tmp_path: Path, bad_model_suffix: str
    ) -> None:
        """A path that does not exist gives BackendError."""
        with pytest.raises(BackendError):
            backend.input_specs(tmp_path / f"missing{bad_model_suffix}")

    def test_repro_is_text(self, backend: Backend, model: Path) -> None:
        """repro() returns a dict of strings (possibly empty)."""
        rep = backend.repro(model, Route.default(backend.describe(model)))
        assert isinstance(rep, dict)
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in rep.items())
