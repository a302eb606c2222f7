"""gptuner: a build-route tuner for TensorRT's Global Performance Tuner (and friends).

Public API (everything else is internal)::

    from gptuner_core import KnobDatabase, Expression, Route, StudyConfig, Tuner, open_store

    db = KnobDatabase.from_file("knobs.json")            # TensorRT all_build_routes schema
    expr = Expression.parse("-a=[on|off] -b=2", db)       # trtexec's grammar and messages
    expr.count("full"); list(expr.iter_routes("fast"))
    summary = Tuner(StudyConfig(model="m.onnx", expression=str(expr), epsilon=1e-3), "runs/m").run()
    with open_store("runs/m", readonly=True) as store:
        store.candidates()

Heavy libraries (onnxruntime, tensorrt, torch, cuda, optuna, streamlit) are imported only by
the parts that need them, so ``import gptuner_core`` works anywhere.
"""

from __future__ import annotations

from gptuner_core.backends import available_backends
from gptuner_core.backends import get_backend
from gptuner_core.config import StudyConfig
from gptuner_core.engine.loop.tuner import Tuner
from gptuner_core.errors import GptunerError
from gptuner_core.expressions import Expression
from gptuner_core.interop.trtexec_cache import TuningCache
from gptuner_core.interop.trtexec_cache import read_tuning_cache
from gptuner_core.knobs import Knob
from gptuner_core.knobs import KnobDatabase
from gptuner_core.knobs import diff_knob_databases
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.routes import Route
from gptuner_core.storage import open_store
from gptuner_core.strategies import get_strategy


__version__ = "0.1.0"

__all__ = [
    "CandidateRecord",
    "CandidateState",
    "Expression",
    "GptunerError",
    "Knob",
    "KnobDatabase",
    "Route",
    "StudyConfig",
    "Tuner",
    "TuningCache",
    "__version__",
    "available_backends",
    "diff_knob_databases",
    "get_backend",
    "get_strategy",
    "open_store",
    "read_tuning_cache",
]
