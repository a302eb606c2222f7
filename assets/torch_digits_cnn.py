"""A small CNN for scikit-learn's bundled digits, as a ``torch.compile`` sample model.

Entry point for gptuner's ``torch`` backend: ``assets/torch_digits_cnn.py:factory`` returns
``(module, example_inputs)`` with the trained weights of ``torch_digits_cnn.pt`` (a state_dict
committed beside this file) and a batch of real held-out digits from ``torch_digits_eval.npz``
as the example input. The forward argument is ``x`` (float32, ``(batch, 1, 16, 16)``), which is
also the input name in the evaluation set (``x`` + ``labels``). Regenerate everything with
``scripts/make_torch_sample.py``.

This file imports only torch and numpy, so it runs on a machine with no scikit-learn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


HERE = Path(__file__).resolve().parent
WEIGHTS = HERE / "torch_digits_cnn.pt"
EVAL_SET = HERE / "torch_digits_eval.npz"
SIDE = 16
EXAMPLE_BATCH = 32


def build_module() -> Any:
    """The untrained network (three Conv+BN+ReLU blocks, global average pool, two Linear)."""
    import torch
    from torch import nn

    class DigitsCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 32, 3, padding=1, bias=False),
                nn.BatchNorm2d(32),
                nn.ReLU(),
                nn.Conv2d(32, 64, 3, padding=1, bias=False),
                nn.BatchNorm2d(64),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(64, 64, 3, padding=1, bias=False),
                nn.BatchNorm2d(64),
                nn.ReLU(),
                nn.AdaptiveAvgPool2d(1),
            )
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(self.features(x))

    return DigitsCNN()


def factory(batch_size: int = EXAMPLE_BATCH) -> tuple[Any, tuple[Any, ...]]:
    """The trained model in eval mode and ``batch_size`` held-out digits as example inputs."""
    import numpy as np
    import torch

    module = build_module()
    state = torch.load(WEIGHTS, map_location="cpu", weights_only=True)
    module.load_state_dict(state)
    module.eval()
    with np.load(EVAL_SET) as data:
        x = np.ascontiguousarray(data["x"][:batch_size])
    return module, (torch.from_numpy(x),)


def factory_batch1() -> tuple[Any, tuple[Any, ...]]:
    """As :func:`factory` with a batch of one (latency-bound: launch overhead dominates)."""
    return factory(1)
