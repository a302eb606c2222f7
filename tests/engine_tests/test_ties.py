"""Tied finalists (issue 38): a real study whose two best routes run alike names the same route
every time, and every surface says it is a tie and why that route was named."""

from __future__ import annotations

import json

import pytest

from gptuner_core.cli import main
from gptuner_core.engine.decide.ties import TieOrder
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import Winner
from gptuner_core.storage import open_store

from .conftest import FAULTY
from .conftest import QUICK


def _tune(study, tiny_model, tiny_dataset) -> int:
    """``x`` and ``y`` sleep 10 ms per call, the default 20 ms: both are 2x the default and
    differ by nothing but their artifact, so only timing noise orders them."""
    return main(["tune", str(tiny_model), "--backend", FAULTY, "--expr", "-fault:tie=[x|y]",
                 "--dataset", str(tiny_dataset), "--batch-size", "4", "--epsilon", "1e-3",
                 "--revalidate-top-k", "2", "--revalidate-rounds", "6", "--drift-every", "0",
                 "--profile-runs", "0", "--study", str(study), "--quiet",
                 *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]])


@pytest.mark.slow
def test_a_tie_names_the_same_route_in_every_repeat(tmp_path, tiny_model, tiny_dataset, capsys):
    named = []
    for i in range(2):
        study = tmp_path / f"s{i}"
        assert _tune(study, tiny_model, tiny_dataset) == 0, capsys.readouterr()
        with open_store(study, readonly=True) as store:
            winner = store.winner()
            routes = {r.number: r.requested_route for r in store.candidates()}
        assert winner.verdict.value == "winner", winner.message
        assert winner.tied, winner.message
        named.append(routes[winner.number])
        assert winner.tie == "#1 and #2 tie within 1%: #1 is named (lower number)"
        assert winner.tie in winner.headline()
        assert "the rounds do not separate them" in winner.sentence()
        capsys.readouterr()
        assert main(["show", str(study)]) == 0
        assert "#1 and #2 tie within 1%" in capsys.readouterr().out
    assert named == ["-fault:tie=x", "-fault:tie=x"]


def _rec(n: int, route: str, loss: float) -> CandidateRecord:
    return CandidateRecord(number=n, requested_route=route,
                           accuracy=AccuracyResult(metric="cos", losses={"y": loss}))


class TestTieOrder:
    HISTORY = [_rec(0, "-a=0 -b=0", 0.0), _rec(4, "-a=1 -b=0", 0.0031), _rec(5, "-a=1 -b=1", 0.0012),
               _rec(6, "-a=1 -b=1", 0.0012), _rec(7, "-a=1 -b=0", 0.00311)]

    def test_smaller_accuracy_loss_first(self):
        ties = TieOrder.of(self.HISTORY)
        assert min([4, 5], key=ties.key) == 5
        assert ties.reason(5, [4], 0.01) == "#4 and #5 tie within 1%: #5 is named (smaller accuracy loss)"

    def test_then_fewer_knobs_changed_then_the_lower_number(self):
        ties = TieOrder.of(self.HISTORY)
        assert ties.why(5, [6]) == "lower number"
        # 0.0031 and 0.00311 are one loss to two significant digits: the knob count decides
        assert ties.why(4, [7]) == "lower number"
        assert min([7, 4], key=ties.key) == 4

    def test_the_winner_record_keeps_the_tie(self):
        w = Winner.from_json({"verdict": "winner", "number": 5, "speedup": 3.46, "ci": [3.1, 3.9],
                              "message": "m", "rounds": 4, "tied": [4],
                              "tie": "#4 and #5 tie within 1%: #5 is named (smaller accuracy loss)"})
        assert Winner.from_json(w.to_json()) == w
        assert w.headline() == ("winner: route #5, 3.460x faster [3.100, 3.900], after 4 rounds "
                                "(#4 and #5 tie within 1%: #5 is named (smaller accuracy loss))")
        assert "#4 is as fast within 1%" in w.sentence()
        assert "smaller accuracy loss first" in w.sentence()
