"""Regimes: detected in recorded ONNX Runtime samples from this machine, not in unimodal noise,
and the sequential verdict stays valid on them (no false winners beyond alpha, never "not faster"
for a real gain).

``tests/data/ort_regimes.json``: three runs of 16 fresh processes each, ONNX Runtime (CPU, default
SessionOptions) on ``assets/cnn_digits.onnx``, batch 1, recorded with
``python benchmarks/record_regimes.py --processes 16 --max-s 0.5 --out tests/data/ort_regimes.json
--append`` (three times) on the shared 2-core VM.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gptuner_core.measurement import Regimes
from gptuner_core.measurement import SequentialPlan
from gptuner_core.measurement import Verdict
from gptuner_core.measurement import detect_regimes
from gptuner_core.measurement import revalidate_sequential


DATA = json.loads((Path(__file__).parents[1] / "data" / "ort_regimes.json").read_text())
POOL = np.array([m for run in DATA["runs"] for m in run["per_process_medians_ms"]])


def recorded(speed: dict[int, float], seed: int):
    """measure_fresh drawing each process's median from the recorded per-process medians."""
    rng = np.random.default_rng(seed)
    return lambda number, round_index: [float(rng.choice(POOL)) * speed[number]]


class TestDetection:
    @pytest.mark.parametrize("run", range(len(DATA["runs"])))
    def test_recorded_per_process_medians_are_bimodal(self, run: int) -> None:
        """Each recorded run of 16 processes splits into a fast and a slow regime >= 1.25x apart."""
        reg = detect_regimes(DATA["runs"][run]["per_process_medians_ms"], route=0)
        assert reg.bimodal and reg.separation >= 1.25
        assert "two regimes across 16 fresh processes" in reg.message

    def test_recorded_windows_jump_between_levels(self) -> None:
        """Inside one process's measurement window the samples also sit on separate levels."""
        for run in DATA["runs"]:
            for window in run["windows"]:
                assert detect_regimes(window["samples_ms"], scope="window").bimodal

    def test_unimodal_noise_is_not_called_bimodal(self) -> None:
        """Lognormal per-process noise (CV 5 %, 16 processes; CV 30 %, 500 samples in a window)
        is flagged in at most 2 % of 200 seeded draws."""
        rng = np.random.default_rng(0)
        procs = sum(detect_regimes(rng.lognormal(0, 0.05, 16)).bimodal for _ in range(200))
        windows = sum(detect_regimes(rng.lognormal(0, 0.3, 500), scope="window").bimodal
                      for _ in range(200))
        assert procs <= 4 and windows <= 4

    def test_few_values_are_never_bimodal_and_never_raise(self) -> None:
        for values in ([], [0.4], [0.4, 0.8], [0.4, 0.4, 0.8, 0.8, 0.8]):
            assert not detect_regimes(values).bimodal

    def test_record_round_trips(self) -> None:
        reg = detect_regimes(DATA["runs"][0]["per_process_medians_ms"], route=3)
        assert Regimes.from_json(json.loads(json.dumps(reg.to_json()))) == reg


class TestVerdictOnRecordedRegimes:
    def test_aa_on_recorded_regimes_gives_at_most_alpha_false_winners(self) -> None:
        """A/A with 3 contenders, each process drawn from the recorded medians: <= 5 of 100."""
        wins = sum(
            revalidate_sequential([1, 2, 3], 0, recorded(dict.fromkeys(range(4), 1.0), s),
                                  seed=s).verdict is Verdict.WINNER
            for s in range(100)
        )
        assert wins <= 5

    def test_a_real_gain_is_never_called_not_faster(self) -> None:
        """A route 2x faster under these regimes: winner or inconclusive with a projection of the
        rounds needed, never "not faster"; same-regime rounds are compared once regimes show."""
        results = [revalidate_sequential([1], 0, recorded({0: 1.0, 1: 0.5}, s), seed=s)
                   for s in range(40)]
        verdicts = [r.verdict for r in results]
        assert Verdict.NOT_FASTER not in verdicts
        assert verdicts.count(Verdict.WINNER) >= 10
        long = [r for r in results if r.verdict is Verdict.INCONCLUSIVE]
        assert long, "some studies run to the round budget under these regimes"
        for res in long:
            assert res.rounds == SequentialPlan().max_rounds
            assert res.projected_rounds is None or res.projected_rounds > res.rounds
            assert "inconclusive after 20 rounds (round budget spent)" in res.message
        assert sum(r.contender(1).method in ("matched", "rank") for r in long) >= 0.8 * len(long)
