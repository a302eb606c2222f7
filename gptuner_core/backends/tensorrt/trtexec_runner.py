"""``TrtexecRunner``: run and time a saved engine with ``trtexec --loadEngine`` children.

Outputs are read losslessly from ``--dumpRawBindingsToFile`` (:mod:`trtexec_outputs`); timing is
trtexec's mean GPU compute time from ``--tuningResultFile``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from gptuner_core.backends._base import Runner
from gptuner_core.backends.tensorrt import trtexec_protocol as proto
from gptuner_core.backends.tensorrt.trtexec_child import TrtexecChildError
from gptuner_core.backends.tensorrt.trtexec_child import run_child
from gptuner_core.backends.tensorrt.trtexec_outputs import OUTPUT_FLAGS
from gptuner_core.backends.tensorrt.trtexec_outputs import exported_names
from gptuner_core.backends.tensorrt.trtexec_outputs import read_raw_outputs
from gptuner_core.errors import BackendError
from gptuner_core.records import CandidateState


class TrtexecRunner(Runner):
    """Runs a saved engine with ``trtexec --loadEngine``; each call is one trtexec child.

    ``time_calls(n)`` reads ``gpu_time_ms`` (trtexec's mean GPU compute time) from the result file
    of a run with ``--iterations=n --warmUp=0 --duration=0`` and returns ``n * mean`` in ns; each
    sample pays a process start and an engine load, so prefer the ``tensorrt`` backend for fine
    measurements.
    """

    def __init__(self, exe: str, engine: Path, options: dict[str, Any], extra_args: list[str]) -> None:
        self.exe = exe
        self.engine = engine
        self.options = options
        self.extra_args = extra_args
        self.workdir = engine.parent / "trtexec_run"
        self._input_flags: list[str] = []

    @property
    def log_path(self) -> Path:
        return self.workdir / "trtexec_run.log"

    def _prepare(self, feeds: dict[str, Any]) -> None:
        import numpy as np

        loads, shapes = [], {}
        items = sorted(feeds.items())
        names = [proto.tensor_name_arg(name, "--loadInputs") for name, _ in items]  # checks first
        self.workdir.mkdir(parents=True, exist_ok=True)
        for i, ((name, value), shown) in enumerate(zip(items, names, strict=True)):
            arr = np.ascontiguousarray(value)
            path = self.workdir / f"input{i}.bin"
            path.write_bytes(arr.tobytes())
            loads.append(f"{shown}:{path}")
            shapes[name] = tuple(arr.shape)
        self._input_flags = [f"--loadInputs={','.join(loads)}"] if loads else []
        if shapes:
            self._input_flags.append(proto.shapes_arg("--shapes", shapes))

    def _argv(self, iterations: int, extra: list[str]) -> list[str]:
        return [
            self.exe,
            f"--loadEngine={self.engine}",
            *self._input_flags,
            f"--iterations={iterations}",
            "--warmUp=0",
            "--duration=0",
            *proto.run_flags(self.options),
            *self.extra_args,
            *extra,
        ]

    def _child(self, argv: list[str], result: Path | None, cwd: Path | None = None) -> proto.ChildOutcome:
        if result is not None:
            result.unlink(missing_ok=True)
        rc, timed_out = run_child(argv, self.log_path, float(self.options.get("timeout_s") or 0), cwd=cwd)
        if result is None:
            if timed_out is not None or rc:
                how = "timeout" if timed_out else f"status {rc}"
                msg = f"trtexec run failed: {how} (log: {self.log_path})"
                raise BackendError(msg)
            return proto.ChildOutcome(state=CandidateState.COMPLETE, crashed=False, message="", returncode=rc)
        outcome = proto.classify(rc, result, timed_out_s=timed_out)
        if not outcome.ok:
            msg = f"trtexec run of {self.engine}: {outcome.message} (log: {self.log_path})"
            raise TrtexecChildError(msg, outcome)
        return outcome

    def _time_calls(self, n: int) -> int:
        result = self.workdir / "timing_result.json"
        outcome = self._child(self._argv(n, [f"--tuningResultFile={result}"]), result)
        assert outcome.result is not None
        return int(round(outcome.result.gpu_time_ms * n * 1e6))

    def infer(self, feeds: dict[str, Any]) -> dict[str, Any]:
        """One run with raw binding dumps (lossless); names from ``--exportOutput``."""
        self.prepare(feeds)
        raw = self.workdir / "raw"
        shutil.rmtree(raw, ignore_errors=True)
        raw.mkdir(parents=True)
        out = raw / "outputs.json"
        self._child(self._argv(1, [f"--exportOutput={out}", *OUTPUT_FLAGS]), None, cwd=raw)
        try:
            text = out.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            msg = f"trtexec wrote no output file {out} (log: {self.log_path})"
            raise BackendError(msg) from None
        names = exported_names(text)
        if not names:
            msg = f"trtexec output file {out} names no output tensor (log: {self.log_path})"
            raise BackendError(msg)
        return read_raw_outputs(raw, names)
