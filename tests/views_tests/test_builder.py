"""The expression builder's model: text <-> pickers, search that keeps picks, clear messages,
counts for every strategy (no streamlit)."""

from __future__ import annotations

import pytest

from gptuner_core.errors import ExpressionError
from gptuner_core.expressions import Expression
from gptuner_core.knobs import KnobDatabase
from gptuner_core.views import builder


@pytest.fixture(scope="module")
def db() -> KnobDatabase:
    return KnobDatabase.from_json({"tuner_version": "t", "tuner_options": [
        {"option": "-quant:mode", "allowed_values": "-quant:mode=[off|qdq|dynamic]",
         "default_value": "off", "help": "quantization"},
        {"option": "-ort:threads", "allowed_values": "-ort:threads=[0|1|2]", "default_value": "0",
         "help": "intra-op threads"},
        {"option": "-ort:level", "allowed_values": "-ort:level=[0|1|2|99]", "default_value": "99",
         "help": "graph optimization level"},
        {"option": "-peep:max", "allowed_values": "-peep:max=int32_t", "default_value": "3",
         "help": "unbounded"},
    ]})


class TestRoundTrip:
    def test_text_parsed_back_into_pickers(self, db) -> None:
        """Fixed, variable and single-bracket terms survive text -> pickers -> text."""
        text = "-quant:mode=[off|qdq] -ort:threads=1 -ort:level=[2] -peep:max=7"
        sel = builder.selection_from_text(text, db)
        assert sel.knobs == ("-quant:mode", "-ort:threads", "-ort:level", "-peep:max")
        assert sel.values["-quant:mode"] == ("off", "qdq")
        assert sel.bracketed == {"-ort:level"}
        assert builder.compose_text(sel.knobs, sel.values, sel.bracketed) == text

    def test_blank_is_empty(self, db) -> None:
        assert builder.selection_from_text("   ", db) == builder.Selection()

    def test_invalid_raises(self, db) -> None:
        with pytest.raises(ExpressionError):
            builder.selection_from_text("-quant:mode=[int4]", db)

    def test_empty_values_are_left_out(self) -> None:
        assert builder.compose_text(["-a", "-b"], {"-a": ["x", "y"], "-b": []}) == "-a=[x|y]"


class TestSearchKeepsPicks:
    def test_picked_knobs_stay_listed(self) -> None:
        """The search narrows what is shown; knobs already picked stay (work is never dropped)."""
        assert builder.picker_options(["-ort:level"], ["-quant:mode"]) == ["-quant:mode", "-ort:level"]
        assert builder.picker_options([], ["-a", "-b"]) == ["-a", "-b"]


class TestMessages:
    def test_bad_value_named_with_allowed(self, db) -> None:
        msg = builder.expression_problem("-ort:level=99 -quant:mode=[off|int4]", db)
        assert msg.startswith("Invalid value(s) for knob: -quant:mode")
        assert "not allowed: int4" in msg and "off|qdq|dynamic" in msg

    def test_bad_fixed_value(self, db) -> None:
        msg = builder.expression_problem("-ort:threads=8", db)
        assert "not allowed: 8" in msg and "0|1|2" in msg

    def test_unknown_knob_suggests(self, db) -> None:
        msg = builder.expression_problem("-quant:mod=[off]", db)
        assert "Unknown knob: -quant:mod" in msg and "-quant:mode" in msg

    def test_comment_token(self, db) -> None:
        msg = builder.expression_problem("# note -ort:threads=1", db)
        assert "Invalid expression (no '='): #" in msg and "-knob=value" in msg

    def test_a_stray_line_of_an_expression_file(self, db) -> None:
        """Issue 39 item 14: 'bogus line here' in an expression file was told "'#' comments
        belong in expression files": it was one. The hint says how to make it a comment."""
        msg = builder.file_problem("wrong.txt", "# fine\nbogus line here\n-ort:threads=[0|1]\n")
        assert "belong in expression files" not in msg
        assert msg.startswith("expression file 'wrong.txt', line 2: 'bogus line here'")
        assert "start the line with '#'" in msg
        assert builder.file_problem("ok.txt", "# c\n-ort:threads=[0|1]  # why\n\n") is None

    def test_valid_is_none(self, db) -> None:
        assert builder.expression_problem("-ort:threads=[0|1]", db) is None


class TestCounts:
    def test_every_strategy_counted_default_included(self, db) -> None:
        """Every registered strategy gets a count; the default (fast_tpe) is marked and counted."""
        from gptuner_core.strategies import DEFAULT_STRATEGY
        from gptuner_core.strategies import strategy_names

        expr = Expression.parse("-quant:mode=[off|qdq|dynamic] -ort:threads=[0|1|2]", db)
        counts = {c.strategy: c for c in builder.strategy_counts(expr)}
        assert set(counts) == set(strategy_names())
        assert counts["fast"].text == "5" and counts["full"].text == "9"
        assert counts[DEFAULT_STRATEGY].default and counts[DEFAULT_STRATEGY].low is not None
        assert counts["mixed"].text == "5–9"  # phase 1 (5), at most the 9 distinct routes of the space (issue 26: never more)
        capped = {c.strategy: c for c in builder.strategy_counts(expr, max_candidates=3)}
        assert capped["full"].text == "3"
