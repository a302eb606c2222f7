"""The Results page's views (one rendered at a time); each renders what ``gptuner_core.views`` computes.

Large studies stay fast: figures group or thin their points server-side (``views.scatter``,
``views.explore``), tables show the first :data:`TABLE_ROWS` rows of the filtered frame (the CSV
has them all), and frames are cached per store revision (``dashboard.data``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from gptuner_core import views
from gptuner_core.dashboard import charts
from gptuner_core.dashboard import data
from gptuner_core.dashboard import state
from gptuner_core.dashboard import tables


if TYPE_CHECKING:
    import pandas as pd

    from gptuner_core.dashboard.data import Snapshot

TABLE_ROWS = 2000
TABS = ("Accuracy vs latency", "Speedup", "History", "Knob effect", "Parallel coordinates",
        "Contour", "Rank", "Slice", "Timeline", "Latency EDF", "Importance", "Table", "Measurement health", "Notes")


def _picked_links(numbers: list[int]) -> None:
    state.put(state.CANDIDATE, numbers[0])
    state.put(state.COMPARE, numbers[:4])
    st.write(f"Selected: {', '.join(f'#{n}' for n in numbers[:4])}")
    c1, c2 = st.columns(2)
    c1.page_link("app_pages/5_Route_trace.py", label="Route trace", icon=":material/route:")
    c2.page_link("app_pages/6_Compare.py", label="Compare", icon=":material/compare_arrows:")


def selected(study: Path) -> list[int]:
    """Candidate numbers selected in any Results view of ``study`` (highlighted in the others)."""
    return list((state.get(state.SELECTED) or {}).get(study.name, []))


def take_selection(study: Path, key: str) -> list[int]:
    """The points chart ``key`` reports selected (read before the chart is drawn, so this run's
    figures already highlight them); a selection that differs from the one the chart reported
    last becomes the study's selection. An emptied chart keeps the shared selection (a chart
    redrawn with new highlights forgets its own); "Clear selection" clears it."""
    picked = charts.selected_numbers(st.session_state.get(key))
    seen = dict(state.get(state.SEEN) or {})
    if picked != seen.get(key, []):
        seen[key] = picked
        state.put(state.SEEN, seen)
        if picked:
            state.put(state.SELECTED, {**(state.get(state.SELECTED) or {}), study.name: picked})
    return picked


def selection_bar(study: Path) -> None:
    chosen = selected(study)
    if not chosen:
        st.caption("Select points (click, box or lasso) in Accuracy vs latency or Slice: the other "
                   "views highlight them.")
        return
    c1, c2 = st.columns([4, 1])
    c1.caption(f"Highlighted: {', '.join(f'#{n}' for n in chosen[:12])}"
               + (f" and {len(chosen) - 12} more" if len(chosen) > 12 else ""))
    if c2.button("Clear selection", key="res_sel_clear"):
        state.put(state.SELECTED, {k: v for k, v in (state.get(state.SELECTED) or {}).items()
                                   if k != study.name})
        st.rerun()


SELECT_MODES = ("points", "box", "lasso")


@st.cache_resource(max_entries=32, ttl=3600, show_spinner=False)
def _scatter(path: str, rev: tuple[int, ...], epsilon: float | None, metric: str, log_y: bool,
             winner: int | None, chosen: tuple[int, ...], _ranked: pd.DataFrame) -> object:
    """The scatter of one store revision at one ε (reruns for selections and toggles reuse it;
    the figure is never mutated by the page)."""
    return views.accuracy_latency_figure(_ranked, epsilon=epsilon, metric=metric, log_y=log_y,
                                         winner=winner, selected=chosen)


NO_ACCURACY = ("No accuracy loss is stored for this study (an imported tuning space, or a study "
               "replayed from one): routes are ranked by latency alone. Speedup, History and "
               "Slice show them.")


def gate_caption(configured: float | None, now: float | None, *, has_loss: bool) -> str:
    """The line beside the accuracy gate: the study's ε and the one ranking now."""
    if not has_loss:
        return NO_ACCURACY
    def text(eps: float | None, none: str) -> str:
        return none if eps is None else f"{eps:g}" if isinstance(eps, (int, float)) else str(eps)

    return (f"configured ε: {text(configured, 'none (not gated)')} · now: {text(now, 'off')} — the eligible "
            "set and the winner are re-ranked from the stored losses, nothing is re-run.")


def scatter_tab(study: Path, ranked: pd.DataFrame, *, epsilon: float | None, metric: str,
                winner: int | None) -> None:
    if not ranked["max_loss"].notna().any():
        st.info(NO_ACCURACY)
        return
    log_y = st.toggle("Log-scale accuracy axis", value=bool(state.get(state.LOG_Y)), key="res_logy")
    state.put(state.LOG_Y, log_y)
    picked = take_selection(study, "res_scatter")
    selection_bar(study)
    fig = _scatter(str(study), data.revision(study), epsilon, metric, log_y, winner,
                   tuple(selected(study)), ranked)
    charts.plotly(fig, key="res_scatter", on_select="rerun", selection_mode=SELECT_MODES)
    if picked:
        _picked_links(picked)


def _knob_pair(study: Path, ranked: pd.DataFrame) -> tuple[str, str] | None:
    """Two varied knobs (selectboxes shared by Contour and Rank), by default the two most
    important on the Importance tab, else the first two."""
    from gptuner_core.dashboard import explain as ex

    knobs = views.knob_columns(ranked)
    if len(knobs) < 2:
        st.info("These views need two knobs that vary among the candidates.")
        return None
    order = [k for k in ex.importance_order(study) if k in knobs]
    first = order + [k for k in knobs if k not in order]
    c1, c2 = st.columns(2)
    x = c1.selectbox("x knob", knobs, index=knobs.index(first[0]), key=f"res_kx_{study.name}")
    y = c2.selectbox("y knob", knobs, index=knobs.index(first[1]), key=f"res_ky_{study.name}")
    return x, y


def knob_views_tab(view: str, study: Path, ranked: pd.DataFrame, *,
                   epsilon: float | None = None) -> None:
    """Contour, Rank and Slice (``views.knob_views``) with the shared selection highlighted;
    each figure built once per store revision, ε, knobs and selection (Contour took 3.4 s of
    every visit)."""
    from gptuner_core.views import knob_views as kv

    chosen = tuple(selected(study))

    if view == "Slice":
        take_selection(study, "res_slice")
        selection_bar(study)
        if not views.knob_columns(ranked):
            st.info("No knob takes more than one value among these candidates.")
            return
        fig = data.derived("res_slice", study, (epsilon, tuple(selected(study))),
                           lambda: kv.slice_grid_figure(ranked, selected=selected(study)))
        charts.plotly(fig, key="res_slice", on_select="rerun", selection_mode=SELECT_MODES)
        return
    selection_bar(study)
    pair = _knob_pair(study, ranked)
    if pair is None:
        return
    if view == "Contour":
        colour = st.segmented_control("Colour", ["median latency", "best screening speed-up"],
                                      default="median latency", key="res_contour_c")
        value = "speedup" if colour == "best screening speed-up" else "median_ms"
        fig = data.derived("res_contour", study, (epsilon, chosen, pair, value),
                           lambda: kv.contour_figure(ranked, *pair, value=value, selected=chosen))
        charts.plotly(fig, key="res_contour")
    else:
        fig = data.derived("res_rank", study, (epsilon, chosen, pair),
                           lambda: kv.rank_figure(ranked, *pair, selected=chosen))
        charts.plotly(fig, key="res_rank")


def knob_tab(ranked: pd.DataFrame) -> None:
    knobs = views.knob_columns(ranked)
    if not knobs:
        st.info("No knob takes more than one value among these candidates.")
        return
    knob = st.selectbox("Knob", knobs, key="res_knob")
    charts.plotly(views.knob_effect_figure(ranked, knob), key="res_knob_fig")


def timeline_tab(study: Path, snap: Snapshot) -> None:
    from gptuner_core.views.explore import timeline_figure
    from gptuner_core.views.explore import timeline_frame

    frame = timeline_frame(snap.records, data.events(study, "revalidation"),
                           data.events(study, "baseline"))
    if frame.empty:
        st.info("No timing recorded yet.")
        return
    if len(snap.records) > 1500:
        st.caption(f"The last 1,500 of {len(snap.records):,} candidates.")
    charts.plotly(timeline_figure(frame), key="res_timeline")


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def _curves(path: str, rev: tuple[int, ...], _snap: Snapshot) -> tuple:
    """The study's search curve and, where its space is recorded, random search's band."""
    from gptuner_core.views.curves import study_curves

    return study_curves(_snap.records, _snap.config, path)


def history_tab(study: Path, snap: Snapshot, ranked: pd.DataFrame) -> None:
    from gptuner_core.views.curves import search_curve_figure

    charts.plotly(views.history_figure(views.best_so_far(ranked)), key="res_history")
    curve, rand, fraction = _curves(str(study), data.revision(study), snap)
    against = st.segmented_control("Search curve against", ["builds", "build seconds"],
                                   default="builds", key="res_curve_x") or "builds"
    fig = search_curve_figure(curve, rand, against="builds" if against == "builds" else "seconds",
                              fraction=fraction, name=study.name)
    charts.plotly(fig, key="res_curve")
    if rand is None:
        st.caption("Random search's expectation and band appear for a study of a recorded space "
                   "(the replay backend, or a space brought in by `gptuner import`).")


def importance_tab(study: Path) -> None:
    """Knob importance with its bootstrap interval: the same numbers as Explain's table."""
    from gptuner_core.dashboard import explain as ex
    from gptuner_core.views import explain as ev

    expl = ex.explanation(study, None)
    if expl is None:
        return
    if not expl.importance:
        st.caption("Too few eligible candidates (at least 3) to rank knobs.")
        return
    charts.plotly(ev.importance_figure(expl.importance), key="res_importance")
    tables.table(ev.importance_frame(expl.importance))  # as on Explain
    st.caption("Share of explained log-latency variance (ridge regression, 200 bootstrap "
               "resamples), as on Explain. " + ev.importance_caveat(
                   expl.importance, eligible=sum(r.eligible for r in data.snapshot(study).records)))


def table_tab(study: Path, ranked: pd.DataFrame, metric: str) -> None:
    c1, c2 = st.columns([1, 1])
    cats = c1.multiselect("Show", list(views.CATEGORIES), default=list(views.CATEGORIES), key="res_cats")
    text = c2.text_input("Route or error contains", key="res_text")
    knob_filter = {}
    knobs = views.knob_columns(ranked)
    if knobs:
        with st.expander("Filter by knob value"):
            for k in knobs:
                values = sorted(ranked[f"knob:{k}"].dropna().unique().tolist())
                knob_filter[k] = st.multiselect(k, values, key=f"res_kf_{k}")
    shown = views.filter_frame(ranked, categories=cats, text=text, knob_values=knob_filter)
    view = shown.sort_values(["rank", "number"], na_position="last").head(TABLE_ROWS)
    if len(shown) > TABLE_ROWS:
        st.caption(f"The best {TABLE_ROWS:,} of {len(shown):,} rows (download the CSV for all).")
    cols = ["number", "rank", "category", "state", "speedup", "median_ms", "ci_low_ms", "ci_high_ms",
            "max_loss", "gate_reason", "cv", "n_samples", "build_time_s", "route", "error"]
    table = st.dataframe(
        view, column_order=cols[:9] + [c for c in view.columns if c.startswith(("loss:", "task:"))]
        + cols[9:] + [c for c in view.columns if c.startswith("knob:")],
        hide_index=True, width="stretch", key="res_table", on_select="rerun",
        selection_mode="multi-row",
        column_config={
            "speedup": st.column_config.NumberColumn("screening speed-up", format="%.3fx"),
            "median_ms": st.column_config.NumberColumn("median (ms)", format="%.4g"),
            "max_loss": st.column_config.NumberColumn(f"max loss ({metric})", format="%.3g"),
        },
    )
    rows = table.selection.rows if table is not None else []
    if rows:
        _picked_links([int(view.iloc[i]["number"]) for i in rows])
    st.download_button("Download CSV", lambda: views.to_csv(shown), file_name=f"{study.name}.csv",
                       mime="text/csv", key="res_csv")


def health_tab(study: Path, snap: Snapshot) -> None:
    health = data.health(study)  # tiles, chart and warnings from one computation
    for col, tile in zip(st.columns(4), health.tiles(), strict=True):
        col.metric(tile.label, tile.value, help=tile.help or None)
    for warning in health.warnings:
        st.warning(warning)
    baselines = data.events(study, "baseline")
    drift = views.drift_frame(health.drift)
    if len(drift) > 1:
        charts.plotly(views.drift_figure(drift), key="res_drift")
        if st.checkbox("Normalize speed-ups to the default route measured nearest in time",
                       key="res_normalize"):
            st.dataframe(views.normalized_frame(snap.records, baselines), hide_index=True,
                         width="stretch", column_config={
                             "speedup": st.column_config.NumberColumn(
                                 "screening speed-up", format="%.3fx"),
                             "normalized_speedup": st.column_config.NumberColumn(
                                 "normalized screening speed-up", format="%.3fx"),
                         })
    else:
        st.caption("The default route was measured once: no drift sentinel in this study "
                   "(--drift-every N re-measures it every N candidates).")


def render_tabs(study: Path, snap: Snapshot, ranked: pd.DataFrame, *, epsilon: float | None,
                metric: str, winner: int | None) -> None:
    from gptuner_core.dashboard import widgets
    from gptuner_core.views.explore import edf_figure
    from gptuner_core.views.explore import parallel_coordinates_figure

    view = st.segmented_control("View", list(TABS), default=TABS[0], key="res_view") or TABS[0]
    if view == "Accuracy vs latency":
        scatter_tab(study, ranked, epsilon=epsilon, metric=metric, winner=winner)
    elif view == "Speedup":
        charts.plotly(views.speedup_figure(ranked), key="res_speedup")
    elif view == "History":
        history_tab(study, snap, ranked)
    elif view == "Knob effect":
        knob_tab(ranked)
    elif view == "Parallel coordinates":
        selection_bar(study)
        chosen = tuple(selected(study))  # built once per revision, ε and selection (it took 4.3 s)
        charts.plotly(data.derived("res_parcoords", study, (epsilon, chosen),
                                   lambda: parallel_coordinates_figure(ranked, selected=chosen)),
                      key="res_parcoords")
    elif view in ("Contour", "Rank", "Slice"):
        knob_views_tab(view, study, ranked, epsilon=epsilon)
    elif view == "Timeline":
        timeline_tab(study, snap)
    elif view == "Latency EDF":
        charts.plotly(edf_figure({study.name: ranked}), key="res_edf")
    elif view == "Importance":
        importance_tab(study)
    elif view == "Table":
        table_tab(study, ranked, metric)
    elif view == "Measurement health":
        health_tab(study, snap)
    else:
        widgets.notes_box(study)


def revalidation_hint(win: dict, best: int) -> str:
    """What to do about ``best``, the fastest eligible route at a changed ε: re-validate it,
    unless the study already did (it was the chosen route or the best contender re-validated)."""
    from gptuner_core.records.study import Winner

    verdict = Winner.from_json(win)
    if not verdict.screening and best in (verdict.number, verdict.best):
        return (f"At this ε the fastest eligible route is #{best}; the study already re-validated "
                "it in fresh processes (see the verdict above).")
    return (f"At this ε the fastest eligible route is #{best}; re-validate it before relying on "
            "it (the stored winner was decided at the configured ε).")
