"""Scenario tests: pages driven with seeded session state against a finished study."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from tests.app_tests.conftest import APP
from tests.app_tests.conftest import open_new_run_sections


def _page(ws, page, monkeypatch, **seed) -> AppTest:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=30)
    for key, value in seed.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_overview_lists_the_study(finished_workspace, monkeypatch) -> None:
    """The overview table has the study, its status and its winner with CI."""
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(finished_workspace))
    at = AppTest.from_file(str(APP), default_timeout=30).run()
    df = at.dataframe[0].value
    row = df.iloc[0]
    assert row["study"] == "digits-study" and row["status"] == "finished"
    assert row["verdict"].startswith(("winner: route #", "no winner: keeping the default", "screening pick"))
    assert row["stale"].startswith("⚠")  # recorded on 'synthetic-host', not this machine


def test_results_epsilon_reranks(finished_workspace, monkeypatch) -> None:
    """Raising ε admits accuracy-failed candidates: the eligible count grows, nothing re-runs."""
    at = _page(finished_workspace, "app_pages/4_Results.py", monkeypatch)
    metrics = {m.label: m.value for m in at.metric}
    eligible_before = int(metrics["eligible"])
    failed_before = int(metrics["accuracy-failed"])
    assert failed_before > 0
    at.text_input(key="res_eps_digits-study").set_value("1").run()
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["eligible"]) == eligible_before + failed_before
    assert int(metrics["accuracy-failed"]) == 0
    assert at.session_state[state.EPSILON] == {"digits-study": 1.0}


def test_results_table_filter(finished_workspace, monkeypatch) -> None:
    """The table filter narrows rows to one category."""
    at = _page(finished_workspace, "app_pages/4_Results.py", monkeypatch)
    at.segmented_control(key="res_view").set_value("Table").run()
    at.multiselect(key="res_cats").set_value(["crashed / failed"]).run()
    table = at.dataframe[0].value
    assert len(table) > 0 and set(table["category"]) == {"crashed / failed"}


def test_route_trace_seeded_candidate(finished_workspace, monkeypatch) -> None:
    """The route trace shows the candidate chosen elsewhere (session state), with layers."""
    at = _page(finished_workspace, "app_pages/5_Route_trace.py", monkeypatch,
               **{state.STUDY: "digits-study", state.CANDIDATE: 0})
    fields = dict(at.table[0].value.values.tolist())
    assert fields["number"] == "0"
    layer_tables = [d.value for d in at.table if "time ms" in d.value.columns]
    assert layer_tables and "conv1" in list(layer_tables[0]["name"])
    assert any("gptuner tune" in c.value for c in at.code)


def test_route_trace_tables_wrap_and_its_picker_is_short(finished_workspace, monkeypatch) -> None:
    """Issue 39 item 7 (screenshots): the record's routes, paths and hashes were cut by the grid,
    and the picker cut a long route mid-knob. Every table is static (it wraps), the picker's
    options are short and the picked route is shown whole below it."""
    from gptuner_core.storage import open_store

    with open_store(finished_workspace / "digits-study", readonly=True) as store:
        rec = next(r for r in store.candidates(with_samples=False) if r.requested_route)
    at = _page(finished_workspace, "app_pages/5_Route_trace.py", monkeypatch,
               **{state.STUDY: "digits-study", state.CANDIDATE: rec.number})
    assert not at.dataframe and at.table
    fields = dict(at.table[0].value.values.tolist())
    assert fields["requested route"] == rec.requested_route
    box = at.selectbox(key="rt_pick_digits-study")
    assert all(len(o) < 60 for o in box.options) and box.value == rec.number
    assert any(c.value == rec.requested_route for c in at.code)


def test_compare_seeded(finished_workspace, monkeypatch) -> None:
    """Compare shows the route differences of the seeded candidates."""
    at = _page(finished_workspace, "app_pages/6_Compare.py", monkeypatch,
               **{state.STUDY: "digits-study", state.COMPARE: [0, 1, 2]})
    assert at.multiselect(key="cmp_pick_digits-study").value == [0, 1, 2]
    assert not at.error


def test_live_finished_study_offers_results(finished_workspace, monkeypatch) -> None:
    """A finished study shows full progress and no stop button."""
    at = _page(finished_workspace, "app_pages/3_Live.py", monkeypatch)
    assert not [b for b in at.button if b.key == "live_stop"]
    assert any("finished" in m.value for m in at.markdown)


def test_new_run_rejects_bad_upload(empty_workspace, monkeypatch) -> None:
    """A file that is not ONNX is refused with a clear message, never a traceback."""
    at = _page(empty_workspace, "app_pages/2_New_run.py", monkeypatch)
    at.radio(key="nr_source").set_value("Upload").run()
    at.file_uploader(key="nr_model_file").upload("model.onnx", b"this is not onnx").run()
    assert not at.exception
    assert any("not a valid ONNX model" in e.value for e in at.error)
    assert not list(empty_workspace.rglob("*.onnx"))  # nothing stored


def _failed_launch(ws):
    folder = ws / "broken-20260101-000000"
    folder.mkdir(parents=True)
    (folder / "launch.json").write_text('{"argv": ["m.onnx", "--epsilon", "0"]}')
    (folder / "tuner.log").write_text("gptuner: error: --epsilon must be a positive number (got 0.0)\n")
    return folder


def test_failed_launch_on_overview_and_live(empty_workspace, monkeypatch) -> None:
    """Defect: a run that failed to start never appeared on Overview, and Live stayed forever at
    "Starting … (exited)". Now both show it failed, with the cause from its log."""
    folder = _failed_launch(empty_workspace)
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(empty_workspace))
    at = AppTest.from_file(str(APP), default_timeout=30).run()
    assert any("failed to start" in e.value and "--epsilon must be a positive number" in e.value
               for e in at.error), [e.value for e in at.error]
    at = _page(empty_workspace, "app_pages/3_Live.py", monkeypatch,
               **{state.LAST_LAUNCH: {"study": folder.name, "pid": 2**22 + 12345,
                                      "command": "gptuner tune m.onnx --epsilon 0"}})
    assert any("failed to start" in e.value and "positive number" in e.value for e in at.error)


def test_notes_saved_beside_the_store(tmp_path, monkeypatch) -> None:
    """A note on a study and on a candidate lands in STUDY/notes.json; the store is untouched."""
    from gptuner_core.dashboard.notes import read_notes
    from gptuner_core.testing.synthetic_study import write_synthetic_study

    study = write_synthetic_study(tmp_path / "ws" / "noted", 8, seed=4)
    before = (study / "study.sqlite").read_bytes()
    at = _page(tmp_path / "ws", "app_pages/4_Results.py", monkeypatch, **{state.STUDY: "noted"})
    at.segmented_control(key="res_view").set_value("Notes").run()
    at.text_area(key="note_noted_study").set_value("fp16 weights fail the gate").run()
    at.button(key="note_noted_study_save").click().run()
    at.switch_page("app_pages/5_Route_trace.py").run()
    number = at.session_state[state.CANDIDATE]
    at.text_area(key=f"note_noted_{number}").set_value("re-check on a quiet machine").run()
    at.button(key=f"note_noted_{number}_save").click().run()
    assert not at.exception, at.exception
    notes = read_notes(study)
    assert notes.study == "fp16 weights fail the gate"
    assert notes.candidates == {number: "re-check on a quiet machine"}
    assert (study / "study.sqlite").read_bytes() == before


def test_route_trace_offers_the_artifact(tmp_path, monkeypatch) -> None:
    """A kept artifact inside the study folder can be downloaded from the route trace."""
    from gptuner_core.testing.synthetic_study import write_synthetic_study

    study = write_synthetic_study(tmp_path / "ws" / "art", 6, seed=5)
    art = study / "candidates" / "00000" / "model.onnx"
    art.write_bytes(b"onnx-bytes")
    at = _page(tmp_path / "ws", "app_pages/5_Route_trace.py", monkeypatch,
               **{state.STUDY: "art", state.CANDIDATE: 0})
    buttons = at.get("download_button")
    assert any("model.onnx" in b.proto.label for b in buttons), [b.proto.label for b in buttons]


def test_new_run_defaults_are_the_clis(empty_workspace, monkeypatch) -> None:
    """Defects: fast_tpe showed 10 blank boxes labelled 'fast_tpe.max_trials —' with no
    description or default; the form defaulted to 'fast' (CLI: fast_tpe); the task metric
    defaulted to none although the sample has labels."""
    from gptuner_core.strategies import DEFAULT_STRATEGY
    from gptuner_core.strategies import describe_strategies

    at = _page(empty_workspace, "app_pages/2_New_run.py", monkeypatch)
    open_new_run_sections(at)
    at.run()
    assert at.selectbox(key="nr_search").value == DEFAULT_STRATEGY == "auto"
    assert at.selectbox(key="nr_task").value == "top1"  # the bundled sample has labels
    declared = next(e for e in describe_strategies() if e["name"] == "auto")["options"]
    shown = {w.key.rsplit("_auto_", 1)[1]: w for w in [*at.text_input, *at.selectbox, *at.checkbox]
             if w.key and w.key.startswith("nr_sopt_auto_")}
    assert set(shown) == set(declared)
    captions = " ".join(c.value for c in at.caption)
    for name, opt in declared.items():
        assert "default:" in shown[name].label and "—" not in shown[name].label
        assert opt["description"] in captions
        if opt["type"] in ("int", "float"):
            assert float(shown[name].value) == float(opt["default"])
    reasons = " ".join(w.value for w in at.warning)  # a study needs a gate (or No gate)
    assert at.button(key="nr_start").disabled and "no accuracy gate" in reasons
    at.checkbox(key="nr_use_eps").check().run()
    cmd = " ".join(c.value for c in at.code)
    assert '"search": "auto"' in cmd and '"task_metric": "top1"' in cmd
    # advanced settings start at the CLI's defaults
    assert at.text_input(key="nr_adv_batch_size").value == "1"
    assert at.text_input(key="nr_adv_revalidate_rounds").value == "12"  # the round budget
    assert at.text_input(key="nr_adv_build_timeout_s").value == "600"
    # defect: the form kept every artifact (a checkbox, True) while the CLI keeps top-k
    from gptuner_core.config import StudyConfig

    assert at.selectbox(key="nr_keep").value == StudyConfig(model="m").keep_artifacts == "top-k"
    assert '"keep_artifacts": "top-k"' in cmd


def test_new_run_offers_no_gate(empty_workspace, monkeypatch) -> None:
    """A new study needs a gate: the form's Start stays disabled with the CLI's line until ε is
    set or "No gate" is ticked (then the settings say no_gate)."""
    at = _page(empty_workspace, "app_pages/2_New_run.py", monkeypatch)
    assert at.button(key="nr_start").disabled
    at.checkbox(key="nr_no_gate").check().run()
    assert not at.exception
    assert any('"no_gate": true' in c.value for c in at.code)
    assert not any("no accuracy gate" in w.value for w in at.warning)
