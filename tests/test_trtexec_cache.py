"""trtexec tuning cache: byte-exact round trips, torn lines, mixed phases, accuracy (ref §3.3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from gptuner_core.errors import GptunerError
from gptuner_core.errors import TuningCacheError
from gptuner_core.interop.trtexec_cache import HEADER_KEYS
from gptuner_core.interop.trtexec_cache import CacheHeader
from gptuner_core.interop.trtexec_cache import CacheRow
from gptuner_core.interop.trtexec_cache import TuningCache
from gptuner_core.interop.trtexec_cache import accuracy_failed
from gptuner_core.interop.trtexec_cache import append_row
from gptuner_core.interop.trtexec_cache import dump_nlohmann
from gptuner_core.interop.trtexec_cache import format_double
from gptuner_core.interop.trtexec_cache import parse_tuning_cache
from gptuner_core.interop.trtexec_cache import read_tuning_cache
from gptuner_core.interop.trtexec_cache import write_header


DATA = Path(__file__).parent / "data"
FIXTURES = ["trtexec_cache_fast.jsonl", "trtexec_cache_mixed.jsonl", "torchtrt_cache.jsonl"]


class TestRoundTrip:
    """Read -> write gives the same bytes for files trtexec, Torch-TRT and we write."""

    @pytest.mark.parametrize("name", FIXTURES)
    def test_fixture_round_trip_is_byte_identical(self, tmp_path, name):
        src = DATA / name
        cache = read_tuning_cache(src)
        out = tmp_path / name
        cache.write(out)
        assert out.read_bytes() == src.read_bytes()
        assert cache.warnings == ()

    def test_header_key_order_and_values(self):
        cache = read_tuning_cache(DATA / "trtexec_cache_fast.jsonl")
        assert cache.header.key_order == HEADER_KEYS
        assert cache.header.tuner_version == "2.19.45"
        assert cache.header.accuracy_parameter["atol"] == 9.999999747378752e-06
        assert cache.header.epsilon is None
        assert cache.header.argv[0] == "trtexec"
        first = (DATA / "trtexec_cache_fast.jsonl").read_text().split("\n")[1]
        assert list(json.loads(first)) == [
            "iter",
            "build_route",
            "crash",
            "error_message",
            "accuracy_loss",
            "gpu_time",
        ]

    def test_torch_trt_header_keeps_unknown_keys(self):
        cache = read_tuning_cache(DATA / "torchtrt_cache.jsonl")
        assert cache.style == "python"
        assert cache.header.extra == {
            "partition_key": "3f2a9c0d1b7e4a56",
            "user_tuning_cache_file": "/tmp/tune.jsonl",
        }
        assert "command_line" not in cache.header.key_order
        assert cache.best().build_route == "-slice_fusion=off"

    def test_we_write_what_trtexec_writes(self, tmp_path):
        """A cache built from values serializes like nlohmann dump(): compact, ordered."""
        header = CacheHeader(
            tuner_version="2.19.45",
            accuracy_parameter={"atol": 9.999999747378752e-06, "rtol": 1e-05, "epsilon": 0.0},
            command_line="trtexec --onnx=m.onnx",
            default_build_route="-a=on",
            tuning_expr="-a=[on|off]",
            files={"onnx": "/m.onnx"},
            argv=("trtexec", "--onnx=/m.onnx"),
        )
        path = tmp_path / "c.jsonl"
        write_header(path, header)
        append_row(path, CacheRow(iter=0, build_route="-a=on", gpu_time=0.5))
        append_row(
            path,
            CacheRow(
                iter=1,
                build_route="-a=off",
                crash=True,
                error_message="child killed by signal 6 (Aborted)",
            ),
        )
        assert path.read_text() == (
            '{"tuner_version":"2.19.45","accuracy_algorithm":"L0","accuracy_parameter":'
            '{"atol":9.999999747378752e-06,"rtol":1e-05,"epsilon":0.0},"searching_algorithm":"fast",'
            '"command_line":"trtexec --onnx=m.onnx","default_build_route":"-a=on",'
            '"tuning_expr":"-a=[on|off]","files":{"onnx":"/m.onnx"},"argv":["trtexec","--onnx=/m.onnx"]}\n'
            '{"iter":0,"build_route":"-a=on","crash":false,"error_message":"","accuracy_loss":null,"gpu_time":0.5}\n'
            '{"iter":1,"build_route":"-a=off","crash":true,"error_message":"child killed by signal 6 (Aborted)",'
            '"accuracy_loss":null,"gpu_time":null}\n'
        )
        cache = read_tuning_cache(path)
        assert [r.iter for r in cache.rows] == [0, 1]
        assert cache.best().build_route == "-a=on"


class TestNlohmannFormat:
    @pytest.mark.parametrize(
        ("value", "text"),
        [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (2.0, "2.0"),
            (0.02836, "0.02836"),
            (1e-05, "1e-05"),
            (9.5e-05, "9.5e-05"),
            (0.0001, "0.0001"),
            (123456789012345.0, "123456789012345.0"),
            (1e15, "1e+15"),  # nlohmann switches to exponent one digit earlier than Python
            (1.5e15, "1.5e+15"),
            (1e16, "1e+16"),
            (1e-300, "1e-300"),
            (float("nan"), "null"),
            (float("inf"), "null"),
        ],
    )
    def test_format_double(self, value, text):
        assert format_double(value) == text

    @settings(max_examples=300, deadline=None)
    @given(st.floats(allow_nan=False, allow_infinity=False))
    def test_doubles_read_back_exactly(self, x):
        assert json.loads(format_double(x)) == x

    def test_strings_are_utf8_not_escaped(self):
        assert dump_nlohmann({"k": 'é\n"\\\x01'}) == '{"k":"é\\n\\"\\\\\\u0001"}'


class TestTolerance:
    """Torn or blank last lines are skipped with a warning; damage elsewhere is an error."""

    def _text(self) -> str:
        return (DATA / "trtexec_cache_fast.jsonl").read_text()

    def test_torn_last_line(self):
        text = self._text() + '{"iter":4,"build_route":"-conv_lowering=off -kgen:t'
        cache = parse_tuning_cache(text, source="'c.jsonl'")
        assert len(cache.rows) == 4
        assert len(cache.warnings) == 1
        assert cache.warnings[0].startswith("line 6: torn last line skipped")

    def test_blank_last_line(self):
        cache = parse_tuning_cache(self._text() + "\n", source="'c.jsonl'")
        assert len(cache.rows) == 4
        assert cache.warnings == ("line 6: blank line skipped",)

    def test_malformed_middle_line_names_file_and_line(self):
        lines = self._text().split("\n")
        lines[2] = lines[2][:30]
        with pytest.raises(TuningCacheError) as info:
            parse_tuning_cache("\n".join(lines), source="'c.jsonl'")
        assert str(info.value).startswith("tuning cache 'c.jsonl': line 3: not valid JSON")

    def test_wrong_type_names_field(self):
        lines = self._text().split("\n")
        lines[1] = lines[1].replace('"gpu_time":0.02836', '"gpu_time":"fast"')
        with pytest.raises(TuningCacheError) as info:
            parse_tuning_cache("\n".join(lines), source="'c.jsonl'")
        assert str(info.value) == (
            "tuning cache 'c.jsonl': line 2: field 'gpu_time' must be a finite number of milliseconds "
            '> 0, or null (got string "fast")'
        )

    def test_missing_row_field(self):
        text = self._text().split("\n")[0] + '\n{"iter":0,"crash":false}\n'
        with pytest.raises(
            TuningCacheError, match="line 2: iteration row is missing field 'build_route'"
        ):
            parse_tuning_cache(text)

    def test_header_problems(self, tmp_path):
        with pytest.raises(TuningCacheError, match="line 1: expected the header JSON object"):
            parse_tuning_cache("")
        with pytest.raises(TuningCacheError, match="line 1: header is not valid JSON"):
            parse_tuning_cache('{"tuner_version":"2')
        with pytest.raises(TuningCacheError, match="found an iteration row"):
            parse_tuning_cache('{"iter":0,"build_route":"-a=on","crash":false}\n')
        with pytest.raises(TuningCacheError, match="missing field 'tuning_expr'"):
            parse_tuning_cache('{"tuner_version":"2.19.45"}\n')
        with pytest.raises(TuningCacheError, match=r"field 'argv' must be an array of strings"):
            parse_tuning_cache('{"tuning_expr":"-a=on","argv":"trtexec"}\n')
        with pytest.raises(GptunerError, match=r"cannot read file"):
            read_tuning_cache(tmp_path / "none.jsonl")
        (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00")
        with pytest.raises(TuningCacheError, match="expected UTF-8"):
            read_tuning_cache(tmp_path / "bin.jsonl")

    def test_append_drops_a_torn_tail(self, tmp_path):
        path = tmp_path / "c.jsonl"
        path.write_text(self._text() + '{"iter":4,"build_ro')
        append_row(
            path, CacheRow(iter=4, build_route="-conv_lowering=off -kgen:tiling=0", gpu_time=0.03)
        )
        cache = read_tuning_cache(path)
        assert cache.warnings == ()
        assert [r.iter for r in cache.rows] == [0, 1, 2, 3, 4]

    def test_append_needs_a_header(self, tmp_path):
        with pytest.raises(TuningCacheError, match="does not exist"):
            append_row(tmp_path / "x.jsonl", CacheRow(iter=0, build_route="-a=on"))


class TestMixedAndAccuracy:
    def test_phase_two_rows_restart_at_zero(self):
        cache = read_tuning_cache(DATA / "trtexec_cache_mixed.jsonl")
        assert [(r.phase, r.iter) for r in cache.rows] == [
            (1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1), (2, 2), (2, 3),
        ]  # fmt: skip
        assert len(cache.phase_rows(2)) == 4

    def test_accuracy_failures_and_best(self):
        cache = read_tuning_cache(DATA / "trtexec_cache_mixed.jsonl")
        assert cache.header.epsilon == 0.001
        failed = [(r.phase, r.iter) for r in cache.accuracy_failures]
        assert failed == [(1, 3), (2, 0), (2, 1)]
        best = cache.best()
        # Phase-2 iter 1 is faster (0.4655) but failed accuracy: it must not win.
        assert (best.phase, best.iter, best.gpu_time) == (2, 3, 0.4979)

    def test_loss_against_epsilon(self):
        header = CacheHeader(tuning_expr="-a=on", accuracy_parameter={"epsilon": 0.01})
        ok = CacheRow(iter=0, build_route="-a=on", accuracy_loss={"y": 0.009}, gpu_time=1.0)
        at = CacheRow(iter=1, build_route="-a=on", accuracy_loss={"y": 0.01}, gpu_time=0.5)
        nan = CacheRow(
            iter=2, build_route="-a=on", accuracy_loss={"y": float("nan")}, gpu_time=0.1
        )
        crash = CacheRow(iter=3, build_route="-a=on", crash=True, error_message="child killed")
        assert [accuracy_failed(r, header) for r in (ok, at, nan, crash)] == [
            False,
            True,
            True,
            False,
        ]
        cache = TuningCache(header=header, rows=(ok, at, nan, crash))
        assert cache.best() is ok
        no_eps = CacheHeader(tuning_expr="-a=on")
        assert not accuracy_failed(at, no_eps)
        assert TuningCache(header=no_eps, rows=(ok, at, nan, crash)).best() is nan

    def test_nothing_eligible(self):
        header = CacheHeader(tuning_expr="-a=on")
        crash = CacheRow(iter=0, build_route="-a=on", crash=True, error_message="x")
        assert TuningCache(header=header, rows=(crash,)).best() is None

    def test_rows_parse_as_routes(self):
        cache = read_tuning_cache(DATA / "trtexec_cache_fast.jsonl")
        assert cache.rows[3].route.as_dict() == {"-conv_lowering": "off", "-kgen:tiling": "1"}
