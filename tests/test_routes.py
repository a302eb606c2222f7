"""Fixed routes: parse, validate against a knob database, canonical text, identity (ref §2.1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptuner_core.errors import ExpressionError
from gptuner_core.errors import InvalidRouteError
from gptuner_core.knobs import KnobDatabase
from gptuner_core.routes import Route


DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def db() -> KnobDatabase:
    return KnobDatabase.from_file(DATA / "trt_knobs_small.json")


class TestParse:
    def test_parse_and_canonical_text(self):
        r = Route.parse("  -conv_use_long_w=off\t-kgen:codegen:cuda_tile=2 ")
        assert r.assignments == (("-conv_use_long_w", "off"), ("-kgen:codegen:cuda_tile", "2"))
        assert str(r) == "-conv_use_long_w=off -kgen:codegen:cuda_tile=2"
        assert Route.parse(str(r)) == r
        assert Route.parse("") == Route()
        assert r.get("-kgen:codegen:cuda_tile") == "2" and r.get("-x") is None

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("-copy_ppg", "Invalid route token (no '='): -copy_ppg (expected -name=value)"),
            ("copy_ppg=on", "Invalid route token (knob names start with '-'): copy_ppg=on"),
            ("-copy_ppg=", "Invalid route token (empty value): -copy_ppg="),
            ("-copy_ppg=on -copy_ppg=off", "Knob set twice in route: -copy_ppg"),
        ],
    )
    def test_malformed(self, text, message):
        with pytest.raises(InvalidRouteError) as info:
            Route.parse(text)
        assert str(info.value) == message
        assert isinstance(info.value, ExpressionError)


class TestValidate:
    def test_valid(self, db):
        Route.parse("-copy_ppg=off -cask_fusion:num_tactics=77").validate(db)

    def test_unknown_knob(self, db):
        with pytest.raises(InvalidRouteError, match="^Unknown knob: -builderOptimizationLevel$"):
            Route.parse("-builderOptimizationLevel=3").validate(db)

    def test_value_not_allowed(self, db):
        with pytest.raises(InvalidRouteError) as info:
            Route.parse("-kgen:tiling=9").validate(db)
        assert str(info.value) == "Invalid value for knob: -kgen:tiling=9 (allowed: [0|1|2])"


class TestIdentity:
    def test_resolved_fills_defaults_in_db_order(self, db):
        resolved = Route.parse("-kgen:tiling=2").resolved(db)
        assert list(resolved) == [k.name for k in db]
        assert resolved["-kgen:tiling"] == "2" and resolved["-copy_ppg"] == "on"

    def test_key_ignores_order_and_defaults(self, db):
        a = Route.parse("-kgen:tiling=2 -copy_ppg=on -slice_fusion=off")
        b = Route.parse("-slice_fusion=off -kgen:tiling=2")
        assert a.key(db) == b.key(db) == "-kgen:tiling=2 -slice_fusion=off"
        assert a.key() != b.key()
        assert Route.default(db).key(db) == ""

    def test_diff(self, db):
        a = Route.parse("-kgen:tiling=2")
        b = Route.parse("-copy_ppg=off")
        assert a.diff(b, db) == {"-copy_ppg": ("on", "off"), "-kgen:tiling": ("2", "1")}
        assert a.diff(b) == {"-kgen:tiling": ("2", ""), "-copy_ppg": ("", "off")}

    def test_from_dict(self):
        assert str(Route.from_dict({"-a": "1", "-b": "x"})) == "-a=1 -b=x"
