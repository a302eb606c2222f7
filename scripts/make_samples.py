"""Regenerate the bundled sample models in ``assets/`` deterministically.

Both models are trained on scikit-learn's bundled ``load_digits`` data set (1797 8x8 handwritten
digits shipped inside the scikit-learn wheel; nothing is downloaded):

* ``cnn_digits.onnx``: the digits bilinearly upscaled to 1x32x32, four Conv+BN+ReLU blocks and two
  Gemm layers (BN is folded into the convolutions by the exporter).
* ``mlp_digits.onnx``: the 64 raw pixel features, a 64-512-512-256-10 MLP (four Gemm layers).

Each model comes with ``<name>_eval.npz`` (1000 rows: the 719 held-out digits, then 281 jittered
copies of held-out digits (rotation, scale, shift, noise) so small accuracy losses show; ``input`` +
``labels``) and
``<name>_calib.npz`` (64 training rows: ``input``) for post-training quantization.
Inputs have a dynamic batch dimension (``batch``); the output is ``logits``.

Training is deterministic: fixed seeds, one thread, deterministic algorithms. It needs torch
(only to train and export) and scikit-learn. Run::

    .venv/bin/python scripts/make_samples.py            # writes assets/
    .venv/bin/python scripts/make_samples.py --out DIR  # somewhere else
"""

from __future__ import annotations

import argparse
import hashlib
import time
import warnings
from pathlib import Path

import numpy as np


SEED = 0
TEST_FRACTION = 0.4  # 719 of 1797 rows held out
EVAL_ROWS = 1000  # the 719 clean held-out rows + 281 jittered copies of held-out rows
CALIB_ROWS = 64
SIDE = 32  # CNN input side after upscaling


def load_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits as float32 in [0, 1], shape (n, 8, 8); a stratified, seeded split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(
        images, labels, test_size=TEST_FRACTION, random_state=SEED, stratify=labels
    )
    return x_tr, x_te, y_tr, y_te


def upscale(images: np.ndarray) -> np.ndarray:
    """(n, 8, 8) -> (n, 1, SIDE, SIDE) with bilinear interpolation (torch, deterministic)."""
    import torch
    import torch.nn.functional as F

    t = torch.from_numpy(images[:, None, :, :])
    out = F.interpolate(t, size=(SIDE, SIDE), mode="bilinear", align_corners=False)
    return out.numpy().astype(np.float32)


def build_cnn():  # noqa: ANN201 - torch types are imported lazily
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, pool: bool) -> None:
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(cout)
            self.act = nn.ReLU()
            self.pool = nn.MaxPool2d(2) if pool else nn.Identity()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.pool(self.act(self.bn(self.conv(x))))

    class Cnn(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1 = Block(1, 16, pool=False)  # 32x32
            self.c2 = Block(16, 32, pool=True)  # -> 16x16
            self.c3 = Block(32, 32, pool=True)  # -> 8x8
            self.c4 = Block(32, 64, pool=True)  # -> 4x4
            self.fc1 = nn.Linear(64 * 4 * 4, 128)
            self.act = nn.ReLU()
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.c4(self.c3(self.c2(self.c1(x))))
            return self.fc2(self.act(self.fc1(torch.flatten(x, 1))))

    return Cnn()


def build_mlp():  # noqa: ANN201
    from torch import nn

    class Mlp(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(64, 512),
                nn.ReLU(),
                nn.Linear(512, 512),
                nn.ReLU(),
                nn.Linear(512, 256),
                nn.ReLU(),
                nn.Linear(256, 10),
            )

        def forward(self, x):  # noqa: ANN001, ANN202
            return self.net(x)

    return Mlp()


def augment(x, gen, *, image: bool):  # noqa: ANN001, ANN202
    """Random small affine jitter (images) or pixel noise (both), from a seeded generator."""
    import torch
    import torch.nn.functional as F

    n = x.shape[0]
    if image:
        angle = (torch.rand(n, generator=gen) - 0.5) * 0.4  # +-0.2 rad
        scale = 1.0 + (torch.rand(n, generator=gen) - 0.5) * 0.2  # +-10 %
        shift = (torch.rand(n, 2, generator=gen) - 0.5) * 0.2
        cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
        theta = torch.stack(
            [torch.stack([cos, -sin, shift[:, 0]], 1), torch.stack([sin, cos, shift[:, 1]], 1)], 1
        )
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        x = F.grid_sample(x, grid, align_corners=False, padding_mode="zeros")
    return (x + torch.randn(x.shape, generator=gen) * 0.05).clamp(0.0, 1.0)


def jittered_eval(x_te: np.ndarray, y_te: np.ndarray, *, image: bool):  # noqa: ANN201
    """Held-out rows followed by jittered copies of the first held-out rows (seeded).

    MLP rows are jittered in 8x8 image space, then flattened again.
    """
    import torch

    extra = EVAL_ROWS - len(x_te)
    gen = torch.Generator().manual_seed(SEED + 1)
    src = x_te[:extra] if image else x_te[:extra].reshape(-1, 1, 8, 8)
    jit = augment(torch.from_numpy(src), gen, image=True).numpy().reshape(src.shape)
    if not image:
        jit = jit.reshape(extra, 64)
    return np.concatenate([x_te, jit]).astype(np.float32), np.concatenate([y_te, y_te[:extra]])


def train(model, x_tr, y_tr, *, epochs: int, image: bool, lr: float):  # noqa: ANN001, ANN201
    import torch

    gen = torch.Generator().manual_seed(SEED)
    xt, yt = torch.from_numpy(x_tr), torch.from_numpy(y_tr)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(xt.shape[0], generator=gen)
        for i in range(0, xt.shape[0], 64):
            idx = perm[i : i + 64]
            xb = augment(xt[idx], gen, image=image)
            opt.zero_grad()
            loss_fn(model(xb), yt[idx]).backward()
            opt.step()
        sched.step()
    model.eval()
    return model


def export(model, example: np.ndarray, path: Path) -> None:  # noqa: ANN001
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.from_numpy(example),),
            str(path),
            input_names=["input"],
            output_names=["logits"],
            dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )


def top1(model, x: np.ndarray, y: np.ndarray) -> float:  # noqa: ANN001
    import torch

    with torch.no_grad():
        pred = model(torch.from_numpy(x)).argmax(1).numpy()
    return float((pred == y).mean())


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "assets")
    args = parser.parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    x_tr, x_te, y_tr, y_te = load_split()
    calib_idx = np.random.default_rng(SEED).choice(len(x_tr), CALIB_ROWS, replace=False)
    calib_idx.sort()

    jobs = {
        "cnn_digits": (build_cnn, upscale(x_tr), upscale(x_te), True, 14, 2e-3),
        "mlp_digits": (build_mlp, x_tr.reshape(-1, 64), x_te.reshape(-1, 64), False, 40, 1e-3),
    }
    for name, (factory, xtr, xte, image, epochs, lr) in jobs.items():
        t0 = time.perf_counter()
        torch.manual_seed(SEED)
        model = train(factory(), xtr, y_tr, epochs=epochs, image=image, lr=lr)
        xev, yev = jittered_eval(xte, y_te, image=image)
        acc = top1(model, xev, yev)
        onnx_path = out / f"{name}.onnx"
        export(model, xte[:1], onnx_path)
        np.savez_compressed(out / f"{name}_eval.npz", input=xev, labels=yev)
        np.savez_compressed(out / f"{name}_calib.npz", input=xtr[calib_idx])
        sha = hashlib.sha256(onnx_path.read_bytes()).hexdigest()[:16]
        print(
            f"{name}: torch top-1 {acc:.4f} on {len(yev)} eval rows, "
            f"{onnx_path.stat().st_size / 1e6:.2f} MB, sha256 {sha}, {time.perf_counter() - t0:.1f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
