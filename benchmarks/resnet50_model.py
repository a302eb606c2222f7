"""ResNet-50 (torchvision, random weights: no download) at batch 32, for the torch backend.

``factory`` returns ``(module, example_input)``; ``write_dataset(path)`` writes the matching
``.npz`` (one input ``x`` of 32 seeded random images) for ``gptuner tune --dataset``.
"""

from __future__ import annotations

import torch
import torchvision  # imported by the fork server once (its factory is not called there)


BATCH = 32


def factory():
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).eval()
    return model, torch.randn(BATCH, 3, 224, 224, generator=torch.Generator().manual_seed(1))


def write_dataset(path: str) -> str:
    import numpy as np

    x = np.random.default_rng(1).standard_normal((BATCH, 3, 224, 224), dtype=np.float32)
    np.savez(path, x=x)
    return path
