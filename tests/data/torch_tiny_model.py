"""A tiny Conv+BN+ReLU+Linear model for the ``torch`` backend's tests (compiles in seconds).

``factory()`` returns ``(module, example_inputs)``: the module in eval mode with fixed seeded
weights and non-trivial BatchNorm statistics, and a batch of 4 inputs ``x`` of shape (4, 1, 6, 6).
"""

from __future__ import annotations

from typing import Any


BATCH = 4


def build_module() -> Any:
    import torch
    from torch import nn

    class TinyConvNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.fc = nn.Linear(4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(self.bn(self.conv(x)))
            return self.fc(y.mean(dim=(2, 3)))

    torch.manual_seed(0)
    module = TinyConvNet().eval()
    with torch.no_grad():
        module.bn.running_mean.uniform_(-0.5, 0.5)
        module.bn.running_var.uniform_(0.5, 1.5)
    return module


def example_input(batch: int = BATCH, seed: int = 1) -> Any:
    import torch

    return torch.randn(batch, 1, 6, 6, generator=torch.Generator().manual_seed(seed))


def factory() -> tuple[Any, tuple[Any, ...]]:
    return build_module(), (example_input(),)
