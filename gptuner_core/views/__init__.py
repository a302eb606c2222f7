"""Pure functions from study records to DataFrames and plotly figures for the dashboard.

Nothing here imports streamlit; pandas and plotly are imported inside functions, so
``import gptuner_core.views`` stays cheap. Pages call these and only render the results.
"""

from __future__ import annotations

from gptuner_core.views._frames import ACCURACY_FAILED
from gptuner_core.views._frames import CATEGORIES
from gptuner_core.views._frames import ELIGIBLE
from gptuner_core.views._frames import FAILED
from gptuner_core.views._frames import NOT_MEASURED
from gptuner_core.views._frames import PENDING
from gptuner_core.views._frames import apply_epsilon
from gptuner_core.views._frames import best_so_far
from gptuner_core.views._frames import candidates_frame
from gptuner_core.views._frames import filter_frame
from gptuner_core.views._frames import knob_columns
from gptuner_core.views._frames import pareto_mask
from gptuner_core.views._frames import route_pairs
from gptuner_core.views._frames import to_csv
from gptuner_core.views._frames import winner
from gptuner_core.views.figures import history_figure
from gptuner_core.views.figures import overlaid_samples_figure
from gptuner_core.views.figures import samples_histogram
from gptuner_core.views.figures import speedup_figure
from gptuner_core.views.health import drift_figure
from gptuner_core.views.health import drift_frame
from gptuner_core.views.health import normalized_frame
from gptuner_core.views.knobs import diff_frame
from gptuner_core.views.knobs import expression_text
from gptuner_core.views.knobs import knob_frame
from gptuner_core.views.knobs import route_counts
from gptuner_core.views.knobs import search_knobs
from gptuner_core.views.scatter import accuracy_latency_figure
from gptuner_core.views.scatter import knob_effect_figure
from gptuner_core.views.studies import STUDY_GRID
from gptuner_core.views.studies import UNFINISHED
from gptuner_core.views.studies import LiveProgress
from gptuner_core.views.studies import StudySummary
from gptuner_core.views.studies import effective_status
from gptuner_core.views.studies import landed
from gptuner_core.views.studies import live_progress
from gptuner_core.views.studies import recent_failures
from gptuner_core.views.studies import revalidation_progress
from gptuner_core.views.studies import stale_reasons
from gptuner_core.views.studies import studies_frame
from gptuner_core.views.studies import study_notes
from gptuner_core.views.studies import study_summary
from gptuner_core.views.trace import accuracy_frame
from gptuner_core.views.trace import layer_diff_frame
from gptuner_core.views.trace import layers_frame
from gptuner_core.views.trace import repro_commands
from gptuner_core.views.trace import route_diff_frame
from gptuner_core.views.trace import trace_fields


__all__ = [
    "ACCURACY_FAILED",
    "CATEGORIES",
    "ELIGIBLE",
    "FAILED",
    "NOT_MEASURED",
    "PENDING",
    "UNFINISHED",
    "LiveProgress",
    "StudySummary",
    "accuracy_frame",
    "drift_figure",
    "drift_frame",
    "normalized_frame",
    "accuracy_latency_figure",
    "apply_epsilon",
    "best_so_far",
    "candidates_frame",
    "diff_frame",
    "effective_status",
    "expression_text",
    "filter_frame",
    "history_figure",
    "knob_columns",
    "knob_effect_figure",
    "knob_frame",
    "layer_diff_frame",
    "layers_frame",
    "landed",
    "live_progress",
    "overlaid_samples_figure",
    "pareto_mask",
    "recent_failures",
    "revalidation_progress",
    "repro_commands",
    "route_counts",
    "route_diff_frame",
    "route_pairs",
    "samples_histogram",
    "search_knobs",
    "stale_reasons",
    "studies_frame",
    "study_notes",
    "STUDY_GRID",
    "study_summary",
    "speedup_figure",
    "to_csv",
    "trace_fields",
    "winner",
]
