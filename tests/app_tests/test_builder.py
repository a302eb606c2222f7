"""The expression builder on the Knob explorer: one source of truth, both ways (AppTest)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app_tests.conftest import APP


KX = "app_pages/1_Knob_explorer.py"


def _explorer(ws, monkeypatch) -> AppTest:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page(KX).run()
    assert not at.exception, at.exception
    return at


def _text(at) -> str:
    return at.text_area(key="kx_expr_text").value


def test_search_never_drops_picked_knobs(empty_workspace, monkeypatch) -> None:
    """Defect: changing the knob search text silently dropped knobs already picked and emptied
    the expression."""
    at = _explorer(empty_workspace, monkeypatch)
    at.multiselect(key="kx_expr_picked").set_value(["-quant:mode"]).run()
    assert _text(at).startswith("-quant:mode=[")
    at.text_input(key="kx_expr_query").set_value("threads").run()
    assert not at.exception, at.exception
    assert "-quant:mode" in at.multiselect(key="kx_expr_picked").value
    assert _text(at).startswith("-quant:mode=[")


def test_text_edit_is_parsed_and_never_overwritten(empty_workspace, monkeypatch) -> None:
    """Defect: typing in the expression box was overwritten by the next picker change."""
    at = _explorer(empty_workspace, monkeypatch)
    at.text_area(key="kx_expr_text").set_value("-quant:mode=[off|qdq] -ort:intra_op_num_threads=1").run()
    assert at.multiselect(key="kx_expr_picked").value == ["-quant:mode", "-ort:intra_op_num_threads"]
    assert at.multiselect(key="kx_expr_vals:-quant:mode").value == ["off", "qdq"]
    at.multiselect(key="kx_expr_vals:-quant:mode").set_value(["off", "qdq", "dynamic"]).run()
    assert _text(at) == "-quant:mode=[off|qdq|dynamic] -ort:intra_op_num_threads=1"


def test_loaded_file_moves_the_pickers(empty_workspace, monkeypatch) -> None:
    """Defects: a loaded file replaced the text but left the pickers on the old knobs; a comment
    line failed with "Invalid expression (no '='): #"."""
    at = _explorer(empty_workspace, monkeypatch)
    at.multiselect(key="kx_expr_picked").set_value(["-quant:mode"]).run()
    content = b"# two knobs\n-quant:reduce_range=[off|on]\n\n-ort:intra_op_num_threads=[0|1]  # cores\n"
    at.file_uploader(key="kx_expr_file").upload("routes.txt", content).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.multiselect(key="kx_expr_picked").value == ["-quant:reduce_range", "-ort:intra_op_num_threads"]
    assert _text(at) == "-quant:reduce_range=[off|on] -ort:intra_op_num_threads=[0|1]"
    # pick again: the knob joins the loaded ones
    at.multiselect(key="kx_expr_picked").set_value(
        ["-quant:reduce_range", "-ort:intra_op_num_threads", "-quant:mode"]).run()
    assert _text(at).startswith("-quant:reduce_range=[off|on] -ort:intra_op_num_threads=[0|1] -quant:mode=[")


def test_bad_text_names_value_and_disables_pickers(empty_workspace, monkeypatch) -> None:
    """A bad value is named with the allowed ones; pickers wait (disabled) instead of
    overwriting the text."""
    at = _explorer(empty_workspace, monkeypatch)
    at.text_area(key="kx_expr_text").set_value("-quant:mode=[off|int3]").run()
    assert not at.exception, at.exception
    errors = " ".join(e.value for e in at.error)
    assert "not allowed: int3" in errors and "qdq" in errors
    assert at.multiselect(key="kx_expr_picked").disabled
    assert _text(at) == "-quant:mode=[off|int3]"


def test_knob_table_wraps_its_help(empty_workspace, monkeypatch) -> None:
    """Issue 39 item 7 (screenshots): the builder's grid cut the help column mid-sentence; the
    knobs are a static table whose cells wrap, in a box that scrolls."""
    at = _explorer(empty_workspace, monkeypatch)
    knobs = next(t.value for t in at.table if "help" in t.value.columns)
    assert len(knobs) > 1 and knobs["help"].str.len().max() > 60
    assert not any("help" in d.value.columns for d in at.dataframe)
