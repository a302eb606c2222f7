"""Kernels -> modules of the bundled torch sample, over Dynamo's real graph of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptuner_core.profiles.torch_modules import family
from gptuner_core.profiles.torch_modules import trace_table


torch = pytest.importorskip("torch")

SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "torch_digits_cnn.py"


@pytest.fixture(scope="module")
def table():
    import importlib.util

    spec = importlib.util.spec_from_file_location("torch_digits_cnn_modules", SAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    module, inputs = mod.factory(4)
    return trace_table(module, inputs)


def test_the_table_names_every_module_of_the_sample_in_graph_order(table):
    assert list(table.ops.items())[:4] == [("features.0", "Conv2d"), ("features.1", "BatchNorm2d"),
                                           ("features.2", "ReLU"), ("features.3", "Conv2d")]
    assert table.ops["head.3"] == "Linear" and len(table.ops) == 15


# The source-node lists are what Inductor (torch 2.13, CPU) wrote before each extern kernel call
# of the sample: Dynamo's node names, the neighbours fused into an input buffer included.
@pytest.mark.parametrize(("kernel", "listed", "modules"), [
    ("aten::convolution", ("input_1",), ("features.0",)),
    ("aten::convolution", ("input_2", "input_3", "input_4"), ("features.3",)),
    ("aten::addmm", ("input_9", "input_10", "input_11", "input_12", "input_13"), ("head.1",)),
    ("aten::addmm", ("input_14", "input_15"), ("head.3",)),
    # freezing: oneDNN's Conv+ReLU is listed by its ReLU alone; the walk finds the Conv
    ("mkldnn::_convolution_pointwise", ("input_3",), ("features.0", "features.1", "features.2")),
    ("mkldnn::_convolution_pointwise", ("input_7", "input_10"), ("features.7", "features.8", "features.9")),
    ("mkl::_mkl_linear", ("input_11", "input_12", "input_13", "input_14", "input_15"), ("head.3",)),
    ("aten::max_pool2d_with_indices", ("input_7",), ("features.6",)),
    ("aten::convolution", ("no_such_node",), ()),
])
def test_each_kernel_resolves_to_the_module_it_computes(table, kernel, listed, modules):
    assert table.resolve(kernel, listed) == modules


def test_kernel_families():
    assert {family(k) for k in ("aten::convolution", "mkldnn::_convolution_pointwise", "conv2d")} == {"conv"}
    assert {family(k) for k in ("aten::addmm", "mkl::_mkl_linear", "linear", "aten::mm")} == {"linear"}
    assert family("aten::relu") == "relu"
