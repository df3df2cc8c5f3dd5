"""Standard distributed full-graph training and RETEXO's lazy message passing, rank by rank.

Both run n workers (one part each) and a master over an :class:`~fullgraph.exchange.endpoint.Endpoint`.
A **round**: the master sends the weights; each worker runs a full-batch forward and backward
over its part and sends the gradient of its summed loss; the master divides the sum of the
workers' gradients by the total number of training nodes (so the step is the full graph's mean
gradient, whatever the partition: "gradient weighting by training-set size") and steps Adam.
Each worker also scores the round's weights (no dropout) and sends its correct counts, so the
master picks the best validation round exactly as one process would.

- **standard**: every round, each hidden layer's boundary rows cross forward and their gradients
  backward (:class:`HaloExchange`); the no-dropout scoring pass exchanges again (counted as
  ``evaluation``, outside Eq. 2).
- **retexo**: layer m is trained alone for R rounds on frozen inputs (the features for m = 1;
  the previous layer's output for m > 1, exchanged once), with a temporary classifier for
  hidden layers. The master tells the workers which round's weights scored best on validation
  (a flag with the next weights), each worker keeps that round's layer, and it is frozen. What
  is passed on is the layer's ReLU output without dropout.
- **aggregate cache** (RETEXO, GCN and GraphSAGE): a layer's input is frozen for all its rounds,
  so its neighbour aggregate without dropout is the same every round. Each worker computes it
  once per layer and reuses it in every scoring pass, in the pass that makes the next layer's
  input, and (with no dropout) in every training pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor, nn

from contracts.datavolume import DataVolume, data_volume
from contracts.layerwidths import layer_dims
from contracts.partition import PartitionMeta
from foundation.errors import UsageError
from foundation.models import StrictModel
from fullgraph.best import Best
from fullgraph.dropout import dropout
from fullgraph.exchange.endpoint import Endpoint
from fullgraph.exchange.kinds import TRAINING_KINDS, TrafficKind
from fullgraph.exchange.ledger import TrafficReport
from fullgraph.exchange.options import ExchangeName, ExchangeOptions
from fullgraph.part import WorkerPart, load_part, random_split_masks
from fullgraph.partitioner import open_partition
from fullgraph.ranks import run_in_threads
from fullgraph.retexo.config import TrainConfig
from fullgraph.retexo.models import (
    GraphLayer,
    assign,
    build_heads,
    build_layers,
    flatten,
    local_graph,
)
from fullgraph.retexo.volume import volume_inputs

METRICS = 7  # loss sum, then (nodes, correct) for train, val, test
# The master's word to the workers before every round and once after the last: whether the round
# before improved validation accuracy (RETEXO keeps that round's weights), and whether to stop.
CONTROL = 2
IMPROVED, STOP = 0, 1
_SPLITS = ("train", "val", "test")


class RoundMetrics(StrictModel):
    round: int
    loss: float
    train_acc: float
    val_acc: float
    test_acc: float


class StageResult(StrictModel):
    """Standard training (stage 0), or one RETEXO layer (stage m)."""

    stage: int
    rounds: list[RoundMetrics]
    best_round: int = Field(description="the round with the best validation accuracy (earliest on ties)")
    best_val_acc: float
    test_acc: float = Field(description="test accuracy (micro-F1) of the best validation round")
    seconds: float


class MeasuredVolume(StrictModel):
    message_passing: int = Field(description="sent + received between workers over Eq. 2's kinds")
    aggregation: int = Field(description="sent + received between workers and master")
    evaluation: int = Field(description="standard training's scoring passes (not in Eq. 2)")
    control: int

    @property
    def total(self) -> int:
        return self.message_passing + self.aggregation


class TrainResult(StrictModel):
    """Everything a run measured: accuracy, bytes by rank and kind, time, and Eq. 2 beside it."""

    config: TrainConfig
    exchange: ExchangeName = Field(
        "mpi", description="what carried the exchanges: mpi (or in-process queues), udp, pinch"
    )
    dataset: str
    workers: int
    partition_method: str
    stages: list[StageResult]
    test_acc: float = Field(description="micro-F1 on test at the best validation round of the final stage")
    traffic: list[TrafficReport] = Field(description="per worker rank, then the master")
    measured: MeasuredVolume = Field(description="summed over workers, as the paper counts")
    predicted: DataVolume
    measured_over_predicted: float = Field(description="measured total / Eq. 2's total for this method")
    seconds: float
    message_passing_seconds: float = Field(description="slowest worker's time in worker-to-worker exchanges")
    aggregation_seconds: float = Field(description="slowest worker's time sending gradients and awaiting weights")


# -- the halo exchange as an autograd function --------------------------------------------------
def _exchange_rows(endpoint: Endpoint, part: WorkerPart, inner_rows: Tensor, kind: TrafficKind, layer: int) -> Tensor:
    """This worker's inner rows -> the halo rows, from their owners (the input of ``layer``)."""
    width = inner_rows.shape[1]
    sends = [inner_rows[rows].numpy() for rows in part.send_rows]
    receives = [np.empty((count, width), dtype=np.float32) for count in part.recv_counts]
    endpoint.exchange(sends, receives, kind, layer)
    return torch.from_numpy(np.concatenate(receives)) if part.halo else inner_rows.new_empty((0, width))


class HaloExchange(torch.autograd.Function):
    """[inner rows] -> [inner rows; halo rows]; backward returns each halo row's gradient to the
    worker that owns it, which adds it to its own (one exchange each way per layer)."""

    @staticmethod
    def forward(ctx, inner_rows: Tensor, endpoint: Endpoint, part: WorkerPart, kind: TrafficKind, layer: int) -> Tensor:
        ctx.endpoint, ctx.part, ctx.layer = endpoint, part, layer
        halo = _exchange_rows(endpoint, part, inner_rows.detach().contiguous(), kind, layer)
        return torch.cat([inner_rows, halo])

    @staticmethod
    def backward(ctx, grad: Tensor):
        part, endpoint = ctx.part, ctx.endpoint
        width = grad.shape[1]
        grad_inner = grad[: part.inner].clone()
        halo_grad = grad[part.inner :].contiguous()
        bounds = np.concatenate([[0], np.cumsum(part.recv_counts)])
        sends = [halo_grad[bounds[q] : bounds[q + 1]].numpy() for q in range(part.parts)]
        receives = [np.empty((len(rows), width), dtype=np.float32) for rows in part.send_rows]
        endpoint.exchange(sends, receives, "representation_gradients", ctx.layer)
        for rows, received in zip(part.send_rows, receives):
            if len(rows):
                grad_inner.index_add_(0, rows, torch.from_numpy(received))
        return grad_inner, None, None, None, None


# -- workers ------------------------------------------------------------------------------------
@dataclass
class _Worker:
    part: WorkerPart
    endpoint: Endpoint
    config: TrainConfig
    masks: dict[str, Tensor]
    generator: torch.Generator
    layers: nn.ModuleList
    heads: nn.ModuleList
    x: Tensor = field(init=False)

    def __post_init__(self) -> None:
        self.graph = local_graph(self.part, self.config.model)
        self.x = self.part.x.clone()
        self.endpoint.ledger.at(0 if self.config.method == "standard" else 1, 1)  # features feed layer 1
        self.x[self.part.inner :] = _exchange_rows(self.endpoint, self.part, self.x[: self.part.inner], "features", 1)

    def next_round(self, flag: np.ndarray) -> bool:
        """The master's word before a round: False once it says stop (after the last round)."""
        self.endpoint.recv(self.endpoint.master, flag, "control")
        if flag[STOP]:
            return False
        self.endpoint.ledger.begin_round()
        return True

    def receive_weights(self, params: list[nn.Parameter]) -> None:
        flat = np.empty(sum(p.numel() for p in params), dtype=np.float32)
        self.endpoint.recv(self.endpoint.master, flat, "weights")
        assign(params, torch.from_numpy(flat))

    def finish_round(self, params: list[nn.Parameter], modules: nn.Module, loss: Tensor, score) -> None:
        """Backpropagate ``loss`` and score the same weights without dropout, then send the
        gradient and the scores. Every exchange with peers comes before the first send to the
        master: the master receives from the workers in turn, so a worker blocked on it must
        not be one a peer still waits for."""
        loss.backward()
        grads = flatten(params, grads=True)
        for p in params:
            p.grad = None
        modules.eval()
        with torch.no_grad():
            logits = score()
        self.endpoint.send(self.endpoint.master, grads.numpy(), "model_gradients")
        self.endpoint.send(self.endpoint.master, self.metrics(loss.detach(), logits), "control")

    def loss(self, logits: Tensor) -> Tensor:
        train = self.masks["train"]
        return F.cross_entropy(logits[train], self.part.y[train], reduction="sum")

    def metrics(self, loss: Tensor, logits: Tensor) -> np.ndarray:
        out = np.zeros(METRICS, dtype=np.float64)
        out[0] = float(loss)
        predicted = logits.argmax(dim=1)
        for i, split in enumerate(_SPLITS):
            mask = self.masks[split]
            out[1 + 2 * i] = int(mask.sum())
            out[2 + 2 * i] = int((predicted[mask] == self.part.y[mask]).sum())
        return out

    def layer_out(self, m: int, x: Tensor, training: bool, aggregate: Tensor | None = None) -> Tensor:
        """Layer ``m`` on ``x``; ``aggregate`` (``x``'s neighbour aggregate) is used only where
        no dropout changes ``x``."""
        if training and self.config.dropout > 0.0:
            aggregate = None
        h = self.layers[m](dropout(x, self.config.dropout, training, self.generator), self.graph, aggregate)
        if m == len(self.layers) - 1:
            return h
        h = F.relu(h)
        return F.normalize(h, dim=1) if self.config.normalize else h

    # standard training ---------------------------------------------------------------------
    def standard_forward(self, training: bool) -> Tensor:
        x = self.x
        for m in range(len(self.layers)):
            x = self.layer_out(m, x, training)
            if m < len(self.layers) - 1:
                kind: TrafficKind = "representations" if training else "evaluation"
                x = HaloExchange.apply(x, self.endpoint, self.part, kind, m + 2)  # the input of layer m + 2
        return x

    def run_standard(self) -> None:
        params = list(self.layers.parameters())
        self.endpoint.ledger.at(0, 0)
        flag = np.zeros(CONTROL, dtype=np.float64)
        while self.next_round(flag):
            self.receive_weights(params)
            self.layers.train()
            loss = self.loss(self.standard_forward(training=True))
            self.finish_round(params, self.layers, loss, lambda: self.standard_forward(training=False))

    # RETEXO ----------------------------------------------------------------------------------
    def run_retexo(self) -> None:
        x = self.x
        last = len(self.layers) - 1
        flag = np.zeros(CONTROL, dtype=np.float64)
        aggregate: Tensor | None = None
        for m in range(len(self.layers)):
            self.endpoint.ledger.at(m + 1, m + 1)
            if m > 0:
                with torch.no_grad():
                    self.layers[m - 1].eval()
                    h = self.layer_out(m - 1, x, training=False, aggregate=aggregate).contiguous()
                x = torch.cat([h, _exchange_rows(self.endpoint, self.part, h, "representations", m + 1)])
            layer = self.layers[m]
            assert isinstance(layer, GraphLayer)  # build_layers makes nothing else
            aggregate = layer.aggregate(x, self.graph) if self.config.caches_aggregates else None
            modules = nn.ModuleList([self.layers[m]] + ([self.heads[m]] if m < last else []))
            params = list(modules.parameters())
            best: Tensor | None = None
            previous: Tensor | None = None
            while True:
                go = self.next_round(flag)
                if flag[IMPROVED] and previous is not None:
                    best = previous
                if not go:
                    break
                self.receive_weights(params)
                previous = flatten(params).clone()
                modules.train()
                loss = self.loss(self.retexo_logits(m, x, training=True, aggregate=aggregate))
                self.finish_round(
                    params, modules, loss, lambda m=m, x=x, a=aggregate: self.retexo_logits(m, x, False, a)
                )
            assert best is not None  # the first round always improves on "no round"
            assign(params, best)

    def retexo_logits(self, m: int, x: Tensor, training: bool, aggregate: Tensor | None) -> Tensor:
        h = self.layer_out(m, x, training, aggregate)
        if m == len(self.layers) - 1:
            return h
        return self.heads[m](dropout(h, self.config.dropout, training, self.generator))


def run_worker(part: WorkerPart, endpoint: Endpoint, config: TrainConfig, classes: int) -> None:
    """Worker ``part.index``: train with the master until it is done, then send the byte counts."""
    generator = torch.Generator().manual_seed(config.seed * 65_537 + part.index)
    if config.split == "random":
        masks = random_split_masks(part, config.seed, config.train_fraction, config.val_fraction)
    else:
        missing = [s for s in _SPLITS if s not in part.masks]
        if missing:
            raise UsageError(f"the dataset has no {', '.join(missing)} split: train with --split random")
        masks = {s: part.masks[s] for s in _SPLITS}
    dims = layer_dims(part.x.shape[1], config.hidden, classes, config.layers)
    worker = _Worker(
        part, endpoint, config, masks, generator, build_layers(config.model, dims, config.heads), build_heads(dims)
    )
    if config.method == "standard":
        worker.run_standard()
    else:
        worker.run_retexo()
    endpoint.send_report()


# -- the master ---------------------------------------------------------------------------------
class Master:
    """Holds the model and Adam; initial weights come from ``torch.manual_seed(config.seed)``,
    drawn when it is built (before any worker thread starts, which share torch's generator)."""

    def __init__(
        self,
        endpoint: Endpoint,
        config: TrainConfig,
        in_dim: int,
        classes: int,
        on_round: Callable[[int, int], object] | None = None,
    ):
        self.endpoint, self.config, self.on_round = endpoint, config, on_round
        torch.manual_seed(config.seed)
        dims = layer_dims(in_dim, config.hidden, classes, config.layers)
        self.layers = build_layers(config.model, dims, config.heads)
        self.heads = build_heads(dims)

    def broadcast(self, array: np.ndarray, kind: TrafficKind) -> None:
        self.endpoint.broadcast(array, kind)

    def round(self, params: list[nn.Parameter], optimizer: torch.optim.Optimizer, r: int) -> RoundMetrics:
        """Gather one round's gradients and metrics (the weights went out already) and step."""
        if self.on_round is not None:
            self.on_round(self.endpoint.ledger.stage, r)
        grads = self.endpoint.reduce(np.empty(sum(p.numel() for p in params), dtype=np.float32), "model_gradients")
        total = np.zeros(METRICS, dtype=np.float64)
        metrics = np.empty(METRICS, dtype=np.float64)
        for w in range(self.endpoint.workers):
            total += self.endpoint.recv(w, metrics, "control")
        train_nodes = max(total[1], 1.0)
        assign(params, torch.from_numpy(grads / np.float32(train_nodes)), grads=True)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        acc = [total[2 + 2 * i] / max(total[1 + 2 * i], 1.0) for i in range(3)]
        return RoundMetrics(round=r, loss=total[0] / train_nodes, train_acc=acc[0], val_acc=acc[1], test_acc=acc[2])

    def optimizer(self, params: list[nn.Parameter]) -> torch.optim.Optimizer:
        return torch.optim.Adam(params, lr=self.config.lr, weight_decay=self.config.weight_decay)

    def run(self) -> list[StageResult]:
        if self.config.method == "standard":
            return [self.run_standard()]
        return [self.run_layer(m) for m in range(len(self.layers))]

    def run_standard(self) -> StageResult:
        return self.run_stage(0, list(self.layers.parameters()))

    def run_layer(self, m: int) -> StageResult:
        last = len(self.layers) - 1
        self.endpoint.ledger.at(m + 1, m + 1)
        params = list(self.layers[m].parameters()) + (list(self.heads[m].parameters()) if m < last else [])
        return self.run_stage(m + 1, params)

    def run_stage(self, stage: int, params: list[nn.Parameter]) -> StageResult:
        """Rounds of ``params`` until the last or until patience is spent; before each round the
        workers hear whether the one before improved validation (RETEXO keeps that round's layer)."""
        start = time.perf_counter()
        optimizer = self.optimizer(params)
        rounds: list[RoundMetrics] = []
        flag = np.zeros(CONTROL, dtype=np.float64)
        best = Best()
        for r in range(self.config.rounds):
            self.broadcast(flag, "control")
            self.endpoint.ledger.begin_round()
            self.broadcast(flatten(params).numpy(), "weights")
            rounds.append(self.round(params, optimizer, r))
            flag[IMPROVED] = float(best.update(r, rounds[-1].val_acc))
            if self.stalled(r, best):
                break
        self.stop(flag)
        return _stage(stage, rounds, time.perf_counter() - start)

    def stalled(self, r: int, best: Best) -> bool:
        """Patience is spent after round ``r``: past ``min_rounds``, validation accuracy has not
        improved for ``patience`` rounds."""
        patience = self.config.patience
        if patience is None or r + 1 < self.config.min_rounds:
            return False
        return r - best.index >= patience

    def stop(self, flag: np.ndarray) -> None:
        """The word after the last round (it still says whether that round improved)."""
        flag[STOP] = 1.0
        self.broadcast(flag, "control")


def _stage(stage: int, rounds: list[RoundMetrics], seconds: float) -> StageResult:
    best = Best()
    for r in rounds:
        best.update(r.round, r.val_acc, r.test_acc)
    return StageResult(
        stage=stage, rounds=rounds, best_round=best.index, best_val_acc=best.val, test_acc=best.test, seconds=seconds
    )


def run_master(master: Master, meta: PartitionMeta, started: float) -> TrainResult:
    """The master: run every stage, collect the workers' byte counts, and report."""
    endpoint, config = master.endpoint, master.config
    stages = master.run()
    reports = [endpoint.recv_report(w) for w in range(endpoint.workers)]
    return summarise(config, meta, stages, reports + [endpoint.report()], time.perf_counter() - started)


def summarise(
    config: TrainConfig, meta: PartitionMeta, stages: list[StageResult], traffic: list[TrafficReport], seconds: float
) -> TrainResult:
    workers = traffic[: meta.parts]
    mp_kinds, agg_kinds = TRAINING_KINDS[:3], TRAINING_KINDS[3:]
    measured = MeasuredVolume(
        message_passing=sum(t.total(mp_kinds) for t in workers),
        aggregation=sum(t.total(agg_kinds) for t in workers),
        evaluation=sum(t.total(("evaluation",)) for t in workers),
        control=sum(t.total(("control",)) for t in workers),
    )
    predicted = data_volume(
        volume_inputs(
            meta, config.model, hidden=config.hidden, layers=config.layers, heads=config.heads, rounds=config.rounds
        )
    )
    expected = predicted.standard if config.method == "standard" else predicted.lazy
    mp_seconds = max((t.seconds(mp_kinds + ("evaluation",)) for t in workers), default=0.0)
    agg_seconds = max((t.seconds(agg_kinds) for t in workers), default=0.0)
    return TrainResult(
        config=config,
        dataset=meta.dataset,
        workers=meta.parts,
        partition_method=meta.method,
        stages=stages,
        test_acc=stages[-1].test_acc,
        traffic=traffic,
        measured=measured,
        predicted=predicted,
        measured_over_predicted=measured.total / expected.total if expected.total else 1.0,
        seconds=seconds,
        message_passing_seconds=mp_seconds,
        aggregation_seconds=agg_seconds,
    )


@dataclass
class RetexoJob:
    """RETEXO or standard training on a partition: a worker per part and a master (a :class:`RankJob`)."""

    partition: Path
    config: TrainConfig
    exchange: ExchangeName = "mpi"
    on_round: Callable[[int, int], object] | None = None
    meta: PartitionMeta = field(init=False)

    def __post_init__(self) -> None:
        self.meta = open_partition(self.partition)

    @property
    def workers(self) -> int:
        return self.meta.parts

    def worker(self, rank: int) -> Callable[[Endpoint], None]:
        part = load_part(self.partition, rank, self.meta)
        return lambda endpoint: run_worker(part, endpoint, self.config, self.meta.num_classes)

    def master(self, endpoint: Endpoint) -> Callable[[], TrainResult]:
        started = time.perf_counter()
        master = Master(endpoint, self.config, self.meta.feature_dim, self.meta.num_classes, self.on_round)
        return lambda: run_master(master, self.meta, started).model_copy(update={"exchange": self.exchange})


def train_local(
    partition: str | Path,
    config: TrainConfig,
    on_round: Callable[[int, int], object] | None = None,
    exchange: ExchangeOptions | None = None,
) -> TrainResult:
    """Train in this process: every worker a thread, the master on the calling thread
    (``on_round(stage, round)`` is called as each round's results come in). The ranks pass
    buffers through queues, or with ``exchange`` udp or pinch over loopback sockets."""
    options = exchange or ExchangeOptions()
    return run_in_threads(RetexoJob(Path(partition), config, options.exchange, on_round), options)
