"""Holographic reduced representations over unit-modulus complex (phase) vectors.

Every symbol (a word, an entity, a role) gets a vector of ``DIM`` random phases, derived from a
keyed hash of its name, so the same symbol has the same vector in every process and on every
machine, and nothing needs to be stored. With such vectors:

* ``bind(a, b)`` (element-wise product: phases add) makes a vector unlike both inputs that
  ``unbind`` (multiplying by the conjugate) turns back into the other input exactly;
* ``bundle`` (sum, then every element scaled back to modulus 1) makes a vector similar to each
  input, the more so the fewer inputs there are;
* ``similarity`` (the real part of the normalised inner product) is 1 for equal vectors and
  about 0 ± 1/sqrt(2·DIM) for unrelated ones.

A fact becomes ``bundle(bind(ROLE_WORD, w) for its words + bind(ROLE_ENTITY, e) for its
entities + bind(ROLE_TAG, t) for its tags)``. Unbinding a fact with ``ROLE_ENTITY`` gives a
noisy superposition of exactly its entities, so "is X an entity of this fact, and how central"
is one similarity, and a query about several entities at once is the bundle of their bound
vectors. See ``docs/memory-providers.md`` for how the fact store uses these.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "DIM",
    "ROLE_ENTITY",
    "ROLE_TAG",
    "ROLE_WORD",
    "Vector",
    "bind",
    "bound",
    "bundle",
    "similarities",
    "similarity",
    "symbol",
    "unbind",
]

Vector = npt.NDArray[np.complex64]

# 1,024 phases: unrelated vectors land within ±0.02 of each other (one standard deviation),
# while one part of a twenty-part bundle still shows about 0.2 — a wide margin, at 8 KiB a vector.
DIM = 1024
# Changing the seed (or DIM) changes every vector; nothing is stored, so nothing breaks.
_SEED = b"cairn-holographic-v1"

ROLE_WORD = "role:word"
ROLE_ENTITY = "role:entity"
ROLE_TAG = "role:tag"


@functools.lru_cache(maxsize=65536)
def symbol(name: str) -> Vector:
    """The fixed random phase vector of ``name`` (read-only; copy before changing it)."""
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=16, key=_SEED).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "little"))
    vector = np.exp(1j * rng.uniform(0.0, 2.0 * np.pi, DIM)).astype(np.complex64)
    vector.setflags(write=False)
    return vector


def bind(a: Vector, b: Vector) -> Vector:
    return a * b


def unbind(bound_vector: Vector, key: Vector) -> Vector:
    """The inverse of ``bind``: ``unbind(bind(a, b), b) == a`` (up to rounding)."""
    return bound_vector * np.conj(key)


@functools.lru_cache(maxsize=65536)
def bound(role: str, name: str) -> Vector:
    """``bind(symbol(role), symbol(name))``, cached: the parts facts are built from."""
    vector = bind(symbol(role), symbol(name))
    vector.setflags(write=False)
    return vector


def bundle(vectors: Sequence[Vector], weights: Sequence[float] | None = None) -> Vector:
    """The superposition of ``vectors``, every element brought back to modulus 1.

    An element where the inputs cancel exactly (vanishingly rare) becomes phase 0.
    """
    if not vectors:
        raise ValueError("bundle() needs at least one vector")
    flat = _as_real(np.stack(vectors))  # (k, 2·DIM): re, im, re, im, …
    scale = (
        np.ones(len(vectors), np.float32) if weights is None else np.asarray(weights, np.float32)
    )
    pairs = (scale @ flat).reshape(-1, 2)
    magnitude = np.hypot(pairs[:, 0], pairs[:, 1])
    unit = pairs / np.maximum(magnitude, 1e-6)[:, None]
    if magnitude.min() <= 1e-6:
        unit[magnitude <= 1e-6] = (1.0, 0.0)
    return unit.reshape(-1).view(np.complex64)


def similarity(a: Vector, b: Vector) -> float:
    """Re⟨a, b⟩ / DIM: 1 for equal vectors, ~0 for unrelated ones, -1 for opposite."""
    return float(_as_real(a) @ _as_real(b)) / a.shape[-1]


def similarities(matrix: npt.NDArray[np.complex64], b: Vector) -> npt.NDArray[np.float64]:
    """``similarity(row, b)`` for every row of ``matrix``."""
    return (_as_real(matrix) @ _as_real(b)).astype(np.float64) / b.shape[-1]


def _as_real(v: npt.NDArray[np.complex64]) -> npt.NDArray[np.float32]:
    # Re Σ a·conj(b) = Σ (a.re·b.re + a.im·b.im): a real dot product over the interleaved
    # float view, with no copy. Complex products are far slower in common BLAS builds.
    return np.ascontiguousarray(v, dtype=np.complex64).view(np.float32)


# -- storage ---------------------------------------------------------------------------------

# Stored vectors keep each phase in 4 bits (16 levels): 512 bytes a vector instead of 8 KiB.
# Rounding a phase by at most π/16 keeps sin(π/16)/(π/16) ≈ 99.4 % of a similarity.
PHASE_LEVELS = 16
PACKED_BYTES = DIM // 2
# Names what a stored vector means; vectors stored under another format are recomputed.
FORMAT = f"phase{PHASE_LEVELS}-{DIM}-{_SEED.decode()}"
_LEVEL_VECTORS = np.exp(2j * np.pi * np.arange(PHASE_LEVELS) / PHASE_LEVELS).astype(np.complex64)


def pack(vector: Vector) -> bytes:
    """``vector``'s phases, 4 bits each, two to a byte."""
    steps = np.round(np.angle(vector) * (PHASE_LEVELS / (2 * np.pi))).astype(np.int64)
    codes = (steps % PHASE_LEVELS).astype(np.uint8)
    return (codes[0::2] | (codes[1::2] << 4)).tobytes()


def unpack(packed: Sequence[bytes]) -> npt.NDArray[np.complex64]:
    """The vectors of ``pack``-ed blobs, one row each."""
    data = np.frombuffer(b"".join(packed), dtype=np.uint8).reshape(len(packed), PACKED_BYTES)
    codes = np.empty((len(packed), DIM), dtype=np.uint8)
    codes[:, 0::2] = data & 0x0F
    codes[:, 1::2] = data >> 4
    return _LEVEL_VECTORS[codes]
