"""Task metrics of the real-model test set (``scripts/real_models.py``), as ``path:function`` specs.

Each takes ``(outputs, labels)``: the model's outputs by name and the dataset's ``labels`` array;
higher is better. They measure the task itself, not agreement with the default route.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _only(outputs: dict[str, Any], name: str | None = None) -> np.ndarray:
    if name is not None:
        return np.asarray(outputs[name])
    return np.asarray(next(iter(outputs.values())))


def ctc_exact_match(outputs: dict[str, Any], labels: np.ndarray) -> float:
    """PP-OCR recognition: greedy CTC decoding (blank = class 0) of the (N, T, C) softmax,
    compared with the rendered text (label rows of class ids, padded with -1): the share of
    lines read exactly right."""
    probs = _only(outputs)
    best = probs.argmax(axis=-1)
    right = 0
    for row, want in zip(best, np.asarray(labels), strict=True):
        keep = np.concatenate([[True], row[1:] != row[:-1]]) & (row != 0)
        got = row[keep].tolist()
        right += got == [int(c) for c in want if c >= 0]
    return right / len(best)


def text_mask_iou(outputs: dict[str, Any], labels: np.ndarray) -> float:
    """PP-OCR detection: IoU of the probability map thresholded at 0.3 (rapidocr's default)
    with the rendered text's mask, averaged over images."""
    prob = _only(outputs)[:, 0]
    masks = np.asarray(labels).astype(bool)
    found = prob > 0.3
    inter = (found & masks).sum(axis=(1, 2))
    union = (found | masks).sum(axis=(1, 2))
    return float(np.mean(inter / np.maximum(union, 1)))


def speech_accuracy(outputs: dict[str, Any], labels: np.ndarray) -> float:
    """silero VAD: speech probability > 0.5 against where speech was synthesized (1) or not (0)."""
    prob = np.asarray(outputs["output"]).reshape(-1)
    return float(np.mean((prob > 0.5) == (np.asarray(labels).reshape(-1) > 0)))


def retrieval_top1(outputs: dict[str, Any], labels: np.ndarray) -> float:
    """MiniLM: each text's nearest other text by embedding cosine is its partner (the other
    half of the same paragraph, index in ``labels``)."""
    emb = np.asarray(outputs["sentence_embedding"], dtype=np.float64)
    emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    sim = emb @ emb.T
    np.fill_diagonal(sim, -np.inf)
    return float(np.mean(sim.argmax(axis=1) == np.asarray(labels)))
