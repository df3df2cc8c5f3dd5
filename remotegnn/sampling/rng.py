"""A tiny counter-based generator for numba kernels: SplitMix64 with an explicit one-word state.

Why not numba's ``np.random``: its state is global per thread, so results would depend on what
ran before in the process; an explicit state makes every batch reproducible from (seed, batch)
alone, in any worker process, in any order.
"""

from __future__ import annotations

import numba
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)
_TWO_TO_MINUS_53 = 2.0**-53


@numba.njit(inline="always", nogil=True)
def next_u64(state):
    z = state[0] + _GOLDEN
    state[0] = z
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@numba.njit(inline="always", nogil=True)
def below(state, n):
    """Uniform integer in [0, n) without modulo bias (Lemire's method; n < 2**32)."""
    bound = np.uint64(n)
    m = (next_u64(state) >> np.uint64(32)) * bound
    low = m & _LOW32
    if low < bound:
        threshold = (_TWO32 - bound) % bound
        while low < threshold:
            m = (next_u64(state) >> np.uint64(32)) * bound
            low = m & _LOW32
    return np.int64(m >> np.uint64(32))


@numba.njit(inline="always", nogil=True)
def uniform(state):
    """Uniform float in (0, 1): 53 random bits, centred in their interval (never 0, never 1)."""
    return ((next_u64(state) >> np.uint64(11)) + 0.5) * _TWO_TO_MINUS_53


def seed_state(*keys: int) -> np.ndarray:
    """A state array derived from any number of integers (seed, epoch, batch, ...)."""
    z = 0
    for key in keys:
        z = _splitmix_py(z ^ (int(key) & _MASK64))
    return np.array([z], dtype=np.uint64)


_MASK64 = (1 << 64) - 1


def _splitmix_py(x: int) -> int:
    """The same mixing as next_u64, in Python, for deriving states from keys."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)
