"""Issue 27: the built-in agreement metrics (detection, top-k, tokens) against the default route."""

from __future__ import annotations

import numpy as np
import pytest

from gptuner_core.accuracy import AccuracySettings
from gptuner_core.accuracy import task_metric_result
from gptuner_core.accuracy import task_metric_value
from gptuner_core.accuracy.agreement import parse_builtin
from gptuner_core.errors import ConfigError


def head(boxes: list[tuple[float, float, float, float]], classes: list[int], scores: list[float],
         n_classes: int = 3, anchors: int = 8, layout: str = "bca") -> np.ndarray:
    """A ``[1, 4+C, A]`` packed head with the given xywh boxes; other anchors score 0."""
    out = np.zeros((1, 4 + n_classes, anchors), np.float32)
    out[0, 0:4, :] = np.array([[5.0], [5.0], [2.0], [2.0]])  # background anchors: tiny boxes
    for i, (box, cls, score) in enumerate(zip(boxes, classes, scores, strict=True)):
        out[0, 0:4, i] = box
        out[0, 4 + cls, i] = score
    return out if layout == "bca" else out.transpose(0, 2, 1).copy()


REF = head([(50, 50, 20, 20), (150, 150, 40, 40), (250, 80, 30, 30)], [0, 1, 2], [0.9, 0.8, 0.7])


class TestDetection:
    def test_identical_heads_agree_fully(self) -> None:
        res = task_metric_result("detection", {"output0": REF}, None, golden={"output0": REF})
        assert res.value == 1.0
        assert res.details["recall"] == 1.0 and res.details["precision"] == 1.0
        assert res.details["mean_iou"] == pytest.approx(1.0)
        assert res.details["reference_detections"] == 3

    def test_a_lost_detection_a_moved_box_and_a_changed_class_each_count(self) -> None:
        cand = head([(50, 50, 20, 20), (150, 150, 40, 40), (250, 80, 30, 30)], [0, 1, 2], [0.9, 0.1, 0.7])
        res = task_metric_result("detection", {"output0": cand}, None, golden={"output0": REF})
        assert res.details["recall"] == pytest.approx(2 / 3) and res.details["precision"] == 1.0
        moved = head([(50, 50, 20, 20), (160, 150, 40, 40), (250, 80, 30, 30)], [0, 1, 2], [0.9, 0.8, 0.7])
        res = task_metric_result("detection", {"output0": moved}, None, golden={"output0": REF})
        assert res.details["recall"] == 1.0 and res.details["mean_iou"] < 0.95  # IoU 0.6 >= 0.5
        far = head([(50, 50, 20, 20), (175, 150, 40, 40), (250, 80, 30, 30)], [0, 1, 2], [0.9, 0.8, 0.7])
        res = task_metric_result("detection", {"output0": far}, None, golden={"output0": REF})
        assert res.details["recall"] == pytest.approx(2 / 3)  # IoU 0.23 < 0.5
        relabeled = head([(50, 50, 20, 20), (150, 150, 40, 40), (250, 80, 30, 30)], [0, 2, 2], [0.9, 0.8, 0.7])
        res = task_metric_result("detection", {"output0": relabeled}, None, golden={"output0": REF})
        assert res.details["recall"] == pytest.approx(2 / 3) and res.details["precision"] == pytest.approx(2 / 3)
        assert res.value == pytest.approx(2 / 3)  # F1

    def test_nms_drops_duplicates_and_options_pick_layout_and_box_format(self) -> None:
        dup = head([(50, 50, 20, 20), (51, 50, 20, 20)], [0, 0], [0.9, 0.85])
        res = task_metric_result("detection", {"output0": dup}, None, golden={"output0": dup})
        assert res.details["reference_detections"] == 1
        bac = REF.transpose(0, 2, 1).copy()
        res = task_metric_result("detection(layout=bac)", {"o": bac}, None, golden={"o": bac})
        assert res.details["reference_detections"] == 3
        xyxy = REF.copy()
        xyxy[0, 2:4, :3] = xyxy[0, 0:2, :3] + 10
        res = task_metric_result("detection(boxes=xyxy, conf=0.75, value=recall)", {"o": xyxy}, None,
                                 golden={"o": xyxy})
        assert res.details["reference_detections"] == 2 and res.value == 1.0

    def test_objectness_multiplies_the_class_scores_and_yolox_boxes_are_decoded(self) -> None:
        a = 8 * 8 + 4 * 4 + 2 * 2  # a 64x64 input at strides 8, 16, 32
        raw = np.zeros((1, a, 4 + 1 + 2), np.float32)  # layout bac: x, y, log w, log h, obj, 2 classes
        raw[0, :, 2:4] = np.log(2.0)  # every box 2 strides wide and high
        raw[0, [0, 20], 4] = [0.9, 0.2]  # objectness
        raw[0, [0, 20], 5] = [0.8, 0.9]  # class 0 scores: obj * cls = 0.72, 0.18
        spec = "detection(layout=bac, objectness=on, decode=yolox)"
        res = task_metric_result(spec, {"o": raw}, None, golden={"o": raw})
        assert res.details["reference_detections"] == 1
        shifted = raw.copy()
        shifted[0, 0, 0] = 0.5  # half a stride (4 px) to the right: IoU 12x16 / 20x16 = 0.6
        res = task_metric_result(spec, {"o": shifted}, None, golden={"o": raw})
        assert res.value == 1.0 and res.details["mean_iou"] == pytest.approx(0.6)
        with pytest.raises(ConfigError, match="decode=yolox needs a square input"):
            task_metric_value(spec, {"o": raw[:, :50]}, None, golden={"o": raw[:, :50]})

    def test_a_reference_without_detections_is_an_error_not_a_pass(self) -> None:
        empty = head([], [], [])
        with pytest.raises(ConfigError, match="no detection .* conf 0.25"):
            task_metric_value("detection", {"output0": empty}, None, golden={"output0": empty})

    def test_the_task_output_may_be_a_slice(self) -> None:
        both = {"output0": np.concatenate([REF, REF], axis=0)}
        res = task_metric_result("detection", both, None, output_name="output0[:1]", golden=both)
        assert res.details["reference_detections"] == 3


class TestTopkAndTokens:
    def test_topk_agreement(self) -> None:
        ref = np.array([[0.1, 0.5, 0.3, 0.9], [0.8, 0.1, 0.2, 0.0]])
        same_top2 = np.array([[0.1, 0.95, 0.3, 0.9], [0.8, 0.1, 0.2, 0.0]])
        res = task_metric_result("topk(k=2)", {"p": same_top2}, None, golden={"p": ref})
        assert res.value == 1.0 and res.details["top1_agreement"] == 0.5
        swapped = np.array([[0.9, 0.5, 0.3, 0.1], [0.8, 0.1, 0.2, 0.0]])
        assert task_metric_value("topk(k=2)", {"p": swapped}, None, golden={"p": ref}) == 0.75

    def test_token_agreement_reads_argmax_or_ids(self) -> None:
        rng = np.random.default_rng(0)
        logits = rng.normal(size=(2, 5, 7))
        other = logits.copy()
        other[0, 0] = -other[0, 0]
        res = task_metric_result("tokens", {"logits": other}, None, golden={"logits": logits})
        assert res.value == pytest.approx(0.9) and res.details["sequence_match"] == 0.5
        ids = np.array([[1, 2, 3], [4, 5, 6]], np.int64)
        assert task_metric_value("tokens", {"ids": ids}, None, golden={"ids": ids}) == 1.0


class TestSpecs:
    @pytest.mark.parametrize("spec", ["detection", "detection(conf=0.3, iou=0.6, boxes=xyxy)", "topk",
                                      "topk(k=3)", "tokens", "top1", "mymetrics:accuracy"])
    def test_settings_accept_builtins_with_options(self, spec: str) -> None:
        AccuracySettings(task_metric=spec, max_task_drop=0.05)

    @pytest.mark.parametrize(("spec", "message"), [
        ("detection(conf=2)", "conf must be"), ("detection(colour=red)", "unknown option"),
        ("topk(k=0)", "k must be"), ("detection(conf=0.3", "task metric must be"),
        ("detection(boxes=cxcy)", "boxes must be one of"),
    ])
    def test_bad_options_are_refused_in_one_line(self, spec: str, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            parse_builtin(spec) if "(" in spec and spec.endswith(")") else AccuracySettings(task_metric=spec)
