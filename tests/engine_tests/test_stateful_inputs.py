"""A model nobody here wrote the shapes of: a state input batched on axis 1, a scalar input fed
whole, two outputs of which only one is gated (issue 'Real models', items 2 and 6, end to end)."""

from __future__ import annotations

import json

import numpy as np

from gptuner_core.cli import main
from gptuner_core.storage import open_store

from .conftest import QUICK


def _stateful_model(path, decoy=False):
    """``decoy``: a first output ``z`` = -y (class scores whose top-1 is not y's)."""
    import onnx
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32), "w")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["xy"], name="mm"),
        helper.make_node("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Mul", ["srf", "two"], ["sr2"], name="mul_sr"),
        helper.make_node("Add", ["xy", "sr2"], ["y"], name="add"),
        helper.make_node("Mul", ["state", "two"], ["stateN"], name="mul_state"),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 4]),
               helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, "?", 4])]
    if decoy:
        nodes.append(helper.make_node("Neg", ["y"], ["z"], name="neg"))
        outputs.insert(0, helper.make_tensor_value_info("z", TensorProto.FLOAT, [-1, 4]))
    graph = helper.make_graph(
        nodes, "stateful",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 16]),
         helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "?", 4]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        outputs,
        [w, two],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_state_on_axis_1_and_a_scalar_input_tune_end_to_end(tmp_path):
    model = _stateful_model(tmp_path / "stateful.onnx")
    rng = np.random.default_rng(1)
    ds = tmp_path / "ds.npz"
    np.savez(ds, x=rng.normal(size=(12, 16)).astype(np.float32),
             state=rng.normal(size=(2, 12, 4)).astype(np.float32), sr=np.array(16000, np.int64))
    study = tmp_path / "study"
    code = main(["tune", str(model), "--backend", "onnxruntime", "--expr",
                 "-ort:intra_op_num_threads=[0|1]", "--dataset", str(ds), "--batch-size", "4",
                 "--batch-axes", "state:1,sr:none", "--gate-outputs", "y", "--epsilon", "y=1e-3",
                 "--revalidate-top-k", "0", "--drift-every", "0", "--profile-runs", "0",
                 "--study", str(study), "--quiet",
                 *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]])
    assert code == 0
    with open_store(study, readonly=True) as store:
        recs = store.candidates()
        assert store.get_meta("batch_axes") == {"x": 0, "state": 1, "sr": None}
    assert [r.state.value for r in recs] == ["COMPLETE", "COMPLETE"]
    with np.load(study / "golden.npz") as golden:
        assert golden["stateN"].shape == (2, 12, 4) and golden["y"].shape == (12, 4)
    assert set(recs[1].accuracy.losses) == {"y", "stateN"}  # both recorded, only y gated


def _ungated(model, dataset, study, *extra):
    return ["tune", str(model), "--backend", "onnxruntime", "--expr",
            "-ort:intra_op_num_threads=[0|1]", "--dataset", str(dataset), "--batch-size",
            "4", "--revalidate-top-k", "0", "--drift-every", "0", "--profile-runs", "0",
            "--max-candidates", "1", "--study", str(study), "--quiet", *extra,
            *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]]


def test_a_study_without_a_gate_is_refused_before_anything_is_written(tmp_path, tiny_model,
                                                                      tiny_dataset, capsys):
    """Issue 'Real models', item 6: no --epsilon used to mean no gate (then only a warning):
    now one line says what is missing, what would do, and what was found; no folder is made."""
    study = tmp_path / "s"
    assert main(_ungated(tiny_model, tiny_dataset, study)) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "gate" in line]
    assert len(lines) == 1 and "Traceback" not in err
    for expected in ("--epsilon EPS", "--epsilon OUTPUT=EPS", "--max-task-drop", "--no-gate",
                     "found"):
        assert expected in lines[0], lines[0]
    assert not study.exists()


def test_a_task_metric_without_an_allowed_drop_is_no_gate(tmp_path, tiny_model, tiny_dataset,
                                                          capsys):
    """A task metric alone is recorded, not gated: refused too, and the line says what it found."""
    ds = tmp_path / "labelled.npz"
    with np.load(tiny_dataset) as data:
        np.savez(ds, x=data["x"], labels=np.zeros(len(data["x"]), np.int64))
    assert main(_ungated(tiny_model, ds, tmp_path / "s", "--task-metric", "top1")) == 2
    err = capsys.readouterr().err
    assert "task metric top1 without --max-task-drop" in err
    assert not (tmp_path / "s").exists()


def test_no_gate_asked_explicitly_runs_with_a_warning(tmp_path, tiny_model, tiny_dataset, capsys):
    code = main(_ungated(tiny_model, tiny_dataset, tmp_path / "s", "--no-gate"))
    assert code == 0
    assert "warning: no accuracy gate" in capsys.readouterr().err
    with open_store(tmp_path / "s", readonly=True) as store:
        assert any("no accuracy gate" in e.payload.get("gate", "") for e in store.events("warning"))


def test_a_study_recorded_without_a_gate_still_continues(tmp_path, tiny_model, tiny_dataset):
    """Studies made before the rule (no gate, no no_gate) are continued, not refused: nothing
    already recorded is lost."""
    import sqlite3

    study = tmp_path / "s"
    assert main(_ungated(tiny_model, tiny_dataset, study, "--no-gate")) == 0
    with open_store(study, readonly=True) as store:
        config = {**store.config(), "no_gate": False, "max_candidates": 2}
    with sqlite3.connect(study / "study.sqlite") as conn:
        conn.execute("UPDATE study SET config = ? WHERE id = 1", (json.dumps(config),))
    assert main(["tune", "--study", str(study), "--continue", "--extend", "--quiet"]) == 0
    with open_store(study, readonly=True) as store:
        assert len(store.candidates()) == 2


def test_task_output_reaches_the_candidates_process(tmp_path):
    """--task-output names the output top1 reads; the metric runs in the child, which must get it."""
    from gptuner_core.accuracy import top1

    model = _stateful_model(tmp_path / "stateful.onnx", decoy=True)
    rng = np.random.default_rng(2)
    ds = tmp_path / "ds.npz"
    np.savez(ds, x=rng.normal(size=(12, 16)).astype(np.float32),
             state=rng.normal(size=(2, 12, 4)).astype(np.float32), sr=np.array(0, np.int64),
             labels=rng.integers(0, 4, size=12).astype(np.int64))
    study = tmp_path / "study"
    code = main(["tune", str(model), "--backend", "onnxruntime", "--expr",
                 "-ort:intra_op_num_threads=[0|1]", "--dataset", str(ds), "--batch-size", "4",
                 "--batch-axes", "state:1,sr:none", "--task-metric", "top1", "--task-output", "y",
                 "--max-task-drop", "0.5", "--revalidate-top-k", "0", "--drift-every", "0",
                 "--profile-runs", "0", "--max-candidates", "1", "--study", str(study), "--quiet",
                 *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]])
    assert code == 0
    with open_store(study, readonly=True) as store:
        recorded = store.candidates()[0].accuracy.task_metric
    with np.load(study / "golden.npz") as golden, np.load(ds) as data:
        expected = top1({"y": golden["y"]}, data["labels"], "y")
        decoy = top1({"z": golden["z"]}, data["labels"], "z")
    assert recorded == expected != decoy


def test_the_new_run_forms_check_refuses_a_study_without_a_gate(tiny_model):
    """The dashboard's New run form checks its fields with ``config.validate_config``: the same
    rule, the same line; a stored configuration without a gate still loads (``validate``)."""
    from gptuner_core.config import StudyConfig
    from gptuner_core.dashboard.forms import check_fields

    fields = {"model": str(tiny_model), "backend": "onnxruntime", "search": "fast"}
    problems = check_fields(fields)
    assert any(p.startswith("no accuracy gate") and "--no-gate" in p for p in problems), problems
    assert not any("gate" in p for p in check_fields({**fields, "epsilon": 1e-3}))
    assert not any("gate" in p for p in check_fields({**fields, "no_gate": True}))
    assert StudyConfig.from_json(StudyConfig(model=str(tiny_model)).to_json()).epsilon is None
