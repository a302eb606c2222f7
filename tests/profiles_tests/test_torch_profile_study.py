"""A real study of the bundled torch sample on the CPU, profiled: two routes that really differ.

``gptuner tune assets/torch_digits_cnn.py:factory --backend torch`` (device cpu) over
``-inductor:freezing=[off|on]``: the cheapest pair of real routes whose kernels differ (freezing
folds each BatchNorm into its Conv's weights and runs oneDNN's fused Conv+ReLU and MKL's linear
instead of ATen's convolution/addmm). Each candidate's profile is captured by the engine after its
latency samples; the test reads both back, checks that every kernel maps to the module of the
sample it computes, and diffs them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gptuner_core.cli import main
from gptuner_core.profiles import diff_profiles
from gptuner_core.profiles import load_profile
from gptuner_core.storage import open_store


torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "assets" / "torch_digits_cnn.py"
QUICK = {"warmup_s": 0.01, "warmup_calls": 2, "min_samples": 10, "max_samples": 40, "max_time_s": 0.3}
RUNS = 12
#: the sample's modules that run as extern kernels (the rest is Inductor's generated C++)
CONVS = ("features.0", "features.3", "features.7")
LINEARS = ("head.1", "head.3")


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("torch_study") / "study"
    args = ["tune", f"{SAMPLE}:factory", "--backend", "torch", "--backend-option", "device=cpu",
            "--backend-option", "compile_threads=1", "--backend-option", "threads=1",
            "--dataset", str(REPO / "assets" / "torch_digits_eval.npz"), "--batch-size", "32",
            "--expr", "-inductor:freezing=[off|on]", "--metric", "cos", "--epsilon", "0.01", "--revalidate-top-k", "0", "--drift-every", "0",
            "--study", str(folder), "--quiet", "--profile-runs", str(RUNS),
            *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]]
    assert main(args) == 0
    return folder


@pytest.fixture(scope="module")
def profiles(study: Path) -> dict[str, object]:
    with open_store(study, readonly=True) as store:
        recs = {r.requested_route: r for r in store.candidates(with_samples=True)}
    assert set(recs) == {"-inductor:freezing=off", "-inductor:freezing=on"}, list(recs)
    return {route.rsplit("=", 1)[1]: (rec, load_profile(study, rec.number)) for route, rec in recs.items()}


def sample_modules() -> dict[str, str]:
    """Module path -> class name of the bundled sample, read from the module itself."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("torch_digits_cnn_sample", SAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {name: type(m).__name__ for name, m in mod.build_module().named_modules() if name}


class TestStoredProfiles:
    def test_each_route_stores_its_profile_beside_the_measured_samples(self, profiles):
        """The engine measured first, then profiled: the stored samples are the measured ones."""
        for rec, prof in profiles.values():
            assert rec.state.value == "COMPLETE", rec.error
            info = rec.extra["profile"]
            assert not info["error"] and info["path"] and info["seconds"] > 0, info
            assert prof is not None and prof.backend == "torch" and prof.runs == RUNS
            assert 1 <= len(rec.samples_ms) <= QUICK["max_samples"]  # how many under the time cap: the load's
            assert rec.latency.n_samples == len(rec.samples_ms)
            assert all(len(la.run_ms) == RUNS and la.time_ms >= 0 for la in prof.layers)
            assert abs(sum(prof.share(la) for la in prof.layers) - 1.0) < 1e-9
            assert prof.wall_ms and prof.wall_ms > 0

    def test_every_extern_kernel_maps_to_the_sample_module_it_computes(self, profiles):
        modules = sample_modules()
        for key, (_, prof) in profiles.items():
            assert {o: t for o, t in prof.origin_ops.items()} == {o: modules[o] for o in prof.origin_ops}
            extern = [la for la in prof.layers if la.origins]
            anchors = [la.origins[0] for la in extern]
            assert anchors == list(CONVS + LINEARS), (key, [(la.name, la.origins) for la in extern])
            for la in extern:
                assert modules[la.origins[0]] in ("Conv2d", "Linear") and la.precision == "FP32"
            generated = [la for la in prof.layers if not la.origins]
            assert len(generated) == 1 and generated[0].kind == "inductor generated", generated
            assert generated[0].kernels and all(k.startswith("cpp_fused") for k in generated[0].kernels)
        off = {la.origins[0]: la for la in profiles["off"][1].layers if la.origins}
        assert {off[c].kind for c in CONVS} == {"aten::convolution"} and all(len(off[c].origins) == 1 for c in CONVS)
        assert {off[m].kind for m in LINEARS} == {"aten::addmm"}
        on = {la.origins[0]: la for la in profiles["on"][1].layers if la.origins}
        for conv in CONVS:  # the frozen Conv absorbed its BatchNorm (folded) and ReLU
            assert on[conv].kind != "aten::convolution" and len(on[conv].origins) == 3, on[conv]
            assert [modules[o] for o in on[conv].origins] == ["Conv2d", "BatchNorm2d", "ReLU"]


class TestDiff:
    def test_the_diff_aligns_every_module_and_names_the_kernels_freezing_changed(self, profiles):
        a, b = profiles["off"][1], profiles["on"][1]
        diff = diff_profiles(a, b, label_a="#0", label_b="#1")
        rows = {r.group: r for r in diff.rows}
        assert set(rows) == {f"{c} (+2)" for c in CONVS} | set(LINEARS) | {"inductor generated kernels"}, \
            [(r.group, r.a_layers, r.b_layers) for r in diff.rows]
        assert all(r.a_layers and r.b_layers for r in diff.rows), "no module is only in one route"
        for conv in CONVS:
            row = rows[f"{conv} (+2)"]
            assert row.op == "Conv2d" and row.a_kinds == ("aten::convolution",)
            assert f"kernel aten::convolution -> {row.b_kinds[0]}" in row.changes
            assert any(c.startswith("fused") for c in row.changes), row.changes
        assert all(rows[m].op == "Linear" and rows[m].changes for m in LINEARS)
        assert any(c.startswith("generated kernels ") for c in rows["inductor generated kernels"].changes)
        assert abs(sum(r.a_ms for r in diff.rows) - diff.total_a_ms) < 1e-9
        assert abs(sum(r.b_ms for r in diff.rows) - diff.total_b_ms) < 1e-9
        # freezing changes every layer, so whatever the direction on this CPU, each source is a
        # layer whose kernels changed
        assert all(r.changes for r in diff.sources()), diff.summary()
        assert "only in" not in " ".join(c for r in diff.rows for c in r.changes)

    def test_a_route_against_itself_has_no_source(self, profiles):
        same = diff_profiles(profiles["on"][1], profiles["on"][1])
        assert same.delta_ms == 0 and not same.significant and not same.sources()

    def test_diff_and_explain_commands_render_the_torch_profiles(self, study, capsys):
        assert main(["diff", str(study), "0", "1"]) == 0
        out = capsys.readouterr().out
        assert "features.0 (+2)" in out and "kernel aten::convolution -> " in out
        assert main(["explain", str(study), "1"]) == 0
        out = capsys.readouterr().out
        assert "layer diff #0 -> #1" in out and "head.3" in out


def test_explain_page_renders_the_torch_layer_diff(study, monkeypatch):
    """The dashboard's Explain page shows the aligned torch diff and #1's own profile."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("GPTUNER_WORKSPACE", str(study.parent))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    at.switch_page("app_pages/7_Explain.py").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert "Per-layer diff #0 → #1" in [s.value for s in at.subheader]
    # static tables since issue 39 item 7, their headers with spaces for underscores
    frames = [df.value.rename(columns=lambda c: str(c).replace(" ", "_"))
              for df in [*at.dataframe, *at.table]]
    diff = next(f for f in frames if "delta_ms" in f.columns)
    groups = set(diff.iloc[:, 0])
    assert {f"{c} (+2)" for c in CONVS} | set(LINEARS) <= groups, groups
    prof = next(f for f in frames if "share" in f.columns and "kind" in f.columns)
    assert "features.0, features.1, features.2" in set(prof["onnx_origin"]), prof
