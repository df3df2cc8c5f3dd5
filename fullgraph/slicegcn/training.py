"""SliceGCN training: p slice ranks and a learner over the exchange fabric, and the reference.

An **epoch** (full batch):
1. with feature fusion, the learner computes the fused slices from the full features and sends
   rank i its slice (``fused_slices``);
2. each rank runs its GCN over the whole graph and sends the output rows of the *training* nodes
   (``slice_outputs``): the loss needs no other row, so half of Tolokers' rows never cross;
3. the learner concatenates them (plus the slice encoding), applies the classifier, and sends
   each rank the gradient of its rows (``slice_gradients``); with fusion each rank sends back the
   gradient of its fused slice (``fused_gradients``); everyone steps its own Adam;
4. a no-dropout pass scores the epoch: ranks send the rows of the validation and test nodes
   (``evaluation``; with fusion the learner first sends the fused slices again).

Each rank owns its parameters and optimizer (Adam and cosine annealing are per parameter, so
splitting them changes nothing); modules are built from per-module seeds and dropout draws from
per-module generators, so :func:`train_reference` (one process, no exchange: the fast path for
small graphs) gives the same logits as the distributed run for the same configuration.
The reported figure is the test metric at the best validation epoch (ROC-AUC for two classes,
accuracy otherwise), as the paper reports it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import BaseModel, Field
from torch import Tensor, nn

from foundation.errors import UsageError
from fullgraph.best import Best
from fullgraph.exchange.endpoint import Endpoint
from fullgraph.exchange.kinds import TrafficKind
from fullgraph.exchange.ledger import TrafficReport
from fullgraph.exchange.options import ExchangeName, ExchangeOptions
from fullgraph.ranks import run_in_threads
from fullgraph.slicegcn.config import SliceConfig
from fullgraph.slicegcn.metrics import score
from fullgraph.slicegcn.model import Adjacency, FeatureFusion, Head, SliceBranch, slice_width
from fullgraph.slicegcn.slicing import open_slices, part_dir, slice_plan
from remotegnn.store import GraphDataset

SEED_STRIDE = 1000  # module i of run s is seeded s * SEED_STRIDE + i: one stream per module
SLICE_KINDS = ("fused_slices", "slice_outputs", "slice_gradients", "fused_gradients", "evaluation")
TIMINGS = 3  # a rank's compute seconds, exchange seconds and epochs, sent to the learner at the end


class EpochScore(BaseModel):
    epoch: int
    loss: float
    val: float
    test: float


class RankTimes(BaseModel):
    rank: int
    compute_s: float = Field(description="forward, backward and optimizer step")
    exchange_s: float = Field(description="sending and waiting to receive, waiting for peers included")


class SliceResult(BaseModel):
    """A run's scores, and per rank what crossed the network and where the time went."""

    config: SliceConfig
    variant: str
    metric: Literal["roc_auc", "accuracy"]
    columns: list[tuple[int, int]] = Field(description="each rank's feature columns (fusion: of the fused features)")
    parameters: int
    best_epoch: int
    val: float
    test: float = Field(description="the test metric at the best validation epoch")
    seconds: float
    epochs: list[EpochScore]
    exchange: ExchangeName = Field(
        "mpi", description="what carried the exchanges: mpi (or in-process queues), udp, pinch"
    )
    traffic: list[TrafficReport] = Field(default_factory=list, description="per rank (the learner last)")
    times: list[RankTimes] = Field(default_factory=list)

    def bytes_per_epoch(self, rank: int, direction: Literal["sent", "received"]) -> float:
        report = next(r for r in self.traffic if r.rank == rank)
        return sum(getattr(e, direction) for e in report.entries) / self.config.epochs


@dataclass
class Graph:
    """What every rank needs: the normalised adjacency, the labels and the splits."""

    adjacency: Adjacency
    labels: Tensor
    train: Tensor
    evaluation: Tensor  # validation nodes, then test nodes
    val_count: int
    classes: int

    def to(self, device: str) -> Graph:
        """The adjacency and labels on ``device``; the split indices stay where the scores are made."""
        if device == "cpu":
            return self
        return Graph(self.adjacency.to(device), self.labels, self.train, self.evaluation, self.val_count, self.classes)

    @classmethod
    def of(cls, dataset: GraphDataset) -> Graph:
        meta = dataset.meta
        missing = {"train", "val", "test"} - set(meta.splits)
        if missing or not meta.num_classes:
            raise UsageError(f"{dataset.path}: SliceGCN needs labels and train, val and test splits")
        split = {name: torch.from_numpy(np.asarray(dataset.split(name), dtype=np.int64)) for name in meta.splits}
        return cls(
            adjacency=Adjacency.of(dataset),
            labels=torch.from_numpy(np.array(dataset.labels, dtype=np.int64)),
            train=split["train"],
            evaluation=torch.cat([split["val"], split["test"]]),
            val_count=len(split["val"]),
            classes=meta.num_classes,
        )


def _seeded(config: SliceConfig, index: int, device: str = "cpu") -> torch.Generator:
    return torch.Generator(device=device).manual_seed(config.seed * SEED_STRIDE + index)


# Initial weights come from torch's global generator, seeded per module: ranks that are threads
# of one process must not seed and draw at the same time.
_BUILDING = threading.Lock()


def build_branch(config: SliceConfig, index: int, in_dim: int) -> SliceBranch:
    with _BUILDING:
        torch.manual_seed(config.seed * SEED_STRIDE + index)
        return SliceBranch(in_dim, slice_width(config.hidden, config.parts), config.layers, config.dropout)


def build_learner(config: SliceConfig, in_dim: int, slice_dim: int, classes: int) -> tuple[Head, FeatureFusion | None]:
    with _BUILDING:
        torch.manual_seed(config.seed * SEED_STRIDE + config.parts)
        width = slice_width(config.hidden, config.parts)
        head = Head(config.parts, width, config.hidden, classes, config.dropout, config.encoding)
        fusion = FeatureFusion(in_dim, config.parts, slice_dim) if config.fusion else None
        return head, fusion


def _optimizer(config: SliceConfig, modules: list[nn.Module]):
    params = [p for m in modules for p in m.parameters()]
    optimizer = torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay)
    return optimizer, torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=config.epochs)


def _columns(dataset: GraphDataset, config: SliceConfig) -> list[tuple[int, int]]:
    return slice_plan(dataset.meta.feature_dim, config.parts)


def features_of(dataset: GraphDataset, start: int = 0, end: int | None = None) -> Tensor:
    """Columns [start, end) of the dataset's features as float32 (all of them by default)."""
    return torch.from_numpy(np.array(dataset.features[:, start:end], dtype=np.float32))


def _score_epoch(epoch: int, loss: float, logits: Tensor, graph: Graph) -> EpochScore:
    labels = graph.labels[graph.evaluation]
    v = graph.val_count
    return EpochScore(
        epoch=epoch,
        loss=loss,
        val=score(logits[:v], labels[:v], graph.classes),
        test=score(logits[v:], labels[v:], graph.classes),
    )


def _result(config, graph, columns, parameters, scores, started, traffic=(), times=()) -> SliceResult:
    best = Best()
    for s in scores:
        best.update(s.epoch, s.val, s.test)
    return SliceResult(
        config=config,
        variant=config.variant,
        metric="roc_auc" if graph.classes == 2 else "accuracy",
        columns=columns,
        parameters=parameters,
        best_epoch=best.index,
        val=best.val,
        test=best.test,
        seconds=round(time.perf_counter() - started, 3),
        epochs=scores,
        traffic=list(traffic),
        times=list(times),
    )


# ------------------------------------------------------------------------------- the reference


def train_reference(
    dataset: str | Path,
    config: SliceConfig,
    on_epoch: Callable[[EpochScore], None] | None = None,
    device: str = "cpu",
) -> SliceResult:
    """Every slice in this process, no exchange: the fast path, and what the distributed run must
    equal. ``device`` may be a GPU (``cuda``): the same computation, for accuracy studies."""
    started = time.perf_counter()
    ds = GraphDataset.open(dataset)
    graph, columns = Graph.of(ds).to(device), _columns(ds, config)
    full = features_of(ds).to(device)
    width = columns[0][1] - columns[0][0]
    branches = [build_branch(config, i, width).to(device) for i in range(config.parts)]
    head, fusion = build_learner(config, ds.meta.feature_dim, width, graph.classes)
    head = head.to(device)
    fusion = fusion.to(device) if fusion else None
    generators = [_seeded(config, i, device) for i in range(config.parts + 1)]
    modules: list[nn.Module] = [*branches, head, *([fusion] if fusion else [])]
    optimizer, schedule = _optimizer(config, modules)
    train_labels = graph.labels[graph.train].to(device)
    scores = []
    for epoch in range(config.epochs):
        for m in modules:
            m.train()
        logits = _reference_logits(branches, head, fusion, full, columns, graph, graph.train, generators)
        loss = F.cross_entropy(logits, train_labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        for m in modules:
            m.eval()
        with torch.no_grad():
            logits = _reference_logits(branches, head, fusion, full, columns, graph, graph.evaluation, generators)
        scores.append(_score_epoch(epoch, loss.item(), logits.cpu(), graph))
        if on_epoch:
            on_epoch(scores[-1])
    parameters = sum(p.numel() for m in modules for p in m.parameters())
    return _result(config, graph, columns, parameters, scores, started)


def _reference_logits(branches, head, fusion, full, columns, graph, rows, generators) -> Tensor:
    inputs = fusion(full) if fusion else [full[:, start:end] for start, end in columns]
    outputs = [b(x, graph.adjacency, generators[i])[rows] for i, (b, x) in enumerate(zip(branches, inputs))]
    return head(outputs, generators[-1])


# --------------------------------------------------------------------------------- distributed


def run_rank(index: int, endpoint: Endpoint, config: SliceConfig, graph: Graph, features: Tensor | None) -> None:
    """Slice rank ``index``: its GCN over the whole graph on its columns (``features``, or the
    fused slice the learner sends each pass when ``features`` is None)."""
    width = slice_width(config.hidden, config.parts)
    in_dim = features.shape[1] if features is not None else _recv_dim(endpoint)
    branch = build_branch(config, index, in_dim)
    generator = _seeded(config, index)
    optimizer, schedule = _optimizer(config, [branch])
    n, learner = graph.labels.shape[0], endpoint.master
    compute = 0.0
    for _ in range(config.epochs):
        branch.train()
        x = (
            features
            if features is not None
            else endpoint.recv(learner, np.empty((n, in_dim), np.float32), "fused_slices")
        )
        began = time.perf_counter()
        x = torch.as_tensor(x).requires_grad_(features is None)
        h = branch(x, graph.adjacency, generator)
        rows = h[graph.train]
        compute += time.perf_counter() - began
        endpoint.send(learner, rows.detach().numpy(), "slice_outputs")
        grad = endpoint.recv(learner, _rows(len(graph.train), width), "slice_gradients")
        began = time.perf_counter()
        optimizer.zero_grad()
        rows.backward(torch.from_numpy(grad))
        compute += time.perf_counter() - began
        if features is None:
            assert x.grad is not None  # x required its gradient: it is the learner's fused slice
            endpoint.send(learner, x.grad.numpy(), "fused_gradients")
        began = time.perf_counter()
        optimizer.step()
        schedule.step()
        branch.eval()
        compute += time.perf_counter() - began
        x = (
            features
            if features is not None
            else endpoint.recv(learner, np.empty((n, in_dim), np.float32), "evaluation")
        )
        began = time.perf_counter()
        with torch.no_grad():
            rows = branch(torch.as_tensor(x), graph.adjacency, generator)[graph.evaluation]
        compute += time.perf_counter() - began
        endpoint.send(learner, rows.numpy(), "evaluation")
    exchange = endpoint.ledger.report().seconds()
    endpoint.send(learner, np.array([compute, exchange, config.epochs], dtype=np.float64), "control")
    endpoint.send_report()


def _rows(count: int, width: int) -> np.ndarray:
    """A receive buffer of ``count`` float32 rows (a new one each time: it becomes a tensor)."""
    return np.empty((count, width), dtype=np.float32)


def _recv_dim(endpoint: Endpoint) -> int:
    """With fusion, the learner first says how wide each fused slice is."""
    dim = endpoint.recv(endpoint.master, np.zeros(1, dtype=np.int64), "control")
    return int(dim[0])


def run_learner(
    endpoint: Endpoint,
    config: SliceConfig,
    graph: Graph,
    columns: list[tuple[int, int]],
    full: Tensor | None,
    on_epoch: Callable[[EpochScore], None] | None = None,
) -> SliceResult:
    """The learner: the classifier (and the fusion MLP), the loss and the scores."""
    started = time.perf_counter()
    parts, width = config.parts, slice_width(config.hidden, config.parts)
    slice_dim = columns[0][1] - columns[0][0]
    head, fusion = build_learner(config, full.shape[1] if full is not None else 0, slice_dim, graph.classes)
    if fusion is not None:
        for i in range(parts):
            endpoint.send(i, np.array([slice_dim], dtype=np.int64), "control")
    generator = _seeded(config, parts)
    modules: list[nn.Module] = [head, *([fusion] if fusion else [])]
    optimizer, schedule = _optimizer(config, modules)
    train_n, eval_n = len(graph.train), len(graph.evaluation)
    scores = []
    for epoch in range(config.epochs):
        for m in modules:
            m.train()
        fused = _send_fused(endpoint, fusion, full, "fused_slices")
        outputs = [
            torch.from_numpy(endpoint.recv(i, _rows(train_n, width), "slice_outputs")).requires_grad_()
            for i in range(parts)
        ]
        logits = head(outputs, generator)
        loss = F.cross_entropy(logits, graph.labels[graph.train])
        optimizer.zero_grad()
        loss.backward()
        for i, out in enumerate(outputs):
            assert out.grad is not None, "every slice's rows feed the classifier"
            endpoint.send(i, out.grad.numpy(), "slice_gradients")
        if fused is not None:
            grads = [
                torch.from_numpy(endpoint.recv(i, np.empty(tuple(f.shape), np.float32), "fused_gradients"))
                for i, f in enumerate(fused)
            ]
            torch.autograd.backward(fused, grads)
        optimizer.step()
        schedule.step()
        for m in modules:
            m.eval()
        with torch.no_grad():
            _send_fused(endpoint, fusion, full, "evaluation")
            outputs = [torch.from_numpy(endpoint.recv(i, _rows(eval_n, width), "evaluation")) for i in range(parts)]
            scores.append(_score_epoch(epoch, loss.item(), head(outputs, generator), graph))
        if on_epoch:
            on_epoch(scores[-1])
    times = []
    for i in range(parts):
        compute, exchange, _ = endpoint.recv(i, np.zeros(TIMINGS, dtype=np.float64), "control")
        times.append(RankTimes(rank=i, compute_s=round(float(compute), 3), exchange_s=round(float(exchange), 3)))
    traffic = [endpoint.recv_report(i) for i in range(parts)] + [endpoint.report()]
    parameters = sum(p.numel() for m in modules for p in m.parameters())
    parameters += parts * sum(p.numel() for p in build_branch(config, 0, slice_dim).parameters())
    return _result(config, graph, columns, parameters, scores, started, traffic, times)


def _send_fused(
    endpoint: Endpoint, fusion: FeatureFusion | None, full: Tensor | None, kind: TrafficKind
) -> list[Tensor] | None:
    if fusion is None or full is None:
        return None
    fused = fusion(full)
    for i, piece in enumerate(fused):
        endpoint.send(i, piece.detach().contiguous().numpy(), kind)
    return fused


def rank_features(dataset: GraphDataset, config: SliceConfig, index: int, slices: Path | None) -> Tensor | None:
    """Rank ``index``'s columns: from its sliced dataset, else cut from the full one; None with fusion."""
    if config.fusion:
        return None
    if slices is not None:
        return features_of(GraphDataset.open(part_dir(slices, index)))
    start, end = slice_plan(dataset.meta.feature_dim, config.parts)[index]
    return features_of(dataset, start, end)


def check_slices(slices: Path, config: SliceConfig) -> None:
    found = open_slices(slices)
    if found.parts != config.parts:
        raise UsageError(f"{slices} holds {found.parts} slices; the run asks for --parts {config.parts}")


@dataclass
class SliceJob:
    """SliceGCN as a :class:`RankJob`: a rank per slice and the learner."""

    dataset: Path
    config: SliceConfig
    slices: Path | None = None
    exchange: ExchangeName = "mpi"
    on_epoch: Callable[[EpochScore], None] | None = None

    def __post_init__(self) -> None:
        if self.slices is not None:
            check_slices(self.slices, self.config)
        self._dataset = GraphDataset.open(self.dataset)
        self._graph = Graph.of(self._dataset)

    @property
    def workers(self) -> int:
        return self.config.parts

    def worker(self, rank: int) -> Callable[[Endpoint], None]:
        features = rank_features(self._dataset, self.config, rank, self.slices)
        return lambda endpoint: run_rank(rank, endpoint, self.config, self._graph, features)

    def master(self, endpoint: Endpoint) -> Callable[[], SliceResult]:
        columns = _columns(self._dataset, self.config)
        full = features_of(self._dataset) if self.config.fusion else None

        def run() -> SliceResult:
            result = run_learner(endpoint, self.config, self._graph, columns, full, self.on_epoch)
            return result.model_copy(update={"exchange": self.exchange})

        return run


def train_local(
    dataset: str | Path,
    config: SliceConfig,
    slices: Path | None = None,
    on_epoch: Callable[[EpochScore], None] | None = None,
    exchange: ExchangeOptions | None = None,
) -> SliceResult:
    """The distributed procedure with every rank a thread of this process (counted bytes, real
    exchange: in-process queues, or with ``exchange`` udp or pinch over loopback sockets)."""
    options = exchange or ExchangeOptions()
    return run_in_threads(SliceJob(Path(dataset), config, slices, options.exchange, on_epoch), options)
