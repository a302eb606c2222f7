"""Knob databases in TensorRT's all_build_routes schema (reference §1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gptuner_core.errors import GptunerError
from gptuner_core.errors import KnobDatabaseError
from gptuner_core.knobs import KnobDatabase
from gptuner_core.knobs import diff_knob_databases
from gptuner_core.knobs import parse_allowed_values
from gptuner_core.routes import Route


DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def db() -> KnobDatabase:
    return KnobDatabase.from_file(DATA / "trt_knobs_small.json")


class TestParseAllowedValues:
    """Same rules as trtexec's parseAllowedValues."""

    @pytest.mark.parametrize(
        ("text", "values"),
        [
            ("-k=[on|off]", ("on", "off")),
            ("-k=[ 0 |\t1| 2 ]", ("0", "1", "2")),
            ("-k=[a||b|]", ("a", "b")),
            ("-k=int32_t", None),
            ("-k=[0|...|64]", None),
            ("-k=[]", None),
            ("-k=[ | ]", None),
            ("-k=]x[", None),
            ("-k=[a|b", None),
        ],
    )
    def test_values(self, text, values):
        assert parse_allowed_values(text) == values


class TestLoad:
    def test_fields(self, db):
        assert db.tuner_version == "2.19.45"
        assert len(db) == 11
        k = db["-kgen:codegen:cuda_tile"]
        assert k.values == ("0", "1", "2", "3")
        assert k.default == "1"
        assert k.namespace == "kgen:codegen"
        assert db["-kgen:tiling"].namespace == "kgen"
        assert db["-copy_ppg"].namespace == ""
        assert db["-cask_fusion:num_tactics"].bounded is False
        assert db["-cask_fusion:num_tactics"].unbounded_type == "int32_t"
        assert db["-peep:max"].bounded is False
        assert "-kgen:tiling" in db and "kgen:tiling" not in db

    def test_order_and_default_route(self, db):
        assert str(Route.default(db)).startswith("-conv_use_long_w=on -reshape_ppg=on")
        assert [k.name for k in db][-1] == "-peep:max"

    def test_json_round_trip(self, db):
        again = KnobDatabase.from_string(db.to_string())
        assert again == db
        assert again.sha256 == db.sha256
        assert db.to_json() == json.loads((DATA / "trt_knobs_small.json").read_text())

    def test_missing_version_is_unknown(self):
        db = KnobDatabase.from_json({"tuner_options": []})
        assert db.tuner_version == "unknown"

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            (
                "{",
                "knob database 'x.json': not valid JSON (Expecting property name enclosed in double quotes at line 1 column 2)",
            ),
            (
                "[]",
                "knob database 'x.json': expected a JSON object with 'tuner_version' and 'tuner_options' (got list)",
            ),
            (
                '{"tuner_version": "1"}',
                "knob database 'x.json': field 'tuner_options' must be a list (got nothing)",
            ),
            (
                '{"tuner_options": {}}',
                "knob database 'x.json': field 'tuner_options' must be a list (got dict)",
            ),
            (
                '{"tuner_version": 2, "tuner_options": []}',
                "knob database 'x.json': 'tuner_version' must be a string (got 2)",
            ),
            (
                '{"tuner_options": [1]}',
                "knob database 'x.json': tuner_options[0] must be an object (got int)",
            ),
            (
                '{"tuner_options": [{"option": "-a", "default_value": "on"}]}',
                "knob database 'x.json': tuner_options[0] is missing field 'allowed_values'",
            ),
            (
                '{"tuner_options": [{"option": "-a", "allowed_values": "-a=[on|off]", "default_value": 1}]}',
                "knob database 'x.json': tuner_options[0].default_value must be a string (got 1 of type int)",
            ),
            (
                '{"tuner_options": [{"option": "a", "allowed_values": "a=[on|off]", "default_value": "on"}]}',
                "knob database 'x.json': tuner_options[0].option must start with '-' (got 'a')",
            ),
        ],
    )
    def test_bad_input_messages(self, text, message):
        with pytest.raises(KnobDatabaseError) as info:
            KnobDatabase.from_string(text, source="'x.json'")
        assert str(info.value) == message
        assert isinstance(info.value, GptunerError)

    def test_duplicate_knob(self):
        entry = {"option": "-a", "allowed_values": "-a=[on|off]", "default_value": "on"}
        with pytest.raises(KnobDatabaseError, match="'-a' is listed more than once"):
            KnobDatabase.from_json({"tuner_options": [entry, entry]})

    def test_unreadable_files(self, tmp_path):
        with pytest.raises(
            KnobDatabaseError, match=r"knob database '.*nope\.json': cannot read file"
        ):
            KnobDatabase.from_file(tmp_path / "nope.json")
        (tmp_path / "b.json").write_bytes(b"\xff\xfe")
        with pytest.raises(KnobDatabaseError, match="expected UTF-8 JSON text"):
            KnobDatabase.from_file(tmp_path / "b.json")

    def test_unknown_knob_lookup(self, db):
        with pytest.raises(KnobDatabaseError, match="^Unknown knob: -nope$"):
            db["-nope"]
        assert db.get("-nope") is None


class TestDiff:
    def test_diff_two_versions(self, db):
        new = KnobDatabase.from_file(DATA / "trt_knobs_small_v2.json")
        d = diff_knob_databases(db, new)
        assert (d.old_version, d.new_version) == ("2.19.45", "2.19.50")
        assert [k.name for k in d.added] == ["-peep:match_dual_gemm"]
        assert [k.name for k in d.removed] == ["-copy_ppg"]
        assert [(c.name, c.old.default, c.new.default) for c in d.default_changed] == [
            ("-kgen:codegen:cuda_tile", "1", "2")
        ]
        assert [(c.name, c.new.values) for c in d.values_changed] == [
            ("-kgen:tiling", ("0", "1", "2", "3"))
        ]
        assert not d.empty

    def test_same_database_is_empty(self, db):
        assert diff_knob_databases(db, db).empty
