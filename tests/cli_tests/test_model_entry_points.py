"""Commands that take a model accept ``file.py:factory`` entry points (the torch backend's form)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptuner_core.cli import main


pytest.importorskip("torch")
pytestmark = pytest.mark.torch

FACTORY = str(Path(__file__).resolve().parents[2] / "assets" / "torch_digits_cnn.py") + ":factory"


def test_knobs_accepts_a_factory(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's own torch sample lists its knobs."""
    assert main(["knobs", "--backend", "torch", "--model", FACTORY]) == 0
    assert "knobs, tuner_version" in capsys.readouterr().out


def test_dry_run_accepts_a_factory(capsys: pytest.CaptureFixture[str]) -> None:
    """dry-run expands an expression over the factory model's knob database."""
    assert main(["knobs", "--backend", "torch", "--model", FACTORY, "--json"]) == 0
    import json

    first = json.loads(capsys.readouterr().out)["tuner_options"][0]
    assert first["option"] == "-torch:mode"
    expr = "-torch:mode=[default|max-autotune-no-cudagraphs]"
    assert main(["dry-run", "--backend", "torch", "--model", FACTORY, "--expr", expr]) == 0
    assert "Expanded to 2 build route configurations" in capsys.readouterr().out


def test_missing_factory_file_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """A factory whose file does not exist is refused with the file named."""
    assert main(["knobs", "--backend", "torch", "--model", "nope/missing.py:factory"]) == 2
    assert "nope/missing.py" in capsys.readouterr().err
