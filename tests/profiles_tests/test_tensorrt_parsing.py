"""TensorRT profiles from trtexec ``--exportProfile`` + ``--exportLayerInfo`` files.

Only the parsing can run here (no GPU): the fixtures in ``data/`` were written by hand to follow
the documented schemas (trtexec's profile list starting with ``{"count": N}``; the engine
inspector's DETAILED JSON with ``Metadata`` holding ``[ONNX Layer: ...]`` entries separated by
``\\x1e``). The ``IProfiler`` path (:func:`gptuner_core.profiles.tensorrt.profile`) needs the real
bindings and an engine; it is written against the documented API and runs on the lent GPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gptuner_core.errors import ProfileError
from gptuner_core.profiles import diff_profiles
from gptuner_core.profiles.tensorrt import combine
from gptuner_core.profiles.tensorrt import from_trtexec
from gptuner_core.profiles.tensorrt import layer_origins
from gptuner_core.profiles.tensorrt import parse_trtexec_profile

from .conftest import CNN


DATA = Path(__file__).parent / "data"


def _load(prec: str):  # noqa: ANN202
    return from_trtexec(DATA / f"trt_{prec}.profile.json", DATA / f"trt_{prec}.layers.json", model=CNN)


class TestTrtexecFiles:
    def test_profile_and_layer_info_join_into_one_schema(self):
        prof = _load("int8")
        assert prof.backend == "tensorrt" and prof.runs == 500
        conv = next(la for la in prof.layers if la.name == "/c2/conv/Conv + /c2/act/Relu")
        assert conv.kind == "CaskConvolution" and conv.precision == "INT8"
        assert conv.origins == ("/c2/conv/Conv", "/c2/act/Relu") and conv.fused
        assert conv.detail.startswith("sm90_xmma_fprop") and abs(conv.time_ms - 0.14) < 1e-12
        assert any("no noise level" in n for n in prof.notes)

    def test_layer_without_metadata_resolves_its_fused_name(self):
        prof = _load("fp16")
        gemm = next(la for la in prof.layers if la.kind == "CaskGemmConvolution")
        assert gemm.origins == ("/fc1/Gemm", "/act/Relu") and gemm.precision == "FP16"

    def test_reformat_layer_has_no_origin(self):
        assert layer_origins("Reformatting CopyNode for Input Tensor 0 to x", "", None) == ()

    def test_int8_vs_fp16_diff_names_the_convolutions(self):
        diff = diff_profiles(_load("fp16"), _load("int8"), label_a="fp16", label_b="int8")
        top = diff.rows[0]
        assert top.group == "/c2/conv/Conv (+1)" and top.changes == ("precision FP16 -> INT8",)
        assert abs(diff.delta_ms - (0.48 - 0.271)) < 1e-9
        assert "no noise level" in " ".join(diff.notes)

    def test_iprofiler_runs_become_per_run_times(self):
        """What :func:`profile` collects (name -> ms per run) keeps the runs, so noise is known."""
        prof = combine({"/c1/conv/Conv + /c1/act/Relu": [0.1, 0.12, 0.11]}, None, source="IProfiler", runs=3)
        assert prof.layers[0].run_ms == (0.1, 0.12, 0.11)
        assert prof.layers[0].origins == ("/c1/conv/Conv", "/c1/act/Relu")


class TestBadFiles:
    def test_not_json(self):
        with pytest.raises(ProfileError, match=r"trtexec profile: not valid JSON"):
            parse_trtexec_profile("{oops")

    def test_missing_count_header(self):
        with pytest.raises(ProfileError, match=r"expected a JSON list starting with \{\"count\": N\}"):
            parse_trtexec_profile('[{"name": "x", "timeMs": 1}]')
