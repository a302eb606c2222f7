"""Issue 24's bad-input corpus: every subcommand and flag, refused the same way.

Each case runs the real CLI in-process (``main(argv)``) in a sandbox folder holding a real
finished study, its bundle, a trtexec cache, knob databases and broken files, with the sandbox as
the working directory. Every refusal must be: exit 2, one ``gptuner: error: ...`` line naming
what was wrong and what was found (the case's fragments), no traceback, and nothing created or
changed in the sandbox (sizes and mtimes of every path compared before and after).

Beside the hand-written cases (``bad_input_cases.py``), cases are generated from the parsers
themselves: every flag that takes a value, given empty and given no value, and an unknown flag
per command, so a new flag is covered the day it is added.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from gptuner_core import cli
from gptuner_core.cli import main

from ..engine_tests.conftest import make_tiny_model
from .bad_input_cases import OTHER_CASES
from .bad_input_cases import TUNE
from .bad_input_cases import TUNE_CASES


DATA = Path(__file__).parents[1] / "data"

#: a valid command line per command: the generated cases change one flag of it
VALID = {
    "knobs": ["knobs", "--knob-db", "{db}"], "knobs-diff": ["knobs-diff", "{db}", "{db2}"],
    "dry-run": ["dry-run", "--knob-db", "{db}", "--expr", "-conv_lowering=[on|off]"],
    "cache": ["cache", "show", "{c}"], "tune": TUNE, "strategies": ["strategies"],
    "show": ["show", "{s}"], "stop": ["stop", "{s}"],
    "export": ["export", "{s}", "--trtexec-cache", "{out}"], "import": ["import", "{c}", "--study", "{new}"],
    "replay": ["replay", "{s}"], "revalidate": ["revalidate", "{s}", "0", "1"],
    "doctor": ["doctor", "--no-trtexec"], "explain": ["explain", "{s}"], "diff": ["diff", "{s}", "0", "1"],
    "bundle": ["bundle", "{s}", "-o", "{newdir}"], "gate": ["gate", "{b}", "--model", "{m}"],
    "report": ["report", "{s}", "-o", "{out}"],
    "retune": ["retune", "{s}", "--model", "{m}", "--study", "{new}"],
}


def _value_flags(name: str) -> list[tuple[str, str | None]]:
    """(flag, dest) of every option taking one value, and (None, dest) of every positional."""
    command = cli.load_command(name)
    parser = argparse.ArgumentParser(prog=f"gptuner {name}")
    command.add_arguments(parser)
    out = []
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            continue
        if action.option_strings and action.nargs is None and action.const is None:
            out.append((max(action.option_strings, key=len), action.dest))
    return out


def _with_value(base: list[str], flag: str, value: str | None) -> list[str]:
    """``base`` with ``flag``'s value replaced by ``value`` (``None``: the flag last, no value)."""
    argv = list(base)
    while flag in argv:  # drop the valid value first
        i = argv.index(flag)
        del argv[i : i + 2]
    return [*argv, flag] if value is None else [*argv, flag, value]


def _generated() -> list[tuple[list[str], list[str]]]:
    cases = []
    for name, base in VALID.items():
        empty_ok = getattr(cli.load_command(name), "empty_ok", ())
        for flag, dest in _value_flags(name):
            if dest not in empty_ok:
                cases.append((_with_value(base, flag, ""), [flag]))
            cases.append((_with_value(base, flag, None), [flag, "expected one argument"]))
        cases.append(([*base, "--no-such-flag"], ["unrecognized arguments: --no-such-flag"]))
    for name, base in VALID.items():  # every positional given empty
        parser = argparse.ArgumentParser()
        cli.load_command(name).add_arguments(parser)
        positionals = [a for a in parser._actions if not a.option_strings]  # noqa: SLF001
        for index, action in enumerate(a for a in positionals if a.nargs is None):
            if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                continue
            argv = list(base)
            plain = [i for i, a in enumerate(argv[1:], 1) if not a.startswith("-")
                     and not argv[i - 1].startswith("-")]
            if index < len(plain):
                argv[plain[index]] = ""
                cases.append((argv, ["''"]))
    return cases


CASES = [*TUNE_CASES, *OTHER_CASES, *_generated()]


def test_the_corpus_is_large_and_covers_every_command():
    assert len(CASES) >= 300, len(CASES)
    assert {argv[0] for argv, _ in CASES} >= set(cli._COMMANDS)  # noqa: SLF001


def _cache(tmp: Path, name: str, *, header: dict | None = None, rows: list[str] | None = None,
           first: bool = True) -> None:
    head = {"tuner_version": "2.19.45", "accuracy_algorithm": "L0",
            "accuracy_parameter": {"atol": 1e-5, "rtol": 1e-5, "epsilon": 0.0},
            "searching_algorithm": "fast", "command_line": "trtexec", "default_build_route": "-a=on",
            "tuning_expr": "-a=[on|off]", "files": {"onnx": "m.onnx"}, "argv": ["trtexec"], **(header or {})}
    ok = '{"iter":0,"build_route":"-a=on","crash":false,"error_message":"","accuracy_loss":null,"gpu_time":0.5}'
    text = json.dumps(head, separators=(",", ":")).replace('"EPS4400"', "1" * 4400).replace('"EPS"', "1" * 400)
    (tmp / f"cache_{name}.jsonl").write_text("\n".join([text, *([ok] if first else []), *(rows or [])]) + "\n")


def _row(gpu: str = "0.4", loss: str = "null", route: str = "-a=off", it: str = "1", crash: str = "false") -> str:
    return (f'{{"iter":{it},"build_route":"{route}","crash":{crash},"error_message":"",'
            f'"accuracy_loss":{loss},"gpu_time":{gpu}}}')


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("corpus")
    model = make_tiny_model(tmp / "model.onnx")
    rng = np.random.default_rng(0)
    np.savez(tmp / "ds.npz", x=rng.normal(size=(16, 16)).astype(np.float32))
    np.savez(tmp / "lds.npz", x=rng.normal(size=(16, 16)).astype(np.float32), labels=np.zeros(16, np.int64))
    np.savez(tmp / "wrong.npz", y=np.zeros((4, 16), np.float32))
    np.savez(tmp / "nands.npz", x=np.full((4, 16), np.nan, np.float32))
    (tmp / "garbage.npz").write_bytes(b"not a zip archive")
    (tmp / "empty.txt").write_text("")
    (tmp / "text.txt").write_text("hello")
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp / "notjson.json").write_text("{nope")
    (tmp / "list.json").write_text("[1, 2]")
    (tmp / "expr.txt").write_text("-ort:threads=[0|1]\n")
    (tmp / "metrics.py").write_text("import numpy as np\n\ndef accuracy(outputs, labels):\n    return 1.0\n")
    (tmp / "broken.py").write_text("def f(:\n")
    (tmp / "notastudy").mkdir()
    (tmp / "notastudy" / "notes.txt").write_text("hi")
    shutil.copy(DATA / "trt_knobs_small.json", tmp / "db.json")
    shutil.copy(DATA / "trt_knobs_small_v2.json", tmp / "db2.json")
    shutil.copy(DATA / "trtexec_cache_fast.jsonl", tmp / "cache.jsonl")
    # the real finished study every command reads: a recorded sweep replayed (no builds, ~1 s)
    from gptuner_core.recording import load_recording

    study = tmp / "study"
    sweep = DATA / "recorded_sweep" / "sweep.json"
    assert main(["tune", str(sweep), "--backend", "replay", "--expr", str(load_recording(sweep).expression),
                 "--study", str(study), "--max-candidates", "4", "--revalidate-top-k", "0",
                 "--drift-every", "0", "--quiet"]) == 0
    from gptuner_core.testing.spaces import write_spaces

    kt_rec = tmp / "kt.recording.json"  # a recording of other knobs: a Kernel Tuner space (issue 43)
    assert main(["import", str(write_spaces(tmp_path_factory.mktemp("kt"))[1]), "--out", str(kt_rec)]) == 0
    sqldir = tmp / "sqldir"  # the study with its store made a folder (issue 43)
    shutil.copytree(study, sqldir, ignore=shutil.ignore_patterns("study.sqlite*"))
    (sqldir / "study.sqlite").mkdir()
    (tmp / "bundle").mkdir()  # gate refuses every case below before reading its baseline
    (tmp / "bundle" / "manifest.json").write_text("{}")
    (tmp / "slink").symlink_to(study)
    for name, kwargs in {
        "neg": {"rows": [_row("-0.0807")]}, "zero": {"rows": [_row("0")]}, "inf": {"rows": [_row("1e400")]},
        "huge": {"rows": [_row("1" + "0" * 400)]}, "loss_huge": {"rows": [_row(loss='{"y":1e999}')]},
        "loss_neg": {"rows": [_row(loss='{"y":-1}')]}, "eps_huge": {"header": {"accuracy_parameter": {"epsilon": "EPS"}}},
        "expr_open": {"header": {"tuning_expr": "-a=[on|off"}}, "expr_noname": {"header": {"tuning_expr": "a=[on|off]"}},
        "expr_empty_list": {"header": {"tuning_expr": "-a=[]"}}, "route_bad": {"rows": [_row(route="a b")]},
        "default_bad": {"header": {"default_build_route": "on"}}, "iter_neg": {"rows": [_row(it="-1")]},
        "crash_str": {"rows": [_row(crash='"no"')]}, "header_row": {"header": {"iter": 0, "build_route": "-a=on"}},
        "int_4400": {"rows": [_row("1" + "0" * 4400)]}, "iter_4400": {"rows": [_row(it="1" + "0" * 4400)]},
        "hdr_4400": {"header": {"accuracy_parameter": {"epsilon": "EPS4400"}}},
        "only_header": {"first": False}, "iter_dup": {"rows": [_row(it="1"), _row(it="1", route="-a=on")]},
        "knob_unknown": {"rows": [_row(route="-b=on")]},
    }.items():
        _cache(tmp, name, **kwargs)
    base = {"model": str(model), "backend": "gptuner_core.testing.faulty_backend:FaultyBackend",
            "expression": "-ort:threads=[0|1]", "epsilon": 0.001, "dataset": str(tmp / "ds.npz")}
    for name, change in {
        "ok": {}, "unknown_field": {"bogus": 1}, "backend_os": {"backend": "os:system"}, "epsilon_str": {"epsilon": "x"},
        "batch_negative": {"batch_size": -1}, "options_list": {"strategy_options": [1]},
        "search_bogus": {"search": "bogus"}, "warm_string": {"warm_start": 7}, "shapes_int": {"measure_shapes": [1]},
        "measurement_list": {"measurement": [1]}, "no_model": {"model": None}, "keep_bogus": {"keep_artifacts": "bogus"},
        "eps_names": {"output_epsilons": {"": 0.1}}, "ray_bad": {"ray": "bogus:addr"},
        "strategy_range": {"search": "tpe", "strategy_options": {"n_startup_trials": -1}},
    }.items():
        doc = {k: v for k, v in {**base, **change}.items() if v is not None}
        (tmp / f"cfg_{name}.json").write_text(json.dumps(doc))
    names = {
        "m": "model.onnx", "ds": "ds.npz", "lds": "lds.npz", "wrong": "wrong.npz", "nands": "nands.npz",
        "g": "garbage.npz", "e": "empty.txt", "t": "text.txt", "deep": "deep.json", "nj": "notjson.json",
        "lj": "list.json", "x": "expr.txt", "ns": "notastudy", "db": "db.json", "db2": "db2.json",
        "c": "cache.jsonl", "s": "study", "b": "bundle", "slink": "slink", "new": "new_study",
        "newdir": "new_dir", "out": "out.file", "none": "missing.file", "metrics": "metrics.py",
        "broken_py": "broken.py", "sqldir": "sqldir", "kt_rec": "kt.recording.json",
    }
    values = {k: str(tmp / v) for k, v in names.items()}
    values.update({p.stem: str(p) for p in tmp.glob("c*_*.json*")})
    values["root"] = str(tmp)
    return values


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Size and mtime of every path under ``root``, but SQLite's ``-shm`` index, which any reader
    of a WAL database updates (its content is not the study's)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + [f for f in files if not f.endswith("-shm")]:
            st = (Path(dirpath) / name).lstat()
            out[os.path.join(dirpath, name)] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.mark.parametrize(("argv", "fragments"), CASES, ids=[f"{i}:{a[0]} {' '.join(a[-2:])}"[:70] for i, (a, _) in enumerate(CASES)])
def test_refused_in_one_line_with_nothing_written(sandbox, capsys, monkeypatch, argv, fragments):
    root = Path(sandbox["root"])
    monkeypatch.chdir(root)
    argv = [a.format(**sandbox) for a in argv]
    before = snapshot(root)
    code = main(argv)
    _, err = capsys.readouterr()
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("gptuner: error: "), (code, err)
    for fragment in fragments:
        assert fragment.format(**sandbox) in lines[0], lines[0]
    after = snapshot(root)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, changed
