"""torchvision models with random weights (no download), for the torch backend on a GPU.

Each ``NAME`` below is a factory ``gptuner tune benchmarks/torchvision_models.py:NAME`` takes:
it returns ``(module, example_input)`` at the batch of :data:`MODELS`. ``write_dataset(path,
name)`` writes the matching ``.npz`` (one input ``x`` of seeded random images). Three families:
a residual CNN (ResNet-50), a modern CNN (ConvNeXt-Tiny) and a transformer (ViT-B/16).
"""

from __future__ import annotations

import torch
import torchvision  # imported by the fork server once (its factory is not called there)


#: name -> (torchvision constructor, batch)
MODELS = {"resnet50": ("resnet50", 32), "convnext_tiny": ("convnext_tiny", 16),
          "vit_b_16": ("vit_b_16", 8)}


def _factory(name: str):
    ctor, batch = MODELS[name]
    torch.manual_seed(0)
    model = getattr(torchvision.models, ctor)(weights=None).eval()
    return model, torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(1))


def resnet50():
    return _factory("resnet50")


def convnext_tiny():
    return _factory("convnext_tiny")


def vit_b_16():
    return _factory("vit_b_16")


def write_dataset(path: str, name: str) -> str:
    import numpy as np

    x = np.random.default_rng(1).standard_normal((MODELS[name][1], 3, 224, 224), dtype=np.float32)
    np.savez(path, x=x)
    return path
