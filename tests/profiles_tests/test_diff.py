"""The aligned diff on hand-made profiles: grouping by origin, noise gating, ordering, labels."""

from __future__ import annotations

from gptuner_core.profiles import LayerProfile
from gptuner_core.profiles import LayerTime
from gptuner_core.profiles import diff_profiles


OPS = {"conv": "Conv", "relu": "Relu", "pool": "MaxPool", "fc": "Gemm"}


def _layer(name: str, kind: str, times: list[float], origins: tuple[str, ...], precision: str = "FP32") -> LayerTime:
    return LayerTime(name=name, kind=kind, precision=precision, time_ms=sum(times) / len(times),
                     run_ms=tuple(times), origins=origins)


def _profile(*layers: LayerTime) -> LayerProfile:
    return LayerProfile(backend="onnxruntime", source="test", runs=len(layers[0].run_ms),
                        layers=layers, origin_ops=OPS)


A = _profile(
    _layer("conv_relu_nchwc", "Conv", [4.0, 4.1, 3.9, 4.0, 4.2, 3.8, 4.0, 4.1], ("conv", "relu")),
    _layer("pool", "MaxPool", [1.0, 1.2, 0.8, 1.0, 1.3, 0.7, 1.1, 0.9], ("pool",)),
    _layer("fc", "Gemm", [0.5] * 8, ("fc",)),
)
B = _profile(
    _layer("conv_quant", "QLinearConv", [1.0, 1.1, 0.9, 1.0, 1.0, 1.1, 0.9, 1.0], ("conv",), "INT8"),
    _layer("conv_dq", "DequantizeLinear", [0.2] * 8, ("conv",), "INT8"),
    _layer("relu_q", "QuantizeLinear", [0.1] * 8, ("relu",)),
    _layer("pool", "MaxPool", [1.1, 0.9, 1.2, 0.8, 1.0, 1.3, 0.7, 1.0], ("pool",)),
    _layer("fc", "Gemm", [0.6] * 8, ("fc",)),
    _layer("extra", "Transpose", [0.05] * 8, ()),
)


class TestAlignedDiff:
    def test_layers_sharing_an_origin_form_one_group(self):
        """Fused Conv+Relu in A lines up with QLinearConv + DQ + Q in B."""
        diff = diff_profiles(A, B, label_a="#0", label_b="#3")
        conv = diff.rows[0]
        assert conv.group == "conv (+1)" and conv.op == "Conv"
        assert conv.a_layers == ("conv_relu_nchwc",)
        assert conv.b_layers == ("conv_quant", "conv_dq", "relu_q")
        assert conv.a_precision == "FP32" and conv.b_precision == "INT8"
        assert "kernel Conv -> QLinearConv+DequantizeLinear+QuantizeLinear" in conv.changes
        assert "fusion split (1 -> 3 layers)" in conv.changes
        assert conv.significant and diff.sources() == (conv,)

    def test_within_noise_is_flagged_and_never_a_source(self):
        """The MaxPool group moves by less than its run-to-run noise."""
        diff = diff_profiles(A, B)
        pool = next(r for r in diff.rows if r.group == "pool")
        assert not pool.significant and pool not in diff.sources()

    def test_rows_sorted_by_contribution_and_contributions_sum_to_one(self):
        diff = diff_profiles(A, B)
        deltas = [r.delta_ms for r in diff.rows]
        assert deltas == sorted(deltas, reverse=True)
        assert abs(sum(r.contribution for r in diff.rows) - 1.0) < 1e-9
        assert diff.rows[-1].delta_ms < 0  # the slower Gemm / extra Transpose work against it

    def test_layer_without_origin_is_matched_by_name_and_marked_only_in_b(self):
        diff = diff_profiles(A, B)
        extra = next(r for r in diff.rows if r.group == "extra")
        assert extra.changes == ("only in B",) and extra.a_ms == 0.0

    def test_reversed_diff_mirrors_the_sign(self):
        fwd, back = diff_profiles(A, B), diff_profiles(B, A)
        assert abs(fwd.delta_ms + back.delta_ms) < 1e-9
        assert back.sources()[0].group == "conv (+1)" and back.sources()[0].delta_ms < 0
