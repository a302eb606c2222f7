"""Regenerate the ``torch`` backend's sample model in ``assets/`` deterministically.

Trains ``assets/torch_digits_cnn.py``'s CNN on scikit-learn's bundled ``load_digits`` (1797 8x8
handwritten digits shipped inside the scikit-learn wheel; nothing is downloaded), bilinearly
upscaled to 1x16x16, and writes:

* ``assets/torch_digits_cnn.pt``: the trained ``state_dict`` (``torch.save``; loaded with
  ``weights_only=True``);
* ``assets/torch_digits_eval.npz``: the 719 held-out digits as ``x`` (float32, ``(719, 1, 16, 16)``,
  named like the model's forward argument) and ``labels`` (int64 class ids).

Deterministic: fixed seeds, one thread, deterministic algorithms; the same torch build on the same
CPU gives byte-identical files (the script prints their SHA-256). It needs torch and scikit-learn
and takes a few seconds::

    .venv/bin/python scripts/make_torch_sample.py            # writes assets/
    .venv/bin/python scripts/make_torch_sample.py --out DIR  # somewhere else
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import time
from pathlib import Path

import numpy as np
from make_samples import load_split  # the same seeded digits split as the ONNX samples


SEED = 0
SIDE = 16
EPOCHS = 12
BATCH = 64
LR = 3e-3
ASSETS = Path(__file__).resolve().parent.parent / "assets"


def upscale(images: np.ndarray) -> np.ndarray:
    """(n, 8, 8) -> (n, 1, SIDE, SIDE), bilinear, normalized to zero mean and unit variance."""
    import torch
    import torch.nn.functional as F

    t = torch.from_numpy(images[:, None, :, :])
    up = F.interpolate(t, size=(SIDE, SIDE), mode="bilinear", align_corners=False)
    return ((up - 0.3) / 0.4).numpy().astype(np.float32)


def sample_module():  # noqa: ANN201 - the torch module, imported lazily
    spec = importlib.util.spec_from_file_location("torch_digits_cnn", ASSETS / "torch_digits_cnn.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def train(x_tr: np.ndarray, y_tr: np.ndarray):  # noqa: ANN201
    import torch
    import torch.nn.functional as F

    torch.manual_seed(SEED)
    model = sample_module().build_module()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    x = torch.from_numpy(x_tr)
    y = torch.from_numpy(y_tr)
    gen = torch.Generator().manual_seed(SEED)
    for _ in range(EPOCHS):
        model.train()
        order = torch.randperm(len(x), generator=gen)
        for start in range(0, len(x), BATCH):
            idx = order[start : start + BATCH]
            opt.zero_grad()
            loss = F.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
        sched.step()
    return model.eval()


def state_dict_bytes(model) -> bytes:  # noqa: ANN001
    import torch

    buf = io.BytesIO()
    torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, buf)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ASSETS, help="output folder (default: assets/)")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    t0 = time.perf_counter()
    x_tr, x_te, y_tr, y_te = load_split()
    x_tr, x_te = upscale(x_tr), upscale(x_te)
    model = train(x_tr, y_tr)
    with torch.no_grad():
        logits = model(torch.from_numpy(x_te))
    acc = float((logits.argmax(1).numpy() == y_te).mean())
    args.out.mkdir(parents=True, exist_ok=True)
    weights = args.out / "torch_digits_cnn.pt"
    weights.write_bytes(state_dict_bytes(model))
    eval_set = args.out / "torch_digits_eval.npz"
    np.savez_compressed(eval_set, x=x_te, labels=y_te)
    print(f"trained in {time.perf_counter() - t0:.1f} s; held-out top-1 {acc:.4f} on {len(y_te)} rows")
    for path in (weights, eval_set):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        print(f"{path} {path.stat().st_size} bytes sha256 {digest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
