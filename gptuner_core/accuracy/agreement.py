"""Built-in task metrics: agreement with the default route's outputs (no labels needed).

==========================  ======================================================================
``detection(...)``          a packed detection head ``[batch, 4+C, anchors]`` (``layout=bca``,
                            YOLOv8 style) or ``[batch, anchors, 4+C]`` (``layout=bac``): boxes
                            (``boxes=xywh`` centre/size, or ``xyxy``) then C class scores. Per
                            image: class = argmax score, keep score >= ``conf`` (0.25), class-wise
                            NMS at IoU ``nms`` (0.45), at most ``max_det`` (300). The reference's
                            detections are matched greedily to the candidate's by IoU >= ``iou``
                            (0.5) and the same class. Reports ``recall`` (of the reference's
                            detections), ``precision``, ``f1``, ``mean_iou`` of the matches and both
                            counts; the value is ``value=`` one of them (default ``f1``).
                            ``objectness=on``: the first score is an objectness that multiplies
                            the class scores (YOLOv5/YOLOX heads); ``decode=yolox``: raw YOLOX
                            boxes (grid offsets and log sizes at strides 8, 16, 32 of a square
                            input) are decoded to pixels first.
``topk(k=5)``               classifier scores over the last axis: mean overlap of the candidate's
                            top-k classes with the reference's (``top1_agreement`` reported too).
``tokens``                  sequence outputs: token ids (integers), or logits over the last axis
                            (argmax): the fraction of equal tokens (``sequence_match``: rows whose
                            tokens are all equal).
==========================  ======================================================================

Options go in parentheses: ``detection(boxes=xyxy, conf=0.3)``. Each reads ``--task-output``
(an output or a slice of one) or, without it, the model's only output / its score output.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from gptuner_core.errors import ConfigError


_SPEC = re.compile(r"\s*([a-z_][a-z0-9_]*)\s*(?:\((.*)\))?\s*", re.S)
#: option -> (default, kind, check description)
_OPTIONS: dict[str, dict[str, tuple[Any, str]]] = {
    "detection": {
        "layout": ("bca", "bca|bac"), "boxes": ("xywh", "xywh|xyxy"), "conf": (0.25, "unit"),
        "nms": (0.45, "unit"), "iou": (0.5, "unit"), "max_det": (300, "count"),
        "value": ("f1", "f1|recall|precision|mean_iou"), "objectness": ("off", "off|on"),
        "decode": ("none", "none|yolox"),
    },
    "topk": {"k": (5, "count")},
    "tokens": {},
}
BUILTINS = tuple(_OPTIONS)


def is_builtin(spec: str) -> bool:
    m = _SPEC.fullmatch(str(spec))
    return m is not None and m.group(1) in _OPTIONS


def _value(name: str, key: str, raw: str, kind: str) -> Any:
    if kind == "unit":
        try:
            value = float(raw)
        except ValueError:
            value = -1.0
        if not 0 < value <= 1:
            msg = f"task metric {name}: {key} must be a number in (0, 1] (got {raw!r})"
            raise ConfigError(msg)
        return value
    if kind == "count":
        if not re.fullmatch(r"\d+", raw) or int(raw) < 1:
            msg = f"task metric {name}: {key} must be an integer >= 1 (got {raw!r})"
            raise ConfigError(msg)
        return int(raw)
    if raw not in kind.split("|"):
        msg = f"task metric {name}: {key} must be one of {kind.split('|')} (got {raw!r})"
        raise ConfigError(msg)
    return raw


def parse_builtin(spec: str) -> tuple[str, dict[str, Any]]:
    """``"detection(conf=0.3)"`` -> ``("detection", {all options, defaults filled})``."""
    m = _SPEC.fullmatch(str(spec))
    if m is None or m.group(1) not in _OPTIONS:
        msg = f"task metric {spec!r} is not a built-in (built-ins: {', '.join(BUILTINS)})"
        raise ConfigError(msg)
    name, body = m.group(1), m.group(2) or ""
    allowed = _OPTIONS[name]
    options = {k: default for k, (default, _) in allowed.items()}
    for part in (p.strip() for p in body.split(",")):
        if not part:
            continue
        key, eq, raw = (s.strip() for s in part.partition("="))
        if not eq or key not in allowed:
            msg = (f"task metric {name}: unknown option {part!r} (options: "
                   f"{', '.join(f'{k}={d}' for k, (d, _) in allowed.items()) or 'none'})")
            raise ConfigError(msg)
        options[key] = _value(name, key, raw, allowed[key][1])
    return name, options


def agreement(spec: str, output: np.ndarray, reference: np.ndarray, where: str) -> tuple[float, dict[str, float]]:
    """``(value, details)`` of a built-in metric on one output against the reference's."""
    name, options = parse_builtin(spec)
    out, ref = np.asarray(output), np.asarray(reference)
    if out.shape != ref.shape:
        msg = f"task metric {name}: {where} has shape {out.shape}, the reference's {ref.shape}"
        raise ConfigError(msg)
    if name == "detection":
        return detection(out, ref, where=where, **options)
    if name == "topk":
        return topk(out, ref, where=where, **options)
    return tokens(out, ref)


# -- detection -----------------------------------------------------------------------------
def _yolox_grid(anchors: int, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Grid cell offsets ``[A, 2]`` and strides ``[A, 1]`` of a square input at strides 8/16/32."""
    side = round(np.sqrt(anchors * 1024 / 21))
    cells = [(side // s, s) for s in (8, 16, 32)]
    if side % 32 or sum(n * n for n, _ in cells) != anchors:
        msg = f"task metric detection: decode=yolox needs a square input at strides 8, 16, 32; {where} has {anchors} anchors"
        raise ConfigError(msg)
    grids, strides = [], []
    for n, stride in cells:
        xv, yv = np.meshgrid(np.arange(n), np.arange(n))
        grids.append(np.stack([xv, yv], axis=2).reshape(-1, 2))
        strides.append(np.full((n * n, 1), stride))
    return np.concatenate(grids).astype(np.float64), np.concatenate(strides).astype(np.float64)


def _decode(head: np.ndarray, *, layout: str, boxes: str, conf: float, nms: float, max_det: int,
            objectness: str = "off", grid: tuple[np.ndarray, np.ndarray] | None = None,
            ) -> tuple[np.ndarray, np.ndarray]:
    """One image's ``(xyxy boxes [n, 4], classes [n])`` after threshold and class-wise NMS."""
    rows = head.T if layout == "bca" else head  # [anchors, 4+C]
    rows = rows.astype(np.float64)
    if grid is not None:
        offsets, strides = grid
        rows[:, :2] = (rows[:, :2] + offsets) * strides
        rows[:, 2:4] = np.exp(np.clip(rows[:, 2:4], None, 30)) * strides
    scores = rows[:, 5:] * rows[:, 4:5] if objectness == "on" else rows[:, 4:]
    cls = scores.argmax(axis=1)
    best = scores[np.arange(len(rows)), cls]
    keep = np.flatnonzero(best >= conf)
    keep = keep[np.argsort(-best[keep], kind="stable")][:30000]
    b = rows[keep, :4]
    if boxes == "xywh":
        b = np.concatenate([b[:, :2] - b[:, 2:] / 2, b[:, :2] + b[:, 2:] / 2], axis=1)
    cls = cls[keep]
    chosen: list[int] = []
    suppressed = np.zeros(len(keep), bool)
    for i in range(len(keep)):
        if suppressed[i]:
            continue
        chosen.append(i)
        if len(chosen) >= max_det:
            break
        same = ~suppressed & (cls == cls[i])
        same[: i + 1] = False
        idx = np.flatnonzero(same)
        suppressed[idx[_iou(b[i:i + 1], b[idx])[0] > nms]] = True
    return b[chosen], cls[chosen]


def _iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise IoU of xyxy boxes ``[n, 4]`` x ``[m, 4]``."""
    lo = np.maximum(a[:, None, :2], b[None, :, :2])
    hi = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.clip(hi - lo, 0, None).prod(axis=2)
    area_a = np.clip(a[:, 2:] - a[:, :2], 0, None).prod(axis=1)
    area_b = np.clip(b[:, 2:] - b[:, :2], 0, None).prod(axis=1)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def _match(rb: np.ndarray, rc: np.ndarray, cb: np.ndarray, cc: np.ndarray, iou: float) -> list[float]:
    """IoUs of the greedy one-to-one matches (highest IoU first, same class, IoU >= ``iou``)."""
    if not len(rb) or not len(cb):
        return []
    ious = _iou(rb, cb) * (rc[:, None] == cc[None, :])
    pairs = np.argwhere(ious >= iou)
    order = np.argsort(-ious[pairs[:, 0], pairs[:, 1]], kind="stable")
    used_r, used_c, matched = set(), set(), []
    for r, c in pairs[order]:
        if r not in used_r and c not in used_c:
            used_r.add(r)
            used_c.add(c)
            matched.append(float(ious[r, c]))
    return matched


def detection(out: np.ndarray, ref: np.ndarray, *, where: str, layout: str, boxes: str, conf: float,
              nms: float, iou: float, max_det: int, value: str, objectness: str = "off",
              decode: str = "none") -> tuple[float, dict[str, float]]:
    channels = 1 if layout == "bca" else 2
    if out.ndim != 3 or out.shape[channels] < 5 + (objectness == "on") or out.dtype.kind not in "fiu":
        expected = "[batch, 4+classes, anchors]" if layout == "bca" else "[batch, anchors, 4+classes]"
        msg = f"task metric detection: {where} has shape {out.shape} (expected {expected} for layout={layout})"
        raise ConfigError(msg)
    grid = _yolox_grid(out.shape[3 - channels], where) if decode == "yolox" else None
    opts = {"layout": layout, "boxes": boxes, "conf": conf, "nms": nms, "max_det": max_det,
            "objectness": objectness, "grid": grid}
    n_ref = n_out = 0
    matched: list[float] = []
    for r_head, c_head in zip(ref, out, strict=True):
        rb, rc = _decode(r_head, **opts)
        cb, cc = _decode(c_head, **opts)
        n_ref, n_out = n_ref + len(rb), n_out + len(cb)
        matched += _match(rb, rc, cb, cc, iou)
    if n_ref == 0:
        msg = (f"task metric detection: the default route has no detection in {where} scoring >= "
               f"conf {conf:g} on these inputs, so there is nothing to agree with (expected a "
               "lower conf=, another layout= or --task-output)")
        raise ConfigError(msg)
    recall = len(matched) / n_ref
    precision = len(matched) / n_out if n_out else 1.0
    f1 = 2 * recall * precision / (recall + precision) if recall + precision else 0.0
    details = {"recall": recall, "precision": precision, "f1": f1,
               "mean_iou": float(np.mean(matched)) if matched else 0.0,
               "reference_detections": float(n_ref), "detections": float(n_out)}
    return details[value], details


# -- classifiers and sequences -------------------------------------------------------------
def topk(out: np.ndarray, ref: np.ndarray, *, where: str, k: int) -> tuple[float, dict[str, float]]:
    if out.ndim < 1 or out.shape[-1] < k or out.dtype.kind not in "fiu":
        msg = f"task metric topk: {where} has shape {out.shape} (expected scores over at least k={k} classes in the last axis)"
        raise ConfigError(msg)
    mine = np.argsort(-out, axis=-1, kind="stable")[..., :k]
    theirs = np.argsort(-ref, axis=-1, kind="stable")[..., :k]
    overlap = (mine[..., :, None] == theirs[..., None, :]).any(axis=-1).sum(axis=-1) / k
    top1 = mine[..., 0] == theirs[..., 0]
    return float(overlap.mean()), {"topk_overlap": float(overlap.mean()), "top1_agreement": float(top1.mean())}


def tokens(out: np.ndarray, ref: np.ndarray) -> tuple[float, dict[str, float]]:
    if out.dtype.kind == "f":
        out, ref = out.argmax(axis=-1), ref.argmax(axis=-1)
    equal = out == ref
    rows = equal.reshape(equal.shape[0], -1).all(axis=1) if equal.ndim else equal.reshape(1)
    value = float(equal.mean()) if equal.size else 1.0
    return value, {"token_agreement": value, "sequence_match": float(rows.mean()) if rows.size else 1.0}
