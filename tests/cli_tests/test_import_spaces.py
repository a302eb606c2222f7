"""``gptuner import --format t4|kerneltuner``: brute-forced tuning spaces become recordings that
replay, the replay backend and explain read (issue 28). The fixture is written by the tests."""

from __future__ import annotations

import gzip
import json

import pytest

from gptuner_core.cli import main
from gptuner_core.testing import spaces


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return spaces.write_spaces(tmp_path_factory.mktemp("spaces"))


@pytest.mark.parametrize("fmt", ["t4", "kerneltuner", "auto"])
def test_both_formats_give_the_same_recording(capsys, tmp_path, files, fmt):
    from gptuner_core.recording import load_recording

    t4, kt = files
    outs = {}
    for name, src in (("t4", t4), ("kerneltuner", kt)):
        out = tmp_path / f"{name}.json.gz"
        code, text, err = run(capsys, "import", str(src), "--format", name if fmt != "auto" else "auto",
                              "--out", str(out))
        assert code == 0, err
        assert "3 knobs, 24-route product, 16 measured, 2 failed, 6 infeasible" in text
        outs[name] = load_recording(out)
    a, b = outs["t4"], outs["kerneltuner"]
    assert a.db == b.db and str(a.expression) == str(b.expression)
    assert [r.requested_route for r in a.records] == [r.requested_route for r in b.records]
    assert str(a.expression) == "-kt:a=[1|2|4|8] -kt:b=[16|32|64] -kt:c=[x|y]"
    assert a.config["imported"]["fixed_parameters"] == {"f": 15}
    assert a.config["space"] == "exhaustive"
    base = a.baseline
    assert base.number == 0 and base.requested_route == "-kt:a=1 -kt:b=16 -kt:c=x"
    assert base.samples_ms == tuple(11.0 * (1 + 0.01 * i) for i in range(5))
    assert base.build_time_s == pytest.approx(0.6)  # compile time 600 ms
    opt, best = a.optimum()
    assert best.requested_route == "-kt:a=8 -kt:b=16 -kt:c=x"
    assert opt == pytest.approx(11.0 / 2.25, rel=1e-3)
    failed = {r.requested_route: r for r in a.records if r.state.value == "BUILD_FAILED"}
    assert set(failed) == {"-kt:a=8 -kt:b=16 -kt:c=y", "-kt:a=2 -kt:b=32 -kt:c=y"}
    assert "RuntimeFailedConfig" in failed["-kt:a=8 -kt:b=16 -kt:c=y"].error
    assert "CompilationFailedConfig" in failed["-kt:a=2 -kt:b=32 -kt:c=y"].error
    assert a.lookup("-kt:a=8 -kt:b=64 -kt:c=x") is None  # listed as violating the restrictions


def test_an_infeasible_route_is_a_spent_failed_build(capsys, tmp_path, files):
    from gptuner_core.engine.evaluate.recorded import RecordedEvaluator
    from gptuner_core.engine.loop.simulate import simulate
    from gptuner_core.recording import load_recording
    from gptuner_core.routes import Route
    from gptuner_core.strategies import Proposal

    out = tmp_path / "rec.json"
    assert run(capsys, "import", str(files[0]), "--out", str(out))[0] == 0
    rec = load_recording(out)
    ev = RecordedEvaluator(rec)
    got = ev.evaluate(Proposal(route=Route.parse("-kt:a=4 -kt:b=64")), 3, [], {}, lambda _: None)
    assert got.state.value == "BUILD_FAILED" and got.error.startswith("infeasible")
    assert got.extra["infeasible"] is True
    res = simulate("full", rec, 24)
    assert res.builds_used == 24 and len(res.missing) == 6  # every route built once, 6 infeasible
    assert res.found_optimum_fraction == 1.0


@pytest.mark.parametrize(("content", "fmt", "fragment"), [
    (b"not json", "t4", "not valid JSON"),
    (b'{"tune_params": {"a": [1, 2]}, "cache": {}}', "kerneltuner", "'cache' must be a non-empty"),
    (b'{"schema_version": "1", "results": [{"configuration": {"a": 1}}, {"configuration": {"b": 2}}]}',
     "t4", "results[1]: configuration has parameters"),
    (b'{"schema_version": "1", "results": [{"configuration": {"a": 1}, "invalidity": "runtime"},'
     b' {"configuration": {"a": 2}, "invalidity": "runtime"}]}', "auto", "no configuration was measured"),
    (b'{"tune_params": {"a": [1, 2]}, "cache": {"1": {"a": 3, "time": 1.0}}}', "auto", "a=3 is not one of"),
    (b'{"tune_params": {"a": [1]}, "cache": {"1": {"a": 1, "time": 1.0}}}', "auto", "no parameter has more"),
    (b'{"x": 1}', "auto", "neither a T4 file|tuning cache"),  # with --study: read as trtexec's
    # issue 43: OverflowError (a 401-digit integer), ValueError (over 4,300 digits) were tracebacks
    (b'{"tune_params": {"a": [1, 2]}, "cache": {"1": {"a": 1, "time": 1' + b"0" * 400 + b'}}}', "auto",
     "'time' must be a positive number"),
    (b'{"tune_params": {"a": [1, 2]}, "cache": {"1": {"a": 1, "time": 1' + b"0" * 4400 + b'}}}', "auto",
     "an integer of 4401 digits"),
    (b'{"tune_params": {"a": [1, 2]}, "cache": {"1": {"a": 1, "time": 1.0}}}', "t4", "not a t4 file"),
])
def test_a_bad_file_is_one_line_exit_2_and_nothing_written(capsys, tmp_path, content, fmt, fragment):
    bad = tmp_path / "bad.json"
    bad.write_bytes(gzip.compress(content) if fmt == "kerneltuner" else content)
    for target in (["--out", str(tmp_path / "r.json")], ["--study", str(tmp_path / "study")]):
        code, out, err = run(capsys, "import", str(bad), "--format", fmt, *target)
        assert code == 2 and err.startswith("gptuner: error: ") and err.count("\n") == 1, err
        assert any(f in err for f in fragment.split("|")), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]


def test_an_existing_output_is_never_overwritten(capsys, tmp_path, files):
    out = tmp_path / "rec.json"
    out.write_text("keep")
    code, _, err = run(capsys, "import", str(files[1]), "--out", str(out))
    assert code == 2 and "already exists" in err and out.read_text() == "keep"


def test_replay_tune_and_explain_read_an_imported_space(capsys, tmp_path, files):
    from gptuner_core.storage import open_store

    study = tmp_path / "imported"
    code, text, err = run(capsys, "import", str(files[1]), "--study", str(study))
    assert code == 0, err
    with open_store(study, readonly=True) as store:
        assert len(store.candidates()) == 18 and store.get_meta("status") == "finished"
    code, text, err = run(capsys, "replay", str(study), "--search", "random", "--budget", "8", "--seeds", "3")
    assert code == 0, err
    assert "random, budget 8 builds: mean" in text and "worst" in text
    assert "infeasible" in text
    tuned = tmp_path / "tuned"
    code, text, err = run(capsys, "tune", str(study), "--study", str(tuned), "--backend", "replay",
                          "--expr", "-kt:a=[1|2|4|8] -kt:b=[16|32|64] -kt:c=[x|y]", "--search", "random",
                          "--max-candidates", "10", "--revalidate-top-k", "1", "--revalidate-rounds", "2",
                          "--drift-every", "0", "--no-gate", "--quiet")
    assert code == 0, err
    with open_store(tuned, readonly=True) as store:
        recs = store.candidates()
        assert 1 < len(recs) <= 10 and recs[0].requested_route.startswith("-kt:a=1 -kt:b=16")
        winner = store.winner()
    assert winner is not None and winner.replayed  # issue 40 item 6: nothing ran in fresh processes
    assert "fresh processes" not in winner.sentence() and "re-measurement" not in winner.sentence()
    code, text, err = run(capsys, "explain", str(study))
    assert code == 0, err
    assert "-kt:a" in text
    json.dumps(text)


@pytest.mark.parametrize("flag", ["-o", "--output"])
def test_the_recording_file_takes_the_output_flag_of_report_and_bundle(capsys, tmp_path, files, flag):
    """``report`` and ``bundle`` write to ``-o/--output``; a newcomer gives ``import`` the same."""
    out = tmp_path / "r.json.gz"
    code, text, err = run(capsys, "import", str(files[1]), flag, str(out))
    assert code == 0, err
    assert out.is_file() and str(out) in text


def test_the_curve_keeps_its_build_second_columns_apart_when_builds_take_minutes(capsys, tmp_path):
    """Seen on convolution A100 (--budget 2048): ``build s  197  395  9861.97e+033.95e+03``: the
    columns ran together once a figure took 8 characters."""
    doc = spaces.t4_document()
    for result in doc["results"]:
        result["times"]["compilation"] *= 1111.1  # 10-15 minutes a build
    src = tmp_path / "slow_T4.json.gz"
    with gzip.open(src, "wt") as fh:
        json.dump(doc, fh)
    rec = tmp_path / "slow.json.gz"
    code, _, err = run(capsys, "import", str(src), "--out", str(rec))
    assert code == 0, err
    code, text, err = run(capsys, "replay", str(rec), "--search", "random", "--budget", "24")
    assert code == 0, err
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("build s"))
    cells = line.split()[2:]
    assert len(cells) == 5, line
    seconds = [float(c.replace(",", "")) for c in cells]
    assert seconds == sorted(seconds) and seconds[-1] > 10_000, line


@pytest.mark.parametrize("backend", ["replay", None])
def test_the_knobs_command_that_tune_suggests_runs(capsys, tmp_path, files, backend):
    """``tune`` without ``--expr`` names a command that lists the knobs; a newcomer ran it and got
    'a knob database is needed' (it read the model as a KNOB name)."""
    import shlex

    study = tmp_path / "imported"
    assert run(capsys, "import", str(files[1]), "--study", str(study))[0] == 0
    flags = ["--backend", backend] if backend else []
    code, _, err = run(capsys, "tune", str(study), "--study", str(tmp_path / "t"), *flags)
    assert code == 2 and "lists the knobs" in err
    suggested = shlex.split(err.split("'gptuner ", 1)[1].split("' lists", 1)[0])
    assert suggested[0] == "knobs", err
    if backend is None:  # the default backend cannot describe a recording: only the form is checked
        assert "--model" in suggested and str(study) in suggested, err
        return
    code, text, err = run(capsys, *suggested)
    assert code == 0, err
    assert "-kt:a" in text and "-kt:b" in text


def test_diff_of_a_replayed_candidate_says_it_was_replayed(capsys, tmp_path, files):
    study = tmp_path / "imported"
    assert run(capsys, "import", str(files[1]), "--study", str(study))[0] == 0
    code, _, err = run(capsys, "diff", str(study), "0", "1", "--capture")
    assert code == 2 and "replayed from a recording" in err and "never built (COMPLETE)" not in err


def _other_gpu(folder) -> object:
    """The fixture's space as another GPU measured it: routes with ``c=y`` twice as fast."""
    doc = spaces.kerneltuner_document()
    doc["device_name"] = "Other GPU"
    for entry in doc["cache"].values():
        if entry["c"] == "y" and isinstance(entry["time"], float):
            entry["time"] /= 2
            entry["times"] = [t / 2 for t in entry["times"]]
    path = folder / "other.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


def test_retune_on_another_gpu_is_answered_by_the_recording_and_takes_warm_start(capsys, tmp_path, files):
    """Issue 28 item 4: ``--warm-start`` in tune, retune and replay. ``retune`` had no such flag,
    and on a recorded study its old-winner check built the routes with the replay backend
    ('the replay backend builds nothing')."""
    from gptuner_core.storage import open_store

    old_rec, new_rec = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    assert run(capsys, "import", str(files[1]), "--out", str(old_rec))[0] == 0
    assert run(capsys, "import", str(_other_gpu(tmp_path)), "--out", str(new_rec))[0] == 0
    old = tmp_path / "old"
    code, _, err = run(capsys, "tune", str(old_rec), "--study", str(old), "--backend", "replay",
                       "--expr", "-kt:a=[1|2|4|8] -kt:b=[16|32|64] -kt:c=[x|y]", "--search", "random",
                       "--max-candidates", "12", "--no-gate", "--quiet")
    assert code == 0, err
    new = tmp_path / "new"
    code, _, err = run(capsys, "retune", str(old), "--model", str(tmp_path / "nope.json"), "--study",
                       str(new), "--warm-start", str(old_rec))
    assert code == 2 and "nope.json" in err and not new.exists()
    code, _, err = run(capsys, "retune", str(old), "--model", str(new_rec), "--study", str(new),
                       "--warm-start", str(tmp_path / "missing.json.gz"))
    assert code == 2 and "--warm-start" in err and "missing.json.gz" in err and not new.exists(), err
    code, text, err = run(capsys, "retune", str(old), "--model", str(new_rec), "--study", str(new),
                          "--warm-start", str(old_rec), "--max-candidates", "10", "--quiet")
    assert code == 0, err
    assert "old winner holds:" in text
    with open_store(new, readonly=True) as store:
        assert store.config()["warm_start"] == [str(old), str(old_rec.resolve())]
        assert store.get_meta("lineage")["from"] == str(old)
        assert store.events("warm_start")


def test_revalidating_a_recorded_study_says_it_was_replayed(capsys, tmp_path, files):
    """'gptuner revalidate' of an imported space said 'artifact none is gone: the study was tuned
    with --discard-artifacts, or the file was removed': it never had artifacts."""
    study = tmp_path / "imported"
    assert run(capsys, "import", str(files[1]), "--study", str(study))[0] == 0
    tuned = tmp_path / "tuned"
    assert run(capsys, "tune", str(study), "--study", str(tuned), "--backend", "replay", "--expr",
               "-kt:a=[1|2|4|8] -kt:b=[16|32|64] -kt:c=[x|y]", "--search", "random",
               "--max-candidates", "6", "--no-gate", "--quiet")[0] == 0
    for folder in (study, tuned):
        code, _, err = run(capsys, "revalidate", str(folder), "0", "1")
        assert code == 2 and "replayed from a recording" in err and "discard-artifacts" not in err, err
        assert len(err.strip().splitlines()) == 1


def test_retune_replays_the_new_recording_not_the_old_ones_option(capsys, tmp_path, files):
    """A study replayed through ``--backend-option recording=OLD`` keeps that option in its
    settings; a re-tune on ``--model NEW`` must replay NEW."""
    from gptuner_core.storage import open_store

    old_rec, new_rec = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    assert run(capsys, "import", str(files[1]), "--out", str(old_rec))[0] == 0
    assert run(capsys, "import", str(_other_gpu(tmp_path)), "--out", str(new_rec))[0] == 0
    old = tmp_path / "old"
    assert run(capsys, "tune", str(old_rec), "--study", str(old), "--backend", "replay",
               "--backend-option", f"recording={old_rec}", "--expr", "-kt:a=[1|2] -kt:c=[x|y]",
               "--search", "full", "--no-gate", "--quiet")[0] == 0
    new = tmp_path / "new"
    code, _, err = run(capsys, "retune", str(old), "--model", str(new_rec), "--study", str(new), "--quiet")
    assert code == 0, err
    from gptuner_core.recording import load_recording

    replayed = load_recording(new_rec)
    with open_store(new, readonly=True) as store:
        assert "recording" not in store.config()["backend_options"]
        faster = [r for r in store.candidates() if "-kt:c=y" in r.requested_route and r.latency]
    assert faster  # routes whose latency differs between the two GPUs: they come from NEW
    for rec in faster:
        assert rec.latency.median_ms == replayed.lookup(rec.requested_route).latency.median_ms


def test_a_space_too_large_to_enumerate_replays_and_reports(capsys, tmp_path):
    """Defect (issue 43 item 3): a 10^20-route Kernel Tuner space imported, then `replay` and
    `report` crashed ("Maximum allowed dimension exceeded": random search's baseline laid out
    every route). They work, without the random-search baseline, which says why."""
    params = {f"p{i}": list(range(10)) for i in range(20)}
    cache = {}
    for k in range(3):
        entry = {f"p{i}": (k + i) % 10 for i in range(20)}
        cache[",".join(str(entry[f"p{i}"]) for i in range(20))] = {**entry, "time": 1.0 + k}
    src = tmp_path / "big.json"
    src.write_text(json.dumps({"tune_params": params, "tune_params_keys": list(params), "cache": cache}))
    rec, study = tmp_path / "rec.json", tmp_path / "study"
    assert run(capsys, "import", str(src), "--out", str(rec))[0] == 0
    assert run(capsys, "import", str(src), "--study", str(study))[0] == 0
    for argv in (["replay", str(rec), "--budget", "5"], ["replay", str(study), "--budget", "5", "--search", "random"],
                 ["report", str(study), "-o", str(tmp_path / "r.html")]):
        code, out, err = run(capsys, *argv)
        assert code == 0 and "Traceback" not in err, (argv, err)
    assert "random search's baseline" in run(capsys, "replay", str(rec), "--budget", "5")[1]


def test_an_imported_study_is_extended_and_retuned(capsys, tmp_path, files):
    """Defect (issue 43 item 6): a study made by `import --study` could not be re-tuned or
    extended ("unknown field(s) ['imported', 'model_family', 'space']"), while one tuned with
    `--backend replay` could."""
    study, rec = tmp_path / "imported", tmp_path / "rec.json"
    assert run(capsys, "import", str(files[1]), "--study", str(study))[0] == 0
    assert run(capsys, "import", str(files[1]), "--out", str(rec))[0] == 0
    code, out, err = run(capsys, "tune", "--study", str(study), "--continue", "--extend", "--quiet")
    assert code == 0 and "finished" in out, err
    code, out, err = run(capsys, "retune", str(study), "--model", str(rec), "--study", str(tmp_path / "new"),
                         "--max-candidates", "5")
    assert code == 0 and "old winner holds" in out, err
