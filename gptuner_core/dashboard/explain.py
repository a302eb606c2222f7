"""Streamlit renderers for the Explain views; any page (Explain, Compare, Route trace) can call them.

Everything shown is computed in ``gptuner_core.explain`` / ``gptuner_core.profiles`` and turned
into frames by ``gptuner_core.views.explain``; these functions only read (cached by the store's
revision and the profile files' mtimes) and render.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from gptuner_core.dashboard import charts
from gptuner_core.dashboard import state
from gptuner_core.dashboard import tables
from gptuner_core.errors import GptunerError


if TYPE_CHECKING:
    from gptuner_core.explain import Explanation
    from gptuner_core.profiles import LayerDiff
    from gptuner_core.profiles import LayerProfile
    from gptuner_core.records import CandidateRecord


def _mtime(path: Path) -> int:
    return path.stat().st_mtime_ns if path.is_file() else 0


@st.cache_resource(max_entries=64, ttl=3600, show_spinner=False)
def _explanation(path: str, rev: tuple[int, ...], number: int | None, stamps: tuple[int, ...]) -> Explanation:
    from gptuner_core.dashboard import data
    from gptuner_core.explain import explain

    return explain(path, number, facts=data.study_facts(path, rev))


def explanation(study: Path, number: int | None) -> Explanation | None:
    """The cached explanation of candidate ``number`` (``None`` after saying why not)."""
    from gptuner_core.dashboard import data
    from gptuner_core.profiles import profile_path

    try:
        stamps = tuple(_mtime(profile_path(study, n)) for n in (0, number or 0))
        return _explanation(str(study), data.revision(study), number, stamps)
    except GptunerError as exc:
        st.info(f"Nothing to explain yet: {exc}")
        return None


def importance_order(study: Path) -> list[str]:
    """Knob names, most important first, from the cached explanation (Results' Importance tab);
    empty, silently, when there is nothing to explain yet."""
    from gptuner_core.dashboard import data
    from gptuner_core.profiles import profile_path

    try:
        stamp = _mtime(profile_path(study, 0))
        expl = _explanation(str(study), data.revision(study), None, (stamp, stamp))
    except GptunerError:
        return []
    return [i.knob for i in sorted(expl.importance, key=lambda i: -i.importance)]


@st.cache_resource(max_entries=128, ttl=3600, show_spinner=False)
def _profile(path: str, number: int, stamp: int) -> LayerProfile | None:
    from gptuner_core.profiles import load_profile

    return load_profile(path, number)


def profile(study: Path, record: CandidateRecord) -> LayerProfile | None:
    from gptuner_core.explain.study import profiled_number
    from gptuner_core.profiles import profile_path

    n = profiled_number(record)
    return _profile(str(study), n, _mtime(profile_path(study, n)))


def _capture_hint(study: Path, a: CandidateRecord, b: CandidateRecord) -> None:
    st.caption("Per-layer profiles are missing for at least one of these candidates. Capture them "
               "from their artifacts (the tuner will store them itself once profiling is hooked up):")
    st.code(f"gptuner diff {study} {a.number} {b.number} --capture", language="bash", wrap_lines=True)


def render_layer_diff(study: Path, a: CandidateRecord, b: CandidateRecord, *, key: str) -> LayerDiff | None:
    """Summary, bar chart and table of the aligned layer diff of ``a`` against ``b``."""
    from gptuner_core.profiles import diff_profiles
    from gptuner_core.views import explain as ev

    pa, pb = profile(study, a), profile(study, b)
    if pa is None or pb is None:
        from gptuner_core.dashboard import data
        from gptuner_core.explain.study import no_layers_reason

        config = data.snapshot(study).config
        reasons = [r for r in (no_layers_reason(study, c, config) for c in (a, b)) if r]
        if reasons:
            st.info(f"No per-layer diff: {reasons[0]}.")  # one reason is enough (replay: both)
        else:
            _capture_hint(study, a, b)
        return None
    diff = diff_profiles(pa, pb, label_a=f"#{a.number}", label_b=f"#{b.number}",
                         latency_a=a.latency, latency_b=b.latency)
    (st.success if diff.significant else st.info)(diff.summary())
    charts.plotly(ev.layer_diff_figure(diff), key=f"{key}_fig")
    table = ev.layer_diff_table(diff)
    only = st.checkbox("Only groups beyond noise", value=False, key=f"{key}_only")
    tables.table(table[table["cause"] != "within noise"] if only else table)
    for note in diff.notes:
        st.caption(note)
    return diff


def render_profile(study: Path, record: CandidateRecord, *, key: str) -> None:
    """The candidate's own per-layer profile (time share, kinds, precisions, ONNX origins)."""
    from gptuner_core.views import explain as ev

    prof = profile(study, record)
    if prof is None:
        st.caption(f"#{record.number} has no per-layer profile.")
        return
    st.caption(f"{prof.source}; {prof.runs} runs; {len(prof.layers)} layers; "
               f"{prof.total_ms:.4g} ms in layers per inference")
    tables.table(ev.profile_frame(prof))


def render_effects(study: Path, expl: Explanation, *, key: str) -> None:
    """Main effects (failure rate and speed-up with CIs), importance and interactions."""
    from gptuner_core.dashboard import data
    from gptuner_core.views import explain as ev

    if not expl.all_effects:
        st.caption("No knob takes more than one value in this study.")
        return
    # study-wide numbers: the figure and frames are built once per store revision, not per rerun
    fig, effects, importance, interactions = data.derived(
        "explain_effects", study, (), lambda: (
            ev.effects_figure(expl.all_effects), ev.effects_frame(expl.all_effects),
            ev.importance_frame(expl.importance) if expl.importance else None,
            ev.interactions_frame(expl.interactions) if expl.interactions else None))
    charts.plotly(fig, key=f"{key}_forest")
    tables.table(effects)  # wrapped: the grid cut values and pushed columns off-screen
    st.markdown("**Importance** (share of explained log-latency variance; ridge regression, "
                "200 bootstrap resamples)")
    if importance is not None:
        tables.table(importance)
        st.caption(ev.importance_caveat(
            expl.importance, eligible=sum(r.eligible for r in data.snapshot(study).records)))
    else:
        st.caption("Too few eligible candidates (at least 3) to rank knobs.")
    st.markdown("**Pairwise interactions** (pair speed-up / product of the singles; 1.0 = additive)")
    if interactions is not None:
        tables.table(interactions)
    else:
        st.caption("No candidate changes exactly two knobs, so no interaction can be measured.")


def render_triage(expl: Explanation, *, key: str) -> None:
    """Failure clusters with their shared knob values and a button that excludes them."""
    from gptuner_core.views import explain as ev

    if not expl.failures:
        st.caption("No candidate failed.")
        return
    tables.table(ev.failures_frame(expl.failures))
    for i, cluster in enumerate(expl.failures):
        if not cluster.exclude_expression:
            continue
        st.markdown(f"**{cluster.explanation}** ({len(cluster.numbers)} × `{cluster.signature[:80]}`)")
        st.code(cluster.exclude_expression, language="text", wrap_lines=True)
        if st.button("Use this expression in New run", key=f"{key}_use_{i}"):
            state.put(state.EXPRESSION, cluster.exclude_expression)
            st.switch_page("app_pages/2_New_run.py")
