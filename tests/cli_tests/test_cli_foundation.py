"""``gptuner knobs | knobs-diff | dry-run | cache show``: output, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gptuner_core import cli
from gptuner_core.cli import main


DATA = Path(__file__).parents[1] / "data"
DB = str(DATA / "trt_knobs_small.json")
DB2 = str(DATA / "trt_knobs_small_v2.json")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, out: str, err: str, fragment: str) -> None:
    assert code == 2
    assert err.startswith("gptuner: error: ")
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert fragment in err, err


class TestKnobs:
    def test_table(self, capsys):
        code, out, err = run(capsys, "knobs", "--knob-db", DB)
        assert code == 0 and err == ""
        lines = out.splitlines()
        assert lines[0].split() == ["KNOB", "DEFAULT", "VALUES", "HELP"]
        assert ["-kgen:codegen:cuda_tile", "1", "[0|1|2|3]", "CUDA"] in [
            line.split()[:4] for line in lines
        ]
        assert "unbounded (int32_t)" in out
        assert lines[-1] == "11 knobs, tuner_version 2.19.45"

    def test_filters(self, capsys):
        code, out, _ = run(capsys, "knobs", "--knob-db", DB, "--namespace", "kgen")
        assert code == 0
        names = [line.split()[0] for line in out.splitlines()[2:] if line.startswith("-")]
        assert names == ["-kgen:tiling", "-kgen:codegen:cuda_tile"]
        code, out, _ = run(capsys, "knobs", "--knob-db", DB, "--search", "PRE-PROCESSING")
        assert out.splitlines()[-1] == "3 of 11 knobs, tuner_version 2.19.45"

    @pytest.mark.parametrize("query", ["-kgen:tiling", "kgen:tiling"])
    def test_one_knob_leading_dash_optional(self, capsys, query):
        code, out, _ = run(capsys, "knobs", "--knob-db", DB, query)
        assert code == 0
        assert "knob:           -kgen:tiling" in out
        assert "values:         [0|1|2]" in out

    def test_one_knob_json_like_help_build_route(self, capsys):
        code, out, _ = run(capsys, "knobs", "conv_use_long_w", "--json", "--knob-db", DB)
        assert code == 0
        assert (
            out
            == json.dumps(
                {
                    "tuner_version": "2.19.45",
                    "tuner_options": [
                        {
                            "option": "-conv_use_long_w",
                            "allowed_values": "-conv_use_long_w=[on|off]",
                            "default_value": "on",
                            "help": "Convert Conv [N, C, X, 1] to [N, C, 1, X] in CASK params for perf.",
                        }
                    ],
                },
                indent=2,
            )
            + "\n"
        )

    def test_all_json_round_trips(self, capsys):
        code, out, _ = run(capsys, "knobs", "--knob-db", DB, "--json")
        assert code == 0
        assert json.loads(out) == json.loads(Path(DB).read_text())

    def test_unknown_knob_suggests(self, capsys):
        code, out, err = run(capsys, "knobs", "--knob-db", DB, "kgen:tilin")
        assert_one_line_error(code, out, err, "Unknown knob: -kgen:tilin")
        assert "did you mean -kgen:tiling?" in err

    def test_needs_a_database(self, capsys):
        code, out, err = run(capsys, "knobs")
        assert_one_line_error(code, out, err, "give --knob-db FILE or --backend NAME --model FILE")

    def test_missing_model_file(self, capsys, tmp_path):
        code, out, err = run(capsys, "knobs", "--model", str(tmp_path / "m.onnx"))
        assert_one_line_error(code, out, err, "m.onnx': file not found")

    def test_unknown_backend(self, capsys):
        model = str(Path(__file__).parents[2] / "pyproject.toml")  # any existing file
        code, out, err = run(capsys, "knobs", "--backend", "nope", "--model", model)
        assert_one_line_error(code, out, err, "unknown backend 'nope'")

    def test_bad_database_file(self, capsys, tmp_path):
        bad = tmp_path / "bad.json"
        bad.write_text('{"tuner_options": [{"option": "-a"}]}')
        code, out, err = run(capsys, "knobs", "--knob-db", str(bad))
        assert_one_line_error(
            code,
            out,
            err,
            f"knob database '{bad}': tuner_options[0] is missing field 'allowed_values'",
        )
        code, out, err = run(capsys, "knobs", "--knob-db", str(tmp_path / "none.json"))
        assert_one_line_error(code, out, err, "cannot read file")


class TestKnobsDiff:
    def test_diff(self, capsys):
        code, out, _ = run(capsys, "knobs-diff", DB, DB2)
        assert code == 0
        assert out.splitlines() == [
            "tuner_version: 2.19.45 -> 2.19.50",
            "added (1):",
            "  -peep:match_dual_gemm  default on  values [on|off]",
            "removed (1):",
            "  -copy_ppg",
            "default changed (1):",
            "  -kgen:codegen:cuda_tile  1 -> 2",
            "values changed (1):",
            "  -kgen:tiling  [0|1|2] -> [0|1|2|3]",
        ]

    def test_no_difference(self, capsys):
        code, out, _ = run(capsys, "knobs-diff", DB, DB)
        assert code == 0 and out.splitlines()[-1] == "no knob differences"

    def test_missing_argument(self, capsys):
        code, out, err = run(capsys, "knobs-diff", DB)
        assert_one_line_error(
            code, out, err, "knobs-diff: the following arguments are required: NEW"
        )


class TestDryRun:
    EXPR = "-conv_lowering=[on|off] -kgen:tiling=[0|1|2]"

    def test_fast(self, capsys):
        code, out, _ = run(capsys, "dry-run", "--knob-db", DB, "--expr", self.EXPR)
        assert code == 0
        assert out.splitlines() == [
            "Expanded to 4 build route configurations",
            "--dryRun: 4 build routes would be tried:",
            "[0]:-conv_lowering=on -kgen:tiling=1",
            "[1]:-conv_lowering=on -kgen:tiling=0",
            "[2]:-conv_lowering=on -kgen:tiling=2",
            "[3]:-conv_lowering=off -kgen:tiling=1",
        ]

    def test_full_with_limit_and_file(self, capsys, tmp_path):
        f = tmp_path / "routes.txt"
        f.write_text("-conv_lowering=[on|off]\n-kgen:tiling=[0|1|2]\n")
        code, out, _ = run(
            capsys,
            "dry-run",
            "--knob-db",
            DB,
            "--expr-file",
            str(f),
            "--search",
            "full",
            "--limit",
            "2",
        )
        assert code == 0
        assert out.splitlines() == [
            "Expanded to 6 build route configurations",
            "--dryRun: 6 build routes would be tried:",
            "[0]:-conv_lowering=on -kgen:tiling=0",
            "[1]:-conv_lowering=on -kgen:tiling=1",
            "... 4 more (--limit 2)",
        ]

    def test_mixed_lists_phase1_and_says_what_phase2_may_add(self, capsys):
        """Issue 25: dry-run accepts every strategy tune accepts (mixed was refused, as by
        trtexec): phase 1 is listed in fast's order, phase 2 only bounded."""
        code, out, err = run(
            capsys, "dry-run", "--knob-db", DB, "--expr", self.EXPR, "--search", "mixed"
        )
        assert code == 0 and err == ""
        lines = out.splitlines()
        assert lines[0] == "Expanded to 4 build route configurations"
        assert lines[1].startswith("--search mixed: 4-") and "phase 2" in lines[1]
        assert lines[2] == "--dryRun: 4 build routes would be tried in phase 1:"
        fast = run(capsys, "dry-run", "--knob-db", DB, "--expr", self.EXPR, "--search", "fast")[1]
        assert lines[3:] == fast.splitlines()[2:]

    def test_trtexec_message_for_bad_expression(self, capsys):
        code, out, err = run(
            capsys, "dry-run", "--knob-db", DB, "--expr", "-builderOptimizationLevel=[1|3|5]"
        )
        assert err == "gptuner: error: Unknown knob: -builderOptimizationLevel\n"
        assert code == 2 and out == ""

    @pytest.mark.parametrize(
        ("argv", "fragment"),
        [
            (["--knob-db", DB], "one of the arguments --expr --expr-file is required"),
            (["--knob-db", DB, "--expr", "-a=1", "--expr-file", "f"], "not allowed with argument"),
            (
                ["--knob-db", DB, "--expr", "-copy_ppg=on", "--search", "exhaustive"],
                "invalid choice: 'exhaustive'",
            ),
            (
                ["--knob-db", DB, "--expr", "-copy_ppg=on", "--limit", "-1"],
                "expected a non-negative integer (got -1)",
            ),
            (
                ["--knob-db", DB, "--expr-file", "/nonexistent/e.txt"],
                "expression file '/nonexistent/e.txt': cannot read file",
            ),
            (["--knob-db", DB, "--backend", "onnxruntime", "--expr", "-a=1"], "not both"),
        ],
    )
    def test_usage_errors(self, capsys, argv, fragment):
        code, out, err = run(capsys, "dry-run", *argv)
        assert_one_line_error(code, out, err, fragment)


class TestCacheShow:
    def test_mixed_summary(self, capsys):
        path = str(DATA / "trtexec_cache_mixed.jsonl")
        code, out, _ = run(capsys, "cache", "show", path)
        assert code == 0
        lines = out.splitlines()
        assert "search:          mixed" in lines
        assert "rows:            8 (phase 1: 4, phase 2: 4)" in lines
        assert "crashed:         0" in lines
        assert "accuracy failed: 3" in lines
        assert "best:            iter 3 (phase 2), gpu_time 0.4979 ms" in lines
        assert "best route:      -match_ragged_mha=off -copy_ppg=on -slice_fusion=off" in lines

    def test_rows_and_warnings(self, capsys, tmp_path):
        torn = tmp_path / "torn.jsonl"
        torn.write_text((DATA / "trtexec_cache_fast.jsonl").read_text() + '{"iter":4,"bu')
        code, out, _ = run(capsys, "cache", "show", str(torn), "--rows")
        assert code == 0
        assert "crashed:         1" in out
        assert "warning: line 6: torn last line skipped" in out
        assert "1      2     crashed" in out

    def test_bad_cache(self, capsys, tmp_path):
        bad = tmp_path / "bad.jsonl"
        lines = (DATA / "trtexec_cache_fast.jsonl").read_text().split("\n")
        lines[2] = "{oops"
        bad.write_text("\n".join(lines))
        code, out, err = run(capsys, "cache", "show", str(bad))
        assert_one_line_error(code, out, err, f"tuning cache '{bad}': line 3: not valid JSON")


class TestTable:
    def test_unknown_command(self, capsys):
        code, out, err = run(capsys, "frobnicate")
        assert_one_line_error(code, out, err, "unknown command 'frobnicate'")

    def test_help_and_version(self, capsys):
        code, out, _ = run(capsys, "--help")
        assert code == 0 and "knobs-diff" in out and "dry-run" in out
        code, out, _ = run(capsys, "--version")
        assert code == 0 and out.startswith("gptuner ")
        code, out, _ = run(capsys, "dry-run", "--help")
        assert code == 0 and "--expr-file" in out

    def test_no_command_prints_usage(self, capsys):
        code, _, err = run(capsys)
        assert code == 2 and "usage: gptuner" in err

    def test_unknown_option(self, capsys):
        code, out, err = run(capsys, "knobs", "--knob-db", DB, "--frob")
        assert_one_line_error(code, out, err, "knobs: unrecognized arguments: --frob")

    def test_broken_command_does_not_break_others(self, capsys, monkeypatch):
        """A command whose module fails to import is reported only when it is used."""
        monkeypatch.setitem(cli._COMMANDS, "broken", "gptuner_core.cli._no_such_module:Nope")
        code, out, err = run(capsys, "knobs-diff", DB, DB)
        assert code == 0 and "no knob differences" in out
        code, out, err = run(capsys, "--help")
        assert code == 0 and "broken" in out and "unavailable" in out
        code, out, err = run(capsys, "broken")
        assert code == 1
        assert err.startswith(
            "gptuner: error: command 'broken' is unavailable: ModuleNotFoundError"
        )


def test_real_subprocess():
    """``python -m gptuner_core`` in a real child process: output, exit codes, no traceback."""
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "gptuner_core",
            "knobs",
            "--knob-db",
            DB,
            "-kgen:codegen:cuda_tile",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert "default:        1" in ok.stdout
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "gptuner_core",
            "dry-run",
            "--knob-db",
            DB,
            "--expr",
            "-peep:max=[1|2]",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert bad.stderr == "gptuner: error: Knob has unbounded values (int32_t): -peep:max\n"
    assert bad.stdout == ""


class TestDryRunEveryStrategy:
    """Issue 25: ``gptuner dry-run --search fast_tpe`` (tune's default) was refused."""

    EXPR = "-conv_lowering=[on|off] -kgen:tiling=[0|1|2]"

    def test_every_strategy_of_tune_says_its_builds(self, capsys):
        from gptuner_core.strategies import strategy_names

        for name in strategy_names():
            if name in ("fast", "full", "mixed"):
                continue
            code, out, err = run(capsys, "dry-run", "--knob-db", DB, "--expr", self.EXPR,
                                 "--search", name)
            assert code == 0, err
            assert out.splitlines()[0] == "Expanded to 6 build route configurations"
            assert re.search(rf"--search {name}: (\d+ builds|no fixed number of builds)", out), out

    def test_max_candidates_caps_the_builds(self, capsys):
        code, out, _ = run(capsys, "dry-run", "--knob-db", DB, "--expr", self.EXPR,
                           "--search", "fast_tpe", "--max-candidates", "3")
        assert code == 0 and "--search fast_tpe: 3 builds (--max-candidates)" in out


@pytest.mark.parametrize("with_torch", [False, True])
def test_the_command_leaves_without_the_interpreter_teardown_once_torch_is_imported(tmp_path, with_torch):
    """``python -m gptuner_core`` and the console script end through :func:`cli.console`: with
    torch imported the interpreter's teardown took 0.7 s after a torch study's verdict (its
    input shapes import torch in the CLI), which a pipeline waited for. Exit handlers still run,
    the output is flushed, the status kept; only the teardown (a module object's finaliser
    here) is skipped, and only with torch imported."""
    if with_torch:
        pytest.importorskip("torch")
    (tmp_path / "probe_teardown.py").write_text(
        "import atexit, pathlib\n"
        f"HERE = pathlib.Path({str(tmp_path)!r})\n"
        "class Probe:\n"
        "    def __del__(self):\n"
        "        (HERE / 'teardown').write_text('ran')\n"
        "probe = Probe()\n"
        "atexit.register((HERE / 'atexit').write_text, 'ran')\n")
    code = ("import sys, probe_teardown\n"
            + ("import torch\n" if with_torch else "")
            + "sys.argv[1:] = ['dry-run', '--knob-db', sys.argv[1], '--expr', '-peep:max=[1|2]']\n"
            "from gptuner_core.cli import console\nconsole()\n")
    out = subprocess.run([sys.executable, "-c", code, DB], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])})
    assert out.returncode == 2 and out.stderr.startswith("gptuner: error:"), out.stderr
    assert (tmp_path / "atexit").exists()
    assert (tmp_path / "teardown").exists() is not with_torch
