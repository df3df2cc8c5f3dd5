"""Checkpoints a training job resumes from after its machine is reclaimed: the model, the
optimizer, where each loader is in its epochs, and the random number generators.

    checkpoints = Checkpointer("ckpt", every_batches=200)
    resumed = checkpoints.restore(model, optimizer, {"train": train_loader})   # None: a fresh start
    for epoch in range(start, epochs):
        for batch in train_loader:
            ...  # the training step
            checkpoints.step(model, optimizer, {"train": train_loader})

Each checkpoint is one file, ``checkpoint-<step>.pt``, written atomically (a temp file in the same
directory, fsynced, renamed), so a machine that dies mid-write leaves the previous checkpoint as
it was; the last ``keep`` (two) are kept, and ``restore`` falls back to the older one when the
newest cannot be read. It holds tensors, numbers, strings, lists and dicts only and is read with
``torch.load(weights_only=True)``: loading one never runs code from the file. The loaders' states
are their ``state_dict()`` (``remotegnn.loader_state``): a restored loader yields exactly the
batches the saved one had not, so with the generators restored too, a resumed job on the CPU ends
with the parameters an uninterrupted one has.

A checkpoint can also be asked for from outside: when the file that ``MEMORYBRIDGE_CHECKPOINT_REQUEST``
names appears (`provision run` creates it on the job's learner when AWS gives a spot machine of the
cluster its two-minute warning), the next ``step`` saves, and the save removes the file, which
tells the asker it is done. ``step`` looks for it at most once every ``REQUEST_POLL_S``.

Data-parallel learners (``torch.distributed`` initialised, e.g. by
``remotegnn.distributed.init_learners``) each keep their own checkpoints, in ``DIR/rank-R``: each
rank's loader is at its own place in the epoch. They save at the same steps: a save that is due by
time or asked for on one rank is agreed on by all (one all-reduce of one number a step, which
also keeps the ranks' collectives in step whatever each was configured with), and ``restore``
loads the newest step every rank has and can read.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Protocol

import numpy as np
import torch
import torch.distributed as dist

from contracts.interruption import CHECKPOINT_REQUEST_ENV
from foundation.errors import InputFileError, UsageError
from foundation.fileio import atomic_writer

CHECKPOINT_KIND: Final = "memorybridge.checkpoint"
CHECKPOINT_VERSION: Final = 1
KEEP: Final = 2
"""Checkpoints kept: the newest, and one to fall back to should the newest be unreadable."""
NAME = re.compile(r"checkpoint-(\d+)\.pt")
REQUEST_POLL_S: Final = 1.0
"""How often ``step`` looks for a checkpoint request: a stat a second costs nothing, and the
two-minute warning leaves a minute and more for the save."""


class Resumable(Protocol):
    """A loader that says where it is (DistributedGraphLoader, DistributedLinkLoader)."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...


class Checkpointer:
    """Saves checkpoints to ``directory`` every ``every_batches`` steps and/or ``every_seconds``
    (``step`` decides), keeps the last ``keep``, and restores the newest readable one.

    Args:
        directory: Where the checkpoint files go (made if missing; a file there is refused).
            Data-parallel learners each use ``directory/rank-R``.
        every_batches: Save every this many training steps (1 or more), or None.
        every_seconds: Save when this many seconds have passed since the last save, or None.
        keep: How many of the newest checkpoints to keep (at least 1; two by default, so a
            newest one that cannot be read has an older one to fall back to).
        request_file: A file whose appearance asks the next ``step`` to save (the save removes
            it). Default: the path ``MEMORYBRIDGE_CHECKPOINT_REQUEST`` names, if set.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        every_batches: int | None = None,
        every_seconds: float | None = None,
        keep: int = KEEP,
        request_file: str | Path | None = None,
    ):
        if every_batches is not None and every_batches < 1:
            raise UsageError(f"every_batches={every_batches}: save at least every batch (1 or more), or give None")
        if every_seconds is not None and every_seconds <= 0:
            raise UsageError(f"every_seconds={every_seconds}: give a positive number of seconds, or None")
        if keep < 1:
            raise UsageError(f"keep={keep}: keep at least the newest checkpoint")
        self.rank, self.world = _group()
        root = Path(directory)
        if root.exists() and not root.is_dir():
            raise UsageError(f"checkpoint directory {root} is a file; give a directory")
        self.directory = root / f"rank-{self.rank}" if self.world > 1 else root
        self.every_batches, self.every_seconds, self.keep = every_batches, every_seconds, keep
        requested = request_file or os.environ.get(CHECKPOINT_REQUEST_ENV)
        self.request_file = Path(requested) if requested else None  # its appearance asks for a save
        self.steps = 0  # training steps taken, over every run of the job
        self._saved_step, self._saved_at = 0, time.monotonic()
        self._looked_at = -float("inf")  # the first step looks: a request may predate the job's start

    # -- saving -----------------------------------------------------------------------------------
    def step(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        loaders: Mapping[str, Resumable],
        extra: dict[str, Any] | None = None,
    ) -> Path | None:
        """Count one training step (call it after the step) and save when one is due or asked for."""
        self.steps += 1
        by_batches = self.every_batches is not None and self.steps - self._saved_step >= self.every_batches
        by_time = self.every_seconds is not None and time.monotonic() - self._saved_at >= self.every_seconds
        due = by_batches or by_time or self._requested()
        if self.world > 1:  # a clock or a request file says so on one rank: every rank saves, at this step
            due = bool(_agreed(due, max))
        return self.save(model, optimizer, loaders, extra) if due else None

    def _requested(self) -> bool:
        if self.request_file is None or time.monotonic() - self._looked_at < REQUEST_POLL_S:
            return False
        self._looked_at = -float("inf")  # the first step looks: a request may predate the job's start
        return self.request_file.exists()

    def save(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        loaders: Mapping[str, Resumable],
        extra: dict[str, Any] | None = None,
    ) -> Path:
        """Write a checkpoint now; ``extra``: anything else to keep (numbers, strings, lists, dicts)."""
        content = {
            "kind": CHECKPOINT_KIND,
            "version": CHECKPOINT_VERSION,
            "step": self.steps,
            "saved_at": dt.datetime.now(dt.UTC).isoformat(),
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "loaders": {name: loader.state_dict() for name, loader in loaders.items()},
            "rng": _rng_states(),
            "extra": extra or {},
        }
        path = self.directory / f"checkpoint-{self.steps:09d}.pt"
        with atomic_writer(path) as handle:
            torch.save(content, handle)
        for old in self.saved()[: -self.keep]:
            old.unlink(missing_ok=True)
        self._saved_step, self._saved_at = self.steps, time.monotonic()
        if self.request_file is not None:
            self.request_file.unlink(missing_ok=True)  # any save answers a request: the newest state is kept
        return path

    # -- restoring --------------------------------------------------------------------------------
    def saved(self) -> list[Path]:
        """The checkpoints in the directory, oldest first."""
        if not self.directory.is_dir():
            return []
        found = [(int(m[1]), p) for p in self.directory.iterdir() if (m := NAME.fullmatch(p.name))]
        return [p for _, p in sorted(found)]

    def restore(
        self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, loaders: Mapping[str, Resumable]
    ) -> dict[str, Any] | None:
        """Load the newest readable checkpoint into ``model``, ``optimizer`` and ``loaders`` and the
        generators (data-parallel: the newest step every rank has and can read); returns its
        ``extra`` (None, changing nothing, when there is no checkpoint)."""
        for path, content in self._readable():
            missing = sorted(set(loaders) - set(content["loaders"]))
            if missing:
                raise UsageError(f"checkpoint {path} has no state for the loader(s) {', '.join(missing)}")
            model.load_state_dict(content["model"])
            optimizer.load_state_dict(content["optimizer"])
            for name, loader in loaders.items():
                loader.load_state_dict(content["loaders"][name])
            _set_rng_states(content["rng"])
            self.steps = self._saved_step = int(content["step"])
            self._saved_at = time.monotonic()
            return dict(content["extra"])
        return None

    def _readable(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        """(path, content) of the newest checkpoint readable (on every rank: the same step), then
        older ones should the caller go on; raises when checkpoints exist and none can be read."""
        by_step = {int(m[1]): p for p in self.saved() if (m := NAME.fullmatch(p.name))}
        problems: list[str] = []
        bound = float("inf")
        while True:
            mine = max((step for step in by_step if step <= bound), default=-1)
            step = _agreed(mine, min) if self.world > 1 else mine
            if step < 0:
                if problems:
                    raise InputFileError("no checkpoint could be read: " + "; ".join(problems))
                return
            content = None
            if step in by_step:
                try:
                    content = read(by_step[step])
                except InputFileError as exc:
                    problems.append(str(exc))
                    warnings.warn(f"{exc}; trying an older checkpoint", stacklevel=3)
            elif self.world > 1:
                problems.append(f"rank {self.rank} has no checkpoint of step {step}")
            readable = _agreed(content is not None, min) if self.world > 1 else content is not None
            if readable and content is not None:
                yield by_step[step], content
            bound = step - 1


REQUIRED = ("kind", "version", "step", "model", "optimizer", "loaders", "rng", "extra")


def read(path: Path) -> dict[str, Any]:
    """A checkpoint file's content, read without running anything from it (``weights_only``)."""
    try:
        content = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a truncated or foreign file
        raise InputFileError(f"checkpoint {path} cannot be read ({type(exc).__name__}: {exc})") from exc
    if not isinstance(content, dict) or content.get("kind") != CHECKPOINT_KIND:
        raise InputFileError(f"checkpoint {path} is not a MemoryBridge checkpoint")
    if content.get("version") != CHECKPOINT_VERSION:
        raise InputFileError(
            f"checkpoint {path} has version {content.get('version')!r}; this MemoryBridge reads {CHECKPOINT_VERSION}"
        )
    missing = [key for key in REQUIRED if key not in content]
    if missing:
        raise InputFileError(f"checkpoint {path} lacks {', '.join(missing)}")
    return content


def _group() -> tuple[int, int]:
    """This process's rank and the number of data-parallel ranks (0, 1 outside a process group)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _agreed(value: int | bool, how: Any) -> int:
    """``value`` combined over every rank by ``how`` (max or min), the same answer on each."""
    on_gpu = dist.get_backend() == "nccl"
    device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
    tensor = torch.tensor([int(value)], dtype=torch.int64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX if how is max else dist.ReduceOp.MIN)
    return int(tensor.item())


def _rng_states() -> dict[str, Any]:
    """Every generator a training step may draw from (dropout, shuffles in user code), as tensors
    and plain values that ``weights_only`` loading accepts."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else [],
        "numpy": [kind, torch.from_numpy(np.asarray(keys, dtype=np.int64)), pos, has_gauss, gauss],
        "python": random.getstate(),
    }


def _set_rng_states(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    if states["cuda"]:
        torch.cuda.set_rng_state_all(states["cuda"])
    kind, keys, pos, has_gauss, gauss = states["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    version, internal, gauss_next = states["python"]
    random.setstate((version, tuple(internal), gauss_next))
