"""Tunable expressions: trtexec's grammar, exact messages and expansion orders (reference §2)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from gptuner_core.errors import ExpressionError
from gptuner_core.errors import GptunerError
from gptuner_core.expressions import Expression
from gptuner_core.expressions import Term
from gptuner_core.expressions import dry_run_lines
from gptuner_core.expressions import expression_file_text
from gptuner_core.expressions import mixed_phase2
from gptuner_core.expressions import read_expression_file
from gptuner_core.expressions import tokenize
from gptuner_core.expressions import write_expression_file
from gptuner_core.knobs import KnobDatabase


DATA = Path(__file__).parent / "data"


def make_db(*knobs: tuple[str, str, str]) -> KnobDatabase:
    """Database from ``(name, allowed_values, default)`` triples."""
    return KnobDatabase.from_json(
        {
            "tuner_version": "t",
            "tuner_options": [
                {"option": n, "allowed_values": a, "default_value": d, "help": ""}
                for n, a, d in knobs
            ],
        }
    )


@pytest.fixture(scope="module")
def trt_db() -> KnobDatabase:
    return KnobDatabase.from_file(DATA / "trt_knobs_small.json")


@pytest.fixture(scope="module")
def opt_db() -> KnobDatabase:
    return make_db(("-opt1", "-opt1=[on|off]", "off"), ("-opt2", "-opt2=[0|1|2]", "2"))


def strs(routes) -> list[str]:
    return [str(r) for r in routes]


class TestWorkedExamples:
    """The reference's worked examples, in trtexec's exact order."""

    def test_opt1_opt2_fast_order(self, opt_db):
        """Baseline at DB defaults, then the last knob's non-default values, then the first's."""
        expr = Expression.parse("-opt1=[on|off] -opt2=[0|1|2]", opt_db)
        assert strs(expr.iter_routes("fast")) == [
            "-opt1=off -opt2=2",
            "-opt1=off -opt2=0",
            "-opt1=off -opt2=1",
            "-opt1=on -opt2=2",
        ]
        assert expr.count("fast") == 4

    def test_opt1_opt2_full_order(self, opt_db):
        """Full is a product in listed order, last knob fastest."""
        expr = Expression.parse("-opt1=[on|off] -opt2=[0|1|2]", opt_db)
        assert strs(expr.iter_routes("full")) == [
            "-opt1=on -opt2=0",
            "-opt1=on -opt2=1",
            "-opt1=on -opt2=2",
            "-opt1=off -opt2=0",
            "-opt1=off -opt2=1",
            "-opt1=off -opt2=2",
        ]
        assert expr.count("full") == 6

    def test_dry_run_lines(self, opt_db):
        """Numbered like trtexec --dryRun: ``[i]:<route>``."""
        expr = Expression.parse("-opt1=[on|off] -opt2=[0|1|2]", opt_db)
        assert list(dry_run_lines(expr, "fast")) == [
            "[0]:-opt1=off -opt2=2",
            "[1]:-opt1=off -opt2=0",
            "[2]:-opt1=off -opt2=1",
            "[3]:-opt1=on -opt2=2",
        ]
        assert list(dry_run_lines(expr, "full", limit=2)) == [
            "[0]:-opt1=on -opt2=0",
            "[1]:-opt1=on -opt2=1",
        ]

    def test_abc_counts_and_mixed_phase2(self):
        """Three binary knobs defaulting to on: full 8, fast 4; A and C positive -> 4 routes."""
        db = make_db(*[(n, f"{n}=[on|off]", "on") for n in ("-A", "-B", "-C")])
        expr = Expression.parse("-A=[on|off] -B=[on|off] -C=[on|off]", db)
        assert expr.count("full") == 8
        assert expr.count("fast") == expr.count("mixed") == 4
        assert strs(expr.iter_routes("fast")) == [
            "-A=on -B=on -C=on",
            "-A=on -B=on -C=off",
            "-A=on -B=off -C=on",
            "-A=off -B=on -C=on",
        ]
        assert list(expr.iter_routes("mixed")) == list(expr.iter_routes("fast"))
        phase2 = mixed_phase2(expr, ["-A", "-C"])
        assert phase2.count("full") == 4
        assert strs(phase2.iter_routes("full")) == [
            "-A=on -B=on -C=on",
            "-A=on -B=on -C=off",
            "-A=off -B=on -C=on",
            "-A=off -B=on -C=off",
        ]
        assert str(phase2) == "-A=[on|off] -B=on -C=[on|off]"

    def test_cookbook_counts(self, trt_db):
        """Real TRT 11.1 run: conv_lowering x kgen:tiling gives fast 4, full 6."""
        expr = Expression.parse("-conv_lowering=[on|off] -kgen:tiling=[0|1|2]", trt_db)
        assert (expr.count("fast"), expr.count("full")) == (4, 6)
        assert len(list(expr.iter_routes("fast"))) == 4
        assert len(list(expr.iter_routes("full"))) == 6


class TestExpansionRules:
    """Baseline, fixed knobs, defaults not listed, generated route shape."""

    def test_default_not_listed_still_baseline(self, trt_db):
        """A variable knob takes its DB default at index 0 even if the list omits it."""
        expr = Expression.parse("-kgen:codegen:cuda_tile=[2|3]", trt_db)
        assert strs(expr.iter_routes("fast")) == [
            "-kgen:codegen:cuda_tile=1",
            "-kgen:codegen:cuda_tile=2",
            "-kgen:codegen:cuda_tile=3",
        ]
        assert strs(expr.iter_routes("full")) == [
            "-kgen:codegen:cuda_tile=2",
            "-kgen:codegen:cuda_tile=3",
        ]

    def test_fixed_knobs_pinned_and_counted_once(self, trt_db):
        """Fixed knobs keep their value everywhere and count as 1 value in full."""
        expr = Expression.parse(
            "-conv_use_long_w=off -slice_fusion=[on|off] -cask_fusion:num_tactics=12", trt_db
        )
        assert expr.count("full") == 2
        assert expr.count("fast") == 2
        assert strs(expr.iter_routes("fast")) == [
            "-conv_use_long_w=off -slice_fusion=on -cask_fusion:num_tactics=12",
            "-conv_use_long_w=off -slice_fusion=off -cask_fusion:num_tactics=12",
        ]
        assert [t.name for t in expr.variable_terms] == ["-slice_fusion"]
        assert expr.terms[0] == Term("-conv_use_long_w", ("off",), False)

    def test_baseline_route(self, trt_db):
        expr = Expression.parse("-copy_ppg=[off] -kgen:tiling=2", trt_db)
        assert str(expr.baseline()) == "-copy_ppg=on -kgen:tiling=2"
        assert expr.count("fast") == 2

    def test_only_listed_knobs_in_routes(self, trt_db):
        """Generated routes name only the expression's knobs, in expression order."""
        expr = Expression.parse("-kgen:tiling=[0|2] -conv_lowering=[off|on]", trt_db)
        for route in expr.iter_routes("full"):
            assert [n for n, _ in route.assignments] == ["-kgen:tiling", "-conv_lowering"]

    def test_varied_at(self, opt_db):
        expr = Expression.parse("-opt1=[on|off] -opt2=[0|1|2]", opt_db)
        assert [expr.varied_at(i) for i in range(4)] == [
            None,
            ("-opt2", "0"),
            ("-opt2", "1"),
            ("-opt1", "on"),
        ]

    def test_route_at_out_of_range(self, opt_db):
        expr = Expression.parse("-opt1=[on|off] -opt2=[0|1|2]", opt_db)
        with pytest.raises(IndexError, match=r"^Index 6 is out of range \[0, 6\)$"):
            expr.route_at("full", 6)
        with pytest.raises(IndexError):
            expr.route_at("fast", -1)

    def test_unknown_search(self, opt_db):
        expr = Expression.parse("-opt1=[on|off]", opt_db)
        with pytest.raises(ExpressionError, match="Unknown tuning search 'exhaustive'"):
            expr.count("exhaustive")

    def test_canonical_text_round_trips(self, trt_db):
        text = "-kgen:tiling=[ 0 | 2 ]  -conv_use_long_w=off"
        expr = Expression.parse(text, trt_db)
        assert str(expr) == "-kgen:tiling=[0|2] -conv_use_long_w=off"
        assert Expression.parse(str(expr), trt_db) == expr

    def test_mixed_phase2_refuses_unknown_knob(self, opt_db):
        expr = Expression.parse("-opt1=[on|off] -opt2=[0|1|2]", opt_db)
        with pytest.raises(ExpressionError, match="-nope"):
            mixed_phase2(expr, ["-nope"])


class TestTokenizer:
    def test_split_on_space_outside_brackets_only(self):
        assert tokenize("-a=[x | y]  -b=1 ") == ["-a=[x | y]", "-b=1"]

    def test_tab_is_not_a_separator(self, trt_db):
        """trtexec splits on ' ' only: a tab glues two tokens into one bad fixed value."""
        assert tokenize("-a=on\t-b=off") == ["-a=on\t-b=off"]
        with pytest.raises(ExpressionError) as info:
            Expression.parse("-copy_ppg=on\t-slice_fusion=off", trt_db)
        assert str(info.value) == "Invalid value for knob: -copy_ppg=on\t-slice_fusion=off"

    def test_values_trimmed_of_spaces_and_tabs(self, trt_db):
        expr = Expression.parse("-kgen:tiling=[\t0 |2\t]", trt_db)
        assert expr.terms[0].values == ("0", "2")


class TestMessages:
    """Every invalid case of the reference table gives trtexec's exact message."""

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("-copy_ppg", "Invalid expression (no '='): -copy_ppg"),
            ("-builderOptimizationLevel=[1|3|5]", "Unknown knob: -builderOptimizationLevel"),
            ("copy_ppg=on", "Unknown knob: copy_ppg"),
            (
                "-copy_ppg=x[on|off]",
                "Invalid expression format (unexpected content before '['): -copy_ppg=x[on|off]",
            ),
            (
                "-copy_ppg=[on|off]x",
                "Invalid expression format (unexpected content after ']'): -copy_ppg=[on|off]x",
            ),
            ("-kgen:tiling=[0|...|2]", "Unbounded expression not allowed: -kgen:tiling=[0|...|2]"),
            ("-copy_ppg=[]", "Empty value list in expression: -copy_ppg=[]"),
            ("-copy_ppg=[ | ]", "Empty value list in expression: -copy_ppg=[ | ]"),
            (
                "-copy_ppg=[on|off|on]",
                "Duplicate value 'on' in expression: -copy_ppg=[on|off|on]",
            ),
            ("-kgen:tiling=[0|7]", "Invalid value(s) for knob: -kgen:tiling"),
            ("-kgen:tiling=7", "Invalid value for knob: -kgen:tiling=7"),
            (
                "-cask_fusion:num_tactics=[10|20]",
                "Knob has unbounded values (int32_t): -cask_fusion:num_tactics",
            ),
            ("-peep:max=[1|2]", "Knob has unbounded values (int32_t): -peep:max"),
            (
                "-cask_fusion:num_tactics=int32_t",
                "Unbounded expression 'int32_t' not allowed: -cask_fusion:num_tactics=int32_t",
            ),
            ("", "Empty input"),
            ("   ", "No expressions found"),
            (
                "-copy_ppg=on -copy_ppg=off",
                "Knob listed more than once in expression: -copy_ppg (expected each knob once)",
            ),
        ],
    )
    def test_exact_message(self, trt_db, text, message):
        with pytest.raises(ExpressionError) as info:
            Expression.parse(text, trt_db)
        assert str(info.value) == message
        assert isinstance(info.value, GptunerError)

    def test_first_bad_token_wins(self, trt_db):
        with pytest.raises(ExpressionError, match=r"^Unknown knob: -zzz$"):
            Expression.parse("-copy_ppg=[on|off] -zzz=1 -kgen:tiling=9", trt_db)

    def test_unbounded_fixed_value_not_checked(self, trt_db):
        """A fixed value on an unbounded knob is accepted as is."""
        expr = Expression.parse("-cask_fusion:num_tactics=12345 -peep:max=3", trt_db)
        assert str(expr.baseline()) == "-cask_fusion:num_tactics=12345 -peep:max=3"

    def test_unmatched_bracket_is_a_fixed_value(self, trt_db):
        """Without a '[' ... ']' pair the value is fixed (trtexec) and then validated."""
        with pytest.raises(
            ExpressionError, match=r"^Invalid value for knob: -copy_ppg=\[on\|off$"
        ):
            Expression.parse("-copy_ppg=[on|off", trt_db)


class TestFiles:
    def test_file_joins_lines_with_one_space(self, tmp_path, trt_db):
        f = tmp_path / "routes.txt"
        f.write_text("-match_ragged_mha=[on|off]\r\n-copy_ppg=[on|off]\n\n-kgen:tiling=2\n")
        assert (
            read_expression_file(f)
            == "-match_ragged_mha=[on|off] -copy_ppg=[on|off]  -kgen:tiling=2"
        )
        expr = Expression.from_file(f, trt_db)
        assert expr.names == ("-match_ragged_mha", "-copy_ppg", "-kgen:tiling")

    def test_comment_and_blank_lines(self, tmp_path, trt_db):
        """'#' comments (whole line or after a space) and blank lines are skipped; trtexec 11.1
        joins lines verbatim, so it rejects a '#' line ("Invalid expression (no '='): #")."""
        f = tmp_path / "routes.txt"
        f.write_text(
            "# routes for the CNN\n\n-match_ragged_mha=[on|off]   # ragged MHA\n"
            "  # indented comment\n\t\n-copy_ppg=[on | off]\n"
        )
        expr = Expression.from_file(f, trt_db)
        assert expr.names == ("-match_ragged_mha", "-copy_ppg")
        assert "#" not in read_expression_file(f)

    def test_comment_text_helper(self):
        """The upload path (dashboard) uses the same reader as the file path (CLI)."""
        assert expression_file_text("# c\n-a=[x|y] # why\n\n-b=1\r\n") == "-a=[x|y]  -b=1"

    def test_write_then_read(self, tmp_path, trt_db):
        expr = Expression.parse("-kgen:tiling=[0|2] -copy_ppg=off", trt_db)
        f = tmp_path / "e.txt"
        write_expression_file(f, expr)
        assert f.read_text() == "-kgen:tiling=[0|2]\n-copy_ppg=off\n"
        assert Expression.from_file(f, trt_db) == expr
        write_expression_file(f, "-a=[x | y] -b=1")
        assert f.read_text() == "-a=[x | y]\n-b=1\n"

    def test_unreadable_file(self, tmp_path, trt_db):
        with pytest.raises(
            ExpressionError, match=r"expression file '.*missing\.txt': cannot read"
        ):
            Expression.from_file(tmp_path / "missing.txt", trt_db)


# -- property tests ---------------------------------------------------------------------------
_VALUES = ["a", "b", "c", "d", "e"]


@st.composite
def expressions(draw):
    """Random databases and expressions: variable/fixed, defaults listed or not."""
    n = draw(st.integers(min_value=1, max_value=5))
    knobs, tokens = [], []
    for i in range(n):
        allowed = draw(st.lists(st.sampled_from(_VALUES), min_size=1, max_size=5, unique=True))
        default = draw(st.sampled_from(allowed))
        knobs.append((f"-k{i}", f"-k{i}=[{'|'.join(allowed)}]", default))
        if draw(st.booleans()):
            listed = draw(st.lists(st.sampled_from(allowed), min_size=1, unique=True))
            tokens.append(f"-k{i}=[{'|'.join(listed)}]")
        else:
            tokens.append(f"-k{i}={draw(st.sampled_from(allowed))}")
    return Expression.parse(" ".join(tokens), make_db(*knobs))


class TestProperties:
    @settings(max_examples=150, deadline=None)
    @given(expressions(), st.sampled_from(["fast", "full", "mixed"]))
    def test_count_equals_iterated_and_route_at_matches(self, expr, search):
        routes = list(expr.iter_routes(search))
        assert expr.count(search) == len(routes)
        assert [expr.route_at(search, i) for i in range(len(routes))] == routes

    @settings(max_examples=100, deadline=None)
    @given(expressions())
    def test_full_is_itertools_product(self, expr):
        expected = [
            " ".join(f"{t.name}={v}" for t, v in zip(expr.terms, combo, strict=True))
            for combo in itertools.product(*(t.values for t in expr.terms))
        ]
        assert strs(expr.iter_routes("full")) == expected

    @settings(max_examples=100, deadline=None)
    @given(expressions())
    def test_fast_is_baseline_plus_one_offs(self, expr):
        routes = list(expr.iter_routes("fast"))
        assert routes[0] == expr.baseline()
        base = expr.baseline().as_dict()
        assert len(set(routes)) == len(routes)
        for r in routes[1:]:
            assert sum(1 for k, v in r.as_dict().items() if base[k] != v) == 1


class TestHugeSpace:
    def test_200_knob_full_is_counted_and_iterated_lazily(self):
        """A 200-knob full space (3**200 routes) is counted exactly and sampled without a list."""
        db = make_db(*[(f"-k{i}", f"-k{i}=[0|1|2]", "1") for i in range(200)])
        expr = Expression.parse(" ".join(f"-k{i}=[0|1|2]" for i in range(200)), db)
        assert expr.count("full") == 3**200
        assert expr.count("fast") == 401
        it = expr.iter_routes("full")
        first = next(it)
        second = next(it)
        assert str(first) == " ".join(f"-k{i}=0" for i in range(200))
        assert second.get("-k199") == "1"
        last = expr.route_at("full", 3**200 - 1)
        assert str(last) == " ".join(f"-k{i}=2" for i in range(200))
        middle = expr.route_at("full", 3**199)
        assert middle.get("-k0") == "1" and middle.get("-k1") == "0"


def test_fixture_database_is_valid_json():
    """The fixture uses real knob names from the reference (§4)."""
    data = json.loads((DATA / "trt_knobs_small.json").read_text())
    names = [o["option"] for o in data["tuner_options"]]
    assert "-kgen:codegen:cuda_tile" in names and "-cask_fusion:num_tactics" in names
