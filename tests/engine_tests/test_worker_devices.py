"""Ray workers' device rules without Ray: heterogeneous devices refused unless normalize, the
normalized speed-up, artifacts fetched as bytes (``engine.scale.ray_workers.Worker`` is the actor's body)."""

from __future__ import annotations

import pytest

from gptuner_core.errors import ConfigError

from .conftest import REPO


def test_workers_devices_checked_normalized_and_fetched(tmp_path):
    """Heterogeneous devices are refused without normalize; with it, the speed-up is against the
    default route measured on the candidate's own device; artifacts come back as bytes."""
    from gptuner_core.engine.evaluate.recorded import RecordedEvaluator
    from gptuner_core.engine.scale.ray_workers import Worker
    from gptuner_core.engine.scale.ray_workers import check_devices
    from gptuner_core.engine.scale.ray_workers import unpack
    from gptuner_core.recording import load_recording
    from gptuner_core.strategies import Proposal

    a = {"worker": 0, "host": "h1", "fingerprint": "gpu H200 143771 MiB driver 580"}
    b = {"worker": 1, "host": "h2", "fingerprint": "gpu A100 81920 MiB driver 580"}
    check_devices([a, dict(a, worker=1)], normalize=False)
    with pytest.raises(ConfigError, match="devices differ.*H200.*A100.*--normalize"):
        check_devices([a, b], normalize=False)
    check_devices([a, b], normalize=True)

    recording = load_recording(REPO / "tests/data/recorded_sweep/sweep.json")
    worker = Worker(RecordedEvaluator(recording), 1, "cpu", True)
    base = recording.baseline.replace(number=0, extra={"device": {"fingerprint": "another"}})
    route = recording.expression.route_at("full", 5)
    rec = worker.evaluate(Proposal(route=route), 1, [base], {})
    assert rec.extra["device"]["worker"] == 1 and rec.extra["device"]["host"]
    assert rec.extra["normalized"]["default_median_ms"] == pytest.approx(base.latency.median_ms)
    same = Worker(RecordedEvaluator(recording), 0, "cpu", True)
    plain = same.evaluate(Proposal(route=route), 1, [base.replace(extra={"device": same.device})], {})
    assert "normalized" not in plain.extra

    folder = tmp_path / "artifact"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "w.bin").write_bytes(b"\0" * 1000)
    got = unpack(worker.fetch(str(folder)), "artifact", tmp_path / "fetched")
    assert (got / "sub" / "w.bin").read_bytes() == b"\0" * 1000
    (tmp_path / "m.onnx").write_bytes(b"onnx-bytes")
    assert unpack(worker.fetch(str(tmp_path / "m.onnx")), "m.onnx", tmp_path / "f2").read_bytes() == b"onnx-bytes"
