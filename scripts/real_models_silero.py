"""silero VAD from the ``silero-vad`` wheel, with speech synthesized by espeak-ng.

The model takes ``input`` ``[B, 576]`` (512 new samples after 64 samples of context, at
16 kHz), ``state`` ``[2, B, 128]`` (batch on axis 1) and ``sr``, an int64 scalar; all of its
compute lives inside an ``If`` on ``sr``. The dataset holds chunks of a recording made of
espeak-ng sentences separated by silence with a little noise. Each chunk's state is the one the
model reached on the chunks before it (the fp32 model run once, in order, over the recording), so
a batch of independent chunks is evaluated as in streaming use. Labels: 1 for chunks inside a
synthesized sentence (first to last loud sample), 0 for chunks in the silences.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import wave
import zipfile
from pathlib import Path
from typing import Any

import numpy as np


RATE = 16000
CHUNK, CONTEXT = 512, 64
SENTENCES = (
    "The quick brown fox jumps over the lazy dog.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "Voice activity detection separates speech from silence and noise.",
)


def _espeak(text: str) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s.wav"
        subprocess.run(["espeak-ng", "-v", "en", "-s", "150", "-w", str(out), text], check=True,
                       capture_output=True, timeout=60)
        with wave.open(str(out)) as w:
            rate, raw = w.getframerate(), w.readframes(w.getnframes())
    audio = np.frombuffer(raw, dtype=np.int16).astype(np.float32) / 32768.0
    t_new = np.arange(int(len(audio) * RATE / rate)) / RATE
    return np.interp(t_new, np.arange(len(audio)) / rate, audio).astype(np.float32)


def recording(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Audio and a per-sample speech flag (from a sentence's first to its last loud sample)."""
    rng = np.random.default_rng(seed)
    parts, flags = [], []
    for text in SENTENCES:
        gap = np.zeros(RATE, np.float32)
        speech = _espeak(text)
        env = np.convolve(np.abs(speech), np.ones(400) / 400, mode="same")
        loud = np.flatnonzero(env > 0.02)
        inside = np.zeros(len(speech), bool)
        inside[loud[0] : loud[-1] + 1] = True  # the utterance, its short pauses included
        parts += [gap, speech]
        flags += [np.zeros(len(gap), bool), inside]
    parts.append(np.zeros(RATE, np.float32))
    flags.append(np.zeros(RATE, bool))
    audio = np.concatenate(parts)
    audio += rng.normal(0, 0.003, size=audio.shape).astype(np.float32)
    return audio, np.concatenate(flags)


def make(wheel: Path, models: Path, data: Path, rows: int = 48) -> dict[str, Any] | None:
    """Extract the model and write the speech dataset; ``None`` without espeak-ng."""
    import onnxruntime as ort

    if shutil.which("espeak-ng") is None:
        return None
    path = models / "silero_vad.onnx"
    with zipfile.ZipFile(wheel) as z:
        path.write_bytes(z.read("silero_vad/data/silero_vad.onnx"))
    audio, flags = recording()
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    state = np.zeros((2, 1, 128), np.float32)
    sr = np.array(RATE, dtype=np.int64)
    context = np.zeros(CONTEXT, np.float32)
    inputs, states, labels = [], [], []
    for start in range(0, len(audio) - CHUNK, CHUNK):
        chunk = np.concatenate([context, audio[start : start + CHUNK]])
        inputs.append(chunk)
        states.append(state[:, 0])
        labels.append(int(flags[start : start + CHUNK].mean() > 0.5))
        _, state = sess.run(None, {"input": chunk[None], "state": state, "sr": sr})
        context = chunk[-CONTEXT:]
    pick = np.linspace(0, len(inputs) - 1, rows).round().astype(int)
    np.savez(
        data / "silero_speech.npz", input=np.stack(inputs)[pick],
        state=np.stack(states, axis=1)[:, pick], sr=sr, labels=np.array(labels)[pick],
    )
    return {
        "name": "silero", "model": str(path), "dataset": "silero_speech.npz",
        "classes": ["state batched on axis 1", "int64 scalar input", "If-subgraph node knobs"],
        "task_metric": "speech_accuracy", "task_min": 0.8, "metric": "lInf", "epsilon": 0.1,
        "batch_axes": "state:1,sr:none", "value_ranges": "sr:16000,input:-0.5..0.5",
        "shapes": "input:1x576", "routes": ["-quant:mode=dynamic"], "node_knob_prefix": "-quant:node:",
    }
