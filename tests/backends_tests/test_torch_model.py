"""The torch backend's model input (``backends.torch_inductor.model``): the example at the study's
batch. Nothing is compiled here."""

from __future__ import annotations

import pytest


torch = pytest.importorskip("torch")


def test_at_batch_cuts_or_repeats_the_examples_rows_where_the_inputs_share_a_batch():
    from gptuner_core.backends.torch_inductor.model import LoadedModel
    from gptuner_core.backends.torch_inductor.model import at_batch

    x, y = torch.arange(6.0).reshape(3, 2), torch.arange(3)
    loaded = LoadedModel(module=None, example_inputs=(x, y), input_names=("x", "y"), source="m.py", kind="factory")
    assert loaded.batch == 3
    cut = at_batch(loaded, 2)
    assert [t.shape[0] for t in cut.example_inputs] == [2, 2] and cut.batch == 2
    grown = at_batch(loaded, 7)
    assert grown.example_inputs[1].tolist() == [0, 1, 2, 0, 1, 2, 0]  # the example's rows again
    assert at_batch(loaded, None) is loaded and at_batch(loaded, 3) is loaded
    apart = LoadedModel(module=None, example_inputs=(x, torch.arange(4)), input_names=("x", "y"),
                        source="m.py", kind="factory")
    assert apart.batch is None and at_batch(apart, 8) is apart  # no shared batch dimension
    fixed = LoadedModel(module=None, example_inputs=(x,), input_names=("x",), source="m.pt2",
                        kind="exported", dims=((3, 2),))
    assert at_batch(fixed, 8) is fixed  # an exported program's fixed first dimension stays
