"""Typed text fields: one clear line for every bad entry, the typed value otherwise."""

from __future__ import annotations

import pytest

from gptuner_core.dashboard.inputs import parse_number
from gptuner_core.dashboard.inputs import parse_text_list


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "1e400", "1e13", "", "abc", "1,5"])
def test_epsilon_bad_entries(text) -> None:
    value, problem = parse_number(text, "ε", minimum=0, exclusive_min=True)
    assert value is None
    assert problem.startswith("ε: expected a number > 0 (got ")


def test_good_and_blank() -> None:
    assert parse_number(" 1e-3 ", "ε", minimum=0, exclusive_min=True) == (1e-3, None)
    assert parse_number("", "max candidates", kind=int, minimum=1, blank=None) == (None, None)
    assert parse_number("12", "n", kind=int, minimum=1) == (12, None)
    value, problem = parse_number("1.5", "n", kind=int, minimum=1)
    assert value is None and "expected a whole number ≥ 1 (got '1.5')" in problem


def test_text_list() -> None:
    assert parse_text_list("a, b\nc,,") == ("a", "b", "c")
