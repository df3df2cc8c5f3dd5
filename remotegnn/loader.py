"""``DistributedGraphLoader``: PyG's ``NeighborLoader`` contract, batches built by the memory server.

Training code swaps ``NeighborLoader(data, ...)`` for ``DistributedGraphLoader(data, ...)`` and
keeps everything else: the same parameter names and defaults, ``len()``, and batches with the
same fields (seeds first, hop order, int64 local ``edge_index`` with row 0 the neighbour,
``n_id``/``e_id``/``input_id``/``batch_size``/``num_sampled_nodes``/``num_sampled_edges``, node
attributes sliced by ``n_id``, ``transform`` last). Sampling and feature gathering run in the
server's worker processes (``remotegnn.server``); a receiver thread turns frames into ``Data``
ahead of the training loop, so the learner only waits when the server cannot keep up.

``data`` is a PyG ``Data`` or ``HeteroData`` (written to a temporary RemoteGNN dataset, removed on
close; a heterogeneous graph's batches are ``HeteroData``, see ``remotegnn.hetero``) or a
dataset directory, served by worker processes on this host (the local transport). Under
``remotegnn launch`` the batches come over MPI from the job's memory ranks instead: ``data`` is
then the dataset's path on the memory machines, or None for the one ``launch --dataset`` named,
and each learner rank gets its own slice of every epoch's seeds. Batches are zero-copy views of
the shared-memory ring by default and stay valid until the loop moves past them
(``zero_copy=False`` gives batches you can keep, e.g. ``list(loader)``); on a CUDA ``device`` they
are assembled in reused pinned memory (freeing the slot at once) and copied to the GPU on a side
stream, and the training loop's stream waits on that copy's event, not the host. The stages
(receive, stage in pinned memory, feed the device, build the batch) live in ``remotegnn.learner``.

Two options cut what crosses the network every epoch. ``learner_cache`` keeps the hottest feature
rows on the learner (ranked by ``learner_cache_policy``); the memory ranks never send them, and
the learner assembles ``x`` from both. Its default, ``"auto"``, is the RAM available when the
loader starts (the machine's, or its memory cgroup's where that is less) less
``LEARNER_RESERVE_BYTES`` for the training process, under ``remotegnn launch``, and none with
the local transport (the server shares this host's RAM, so a second copy buys nothing).
``wire_dtype`` float16 or bfloat16 halves the bytes of every row sent; ``x`` is converted back
to the stored dtype on arrival (on the device, after the copy) unless ``keep_wire_dtype=True``.
Batches are bit-identical with and without a learner cache.

``device_cache`` (bytes, "auto" or 0, the default) keeps the hottest rows of all on the loader's
device, a tier above ``learner_cache``: those are neither sent nor copied from host memory, and
only the other rows of a batch cross PCIe (``remotegnn.learner.device_cache``).

``sampling="learner"`` (or ``remotegnn launch --sampling learner``) has the learner sample its own
batches over MPI from its own copy of the dataset's structure (the same path as on the memory
machines): the memory ranks then send only the feature rows it lacks, by id, and no batch's ids,
edges or labels cross the link (``remotegnn.mpi.learner_sampled``). Batches are those of
``sampling="memory"``, the default. With the local transport sampling already runs on this host,
so both modes are the same there.
"""

from __future__ import annotations

import os
import queue
import shutil
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import torch
from pydantic import ValidationError
from torch_geometric.data import Data, HeteroData

from contracts.calibration import LEARNER_RESERVE_GIB
from contracts.dataset import DatasetMeta, HeteroMeta
from contracts.stats import PipelineStats
from foundation.errors import UsageError, format_validation_error
from foundation.ram import available_ram_bytes
from foundation.units import GIB
from remotegnn import loader_args as args
from remotegnn.cache.learner import LearnerCache
from remotegnn.events import ProgressEvents
from remotegnn.hetero import HeteroLayout, hop_bounds
from remotegnn.learner.batch import BatchBuilder
from remotegnn.learner.device_cache import DeviceCache, device_cache_bytes
from remotegnn.learner.feed import MIN_AHEAD, DeviceFeed
from remotegnn.learner.inputs import check_source, check_untyped, seed_ids, split_masks
from remotegnn.learner.receive import receive
from remotegnn.loader_state import LoaderState, items_fingerprint
from remotegnn.mpi.world import under_launch
from remotegnn.precision import wire_numpy_dtype
from remotegnn.sampling.sampler import check_type_fanouts
from remotegnn.sampling_mode import sampling_mode
from remotegnn.server import LocalPipeline, PipelineOptions, ServerOptions
from remotegnn.server.caches import CacheReport
from remotegnn.server.ring import batch_bounds
from remotegnn.server.seeds import NodeSeeds, SeedSource, seeds_as_arrays
from remotegnn.server.shard import Shard
from remotegnn.store import GraphDataset

if TYPE_CHECKING:
    from remotegnn.mpi.client import MpiSource

LEARNER_RESERVE_BYTES = int(LEARNER_RESERVE_GIB * GIB)
"""What ``learner_cache="auto"`` leaves the training process (model, optimiser, activations and
the batches in flight): ``contracts.calibration.LEARNER_RESERVE_GIB``, the planner's default too."""
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16}


def learner_cache_bytes(learner_cache, mpi: bool) -> int:
    """The learner cache's budget in bytes for the loader's ``learner_cache`` argument."""
    if learner_cache == "auto":
        return max(0, available_ram_bytes() - LEARNER_RESERVE_BYTES) if mpi else 0
    if learner_cache is None:
        return 0
    if isinstance(learner_cache, bool) or not isinstance(learner_cache, int) or learner_cache < 0:
        raise UsageError(
            f"learner_cache={learner_cache!r}: give a size in bytes (>= 0), 'auto' (the RAM available "
            "less 8 GiB, under `remotegnn launch`) or None for no learner cache"
        )
    return learner_cache


def _with(options: PipelineOptions, **changes) -> PipelineOptions:
    """The options with ``changes`` set (validated, and counted as set by the learner)."""
    return PipelineOptions(**{**options.model_dump(exclude_unset=True), **changes})


def _given(**values) -> dict:
    """The options given (not None): over MPI the memory server's own settings fill the rest."""
    return {key: value for key, value in values.items() if value is not None}


class DistributedGraphLoader:
    """A drop-in ``NeighborLoader`` whose batches come from a RemoteGNN memory server.

    Takes every argument of PyG's ``NeighborLoader`` and torch's ``DataLoader`` by the same
    name: each works with PyG's meaning, or is a documented no-op, or is refused with a
    ``UsageError`` saying what to do instead (``remotegnn.loader_args`` holds that decision
    for each). Working: ``num_neighbors``, ``input_nodes``, ``replace``, ``subgraph_type``
    ('directional' or 'bidirectional'), ``disjoint``, ``weight_attr``, ``transform``,
    ``batch_size``, ``shuffle``, ``drop_last``, ``pin_memory``, ``prefetch_factor``,
    ``generator`` (its seed fixes the draws) and ``timeout`` (0: 60 s, not forever).

    Args:
        data: A PyG ``Data`` or ``HeteroData`` (written to a temporary dataset, removed on
            close), or a dataset directory, served by worker processes on this host. Under
            ``remotegnn launch``: the dataset's path on the memory machines, or None for the
            one ``launch --dataset`` named.
        num_neighbors: Neighbours sampled per hop, as PyG's.
        input_nodes: The seed nodes: None (every node), a split's name ("train"), a tensor of
            node ids or a bool mask; on a ``HeteroData`` a node type or (node type, ids or mask).
        input_time: Refused unless None: the dataset format stores no timestamps.
        replace: Sample neighbours with replacement, as PyG's.
        subgraph_type: "directional" (PyG's default) or "bidirectional"; "induced" is refused.
        disjoint: Each seed gets its own subgraph, as PyG's.
        temporal_strategy: Refused unless "uniform": the dataset format stores no timestamps.
        time_attr: Refused unless None, as ``input_time``.
        weight_attr: The edge attribute that weights the neighbour draws, as PyG's.
        transform: A function applied to each batch before it is yielded.
        transform_sampler_output: Refused unless None: sampling runs on the memory server, so no
            ``SamplerOutput`` reaches this process; change the batch with ``transform``.
        is_sorted: A no-op: a dataset stores its edges sorted by target already.
        filter_per_worker: A no-op: batches are assembled in the loader's receiver thread, off
            the training loop, which is what ``filter_per_worker=True`` buys.
        neighbor_sampler: Refused unless None: sampling runs on the memory server; give its
            options (``num_neighbors``, ``replace``, ``disjoint``, ``weight_attr``) instead.
        directed: Refused unless True (PyG deprecates False); use ``subgraph_type``.
        batch_size: Seeds per batch, as DataLoader's.
        shuffle: Draw a new permutation of the seeds each epoch, as DataLoader's.
        drop_last: Leave out each epoch's last, smaller batch, as DataLoader's.
        num_workers: A no-op: the memory server's batch creators and vector loaders do that
            work; size them with ``server=ServerOptions(batch_creators=..., vector_loaders=...)``.
        pin_memory: Copy CPU batches into pinned memory (on a CUDA ``device`` batches are staged
            through pinned memory anyway; without CUDA it is ignored with a warning).
        persistent_workers: A no-op: the memory server's processes live as long as the loader.
        prefetch_factor: Batches built ahead of the training loop (at least 1; default 2).
        worker_init_fn: Refused unless None: no DataLoader worker processes run here; do
            per-process set-up before the training loop.
        generator: A ``torch.Generator`` whose seed fixes the draws (give it or ``seed``).
        timeout: The longest wait for a batch in seconds; 0 means 60 s, not forever.
        server: ``ServerOptions``: the memory server's processes, ring and RAM cache. Over MPI,
            the server's own settings (``remotegnn serve --cache-gb`` ...) apply to whatever
            this does not set.
        seed: Fixes the epoch permutations and sampling draws. By default drawn from torch's
            generator as DataLoader's shuffle is; 0 under MPI.
        device: Where batches are delivered. On a CUDA device they are assembled in reused
            pinned memory and copied on a side stream that the training loop's stream waits on.
        zero_copy: Batches are views of the shared ring, valid until the loop moves on (True),
            or copies you can keep, e.g. ``list(loader)`` (False).
        volume_limits: ``VolumeLimits``: an emulated volume's MB/s and IOPS, shared by the
            local server's vector loaders (over MPI, give them to ``remotegnn serve
            --volume-mbps/--volume-iops``).
        transport: "auto" (MPI under ``remotegnn launch``, else local), "local" or "mpi".
        learner_cache: Bytes of the hottest feature rows kept on the learner, which the memory
            ranks then never send; "auto" (the RAM free when the loader starts less
            ``LEARNER_RESERVE_BYTES``, under ``remotegnn launch``; none with the local
            transport) or None.
        learner_cache_policy: How the learner's rows are ranked: degree, presample or auto (it
            ranks the device cache's rows too).
        device_cache: Bytes of the ranking's first rows kept in the device's memory (the
            learner cache holds the next): a number, "auto" or 0 (off).
        wire_dtype: float32, float16 or bfloat16 for the rows sent; a half precision halves
            their bytes, and ``x`` is converted back to the stored dtype on arrival.
        keep_wire_dtype: Deliver ``x`` in the wire dtype instead of converting it back.
        edge_ids: Batches carry ``e_id`` only when asked, or when the loader needs it (a Data's
            edge attributes, bidirectional batches, heterogeneous graphs), where PyG's always
            do, since edge ids were a third of an int64 batch's bytes on the wire.
        sampling: Who samples the batches over MPI: "memory" or "learner" (None: ``remotegnn
            launch --sampling``'s, else memory).
        **unsupported: Refused with what to do instead: a memory-server option (pass it in
            ``server``), DataLoader's ``collate_fn``, ``sampler`` and the like, or a misspelling.

    ``caches`` says what each memory rank's session caches hold.
    """

    def __init__(
        self,
        data: Data | str | os.PathLike[str] | None,
        num_neighbors,
        input_nodes=None,
        input_time=None,
        replace: bool = False,
        subgraph_type: str = "directional",
        disjoint: bool = False,
        temporal_strategy: str = "uniform",
        time_attr: str | None = None,
        weight_attr: str | None = None,
        transform: Callable[[Data], Data] | None = None,
        transform_sampler_output=None,
        is_sorted: bool = False,
        filter_per_worker: bool | None = None,
        neighbor_sampler=None,
        directed: bool = True,
        *,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        num_workers: int = 0,
        pin_memory: bool = False,
        persistent_workers: bool = False,
        prefetch_factor: int | None = None,
        worker_init_fn=None,
        generator: torch.Generator | None = None,
        timeout: float = 0,
        server: ServerOptions | None = None,
        seed: int | None = None,
        device: str | torch.device = "cpu",
        zero_copy: bool = True,
        volume_limits=None,
        transport: str = "auto",
        learner_cache: int | str | None = "auto",
        learner_cache_policy: str | None = None,
        device_cache: int | str | None = 0,
        wire_dtype: str | None = None,
        keep_wire_dtype: bool = False,
        edge_ids: bool = False,
        sampling: str | None = None,
        **unsupported,
    ):
        args.check_extra(unsupported)
        args.check_refused(
            {
                "input_time": input_time,
                "time_attr": time_attr,
                "temporal_strategy": temporal_strategy,
                "transform_sampler_output": transform_sampler_output,
                "neighbor_sampler": neighbor_sampler,
                "worker_init_fn": worker_init_fn,
                "directed": directed,
            }
        )
        del num_workers, persistent_workers, is_sorted, filter_per_worker  # no-ops: see loader_args.NO_OPS
        args.check_transport(transport, server)
        mpi = transport == "mpi" or (transport == "auto" and under_launch())
        self.sampling = sampling_mode(sampling)
        check_source(data, input_nodes, mpi)
        self.subgraph_type = args.check_subgraph_type(subgraph_type)
        self._num_neighbors = num_neighbors  # per edge type on a heterogeneous graph: resolved on open
        try:
            self.options = PipelineOptions(
                num_neighbors=args.hop_fanouts(num_neighbors),
                batch_size=batch_size,
                replace=replace,
                disjoint=disjoint,
                weight_attr=weight_attr,
                edge_ids=edge_ids or self.subgraph_type == "bidirectional",
                shuffle=shuffle,
                drop_last=drop_last,
                seed=args.sampling_seed(seed, generator, mpi),
                timeout_s=args.timeout_seconds(timeout),
                learner_cache_bytes=learner_cache_bytes(learner_cache, mpi),
                **_given(learner_cache_policy=learner_cache_policy, wire_dtype=wire_dtype),
                **self._pipeline_extras(),
                **(server.model_dump(exclude_unset=True) if server is not None else {}),
            )
        except ValidationError as exc:  # the arguments' names are the fields' names
            raise UsageError(f"DistributedGraphLoader: {format_validation_error(exc)}") from None
        self.transform, self.zero_copy = transform, zero_copy
        self.prefetch = args.prefetch_batches(prefetch_factor)
        self.keep_wire_dtype = keep_wire_dtype
        self.device = torch.device(device)
        self.pin_memory = args.pins_batches(pin_memory, self.device)
        self._device_cache = device_cache  # resolved to bytes once the dataset's rows are known
        self._tempdir: str | None = None
        self._source = None
        self._hetero: HeteroLayout | None = None
        self._input_type: str | None = None
        self._user_ids: torch.Tensor | None = None  # a reordered dataset: the user's id of each stored node
        self._epoch, self._first = 0, 0  # where the next epoch starts: (epoch, batch)
        self._current: tuple[int, int] | None = None  # the epoch being yielded: (epoch, batches yielded)
        self._fingerprint: str | None = None  # of the input items, for state_dict (computed once)
        self.last_stats: PipelineStats | None = None
        self._open(data, input_nodes, volume_limits, mpi)

    def _open(self, data, input_nodes, volume_limits, mpi: bool) -> None:
        """Reach the batches (the memory ranks over MPI, or a pipeline of its own) and the device
        that takes them, with the rows the device caches uploaded once."""
        if mpi:
            if volume_limits is not None:
                raise UsageError(
                    "volume_limits: over MPI the memory ranks read the volume; give the limits to "
                    "`remotegnn serve --volume-mbps/--volume-iops` (launch --serve-arg)"
                )
            self._open_mpi(data, input_nodes)
        else:
            self._open_local(data, input_nodes, volume_limits)
        self._device_attrs = {key: value.to(self.device) for key, value in self._node_attrs().items()}
        self._feed = DeviceFeed(
            self.device,
            DeviceCache.upload(self._pipeline.device_rows, self.device),
            zero_copy=self.zero_copy,
            pin_memory=self.pin_memory,
            ahead=self._ahead,
        )
        self._pipeline.device_rows = LearnerCache.empty()  # the device holds them now
        self._progress = ProgressEvents(self._learner.index)

    def _open_mpi(self, data, input_nodes) -> None:
        from remotegnn.mpi.client import MpiSource
        from remotegnn.mpi.world import world

        here = world()
        self._learner = Shard(index=here.learner_index, count=here.learners)
        kind: type[MpiSource] = MpiSource
        if self.sampling == "learner":
            from remotegnn.mpi.learner_sampled import LearnerSampledSource

            kind = LearnerSampledSource
        source = kind(here, None if data is None else str(Path(data).resolve()), timeout_s=self.options.timeout_s)
        described, splits, user_ids = source.describe()
        meta = DatasetMeta.model_validate(described)
        self._use_order(user_ids)
        self.seeds = self._seed_source(input_nodes, meta, splits)
        self._masks = split_masks(meta.num_nodes, splits)
        self._feature_dtype = TORCH_DTYPES[meta.feature_dtype]
        self._size_device_cache(meta)
        source.open(
            self.seeds,
            self.options,
            self._learner,
            buffers=max(self.prefetch + 2, self.options.ring_slots),
            num_nodes=meta.num_nodes,
        )
        self._pipeline: LocalPipeline | MpiSource = source
        self.caches: list[CacheReport] = source.caches

    def _open_local(self, data, input_nodes, volume_limits) -> None:
        self._learner = Shard()
        self._source = data if isinstance(data, Data) else None  # a HeteroData keeps only x, y and masks
        if self._source is not None and any(
            self._source.is_edge_attr(key) for key, _ in self._source.items() if key != "edge_index"
        ):
            self.options = _with(self.options, edge_ids=True)  # its edge attributes are sliced by e_id
        if isinstance(data, Data | HeteroData):
            from remotegnn.convert._common import ConvertWarning
            from remotegnn.convert.pyg import from_pyg
            from remotegnn.errors import ConvertError

            self._tempdir = tempfile.mkdtemp(prefix="remotegnn-loader-")
            weakref.finalize(self, shutil.rmtree, self._tempdir, ignore_errors=True)
            with warnings.catch_warnings():  # attributes the format drops are sliced from ``data`` itself
                warnings.simplefilter("ignore", ConvertWarning)
                try:
                    from_pyg(data, Path(self._tempdir) / "data", name="loader", weight_attr=self.options.weight_attr)
                except ConvertError as exc:  # the caller's Data or arguments: a usage error here
                    raise UsageError(str(exc)) from None
            data = Path(self._tempdir) / "data"
        dataset = GraphDataset.open(data)
        meta = dataset.meta
        splits = {name: dataset.user_split(name) for name in meta.splits}
        self._use_order(dataset.user_ids)
        self.seeds = self._seed_source(input_nodes, meta, splits)
        self._masks = split_masks(meta.num_nodes, splits) if self._source is None else {}
        self._feature_dtype = TORCH_DTYPES[meta.feature_dtype]
        self._size_device_cache(meta)
        pipeline = LocalPipeline(dataset, self.seeds, self.options, volume_limits=volume_limits)
        self._pipeline = pipeline
        self.caches = [pipeline.caches.report]

    def _size_device_cache(self, meta: DatasetMeta) -> None:
        """The device tier's budget (``device_cache``), now that the rows' size is known."""
        options = self.options
        wire = wire_numpy_dtype(options.wire_dtype, meta.feature_dtype)
        largest, _ = batch_bounds(
            options.num_neighbors,
            self.seeds.most_seeds(options.batch_size),
            meta.num_nodes,
            meta.num_edges,
            options.replace,
            options.disjoint,
        )
        budget = device_cache_bytes(
            self._device_cache,
            self.device,
            row_bytes=meta.feature_dim * wire.itemsize,
            has_features=meta.feature_dim > 0,
            largest_batch_nodes=largest,
        )
        self.options = _with(self.options, device_cache_bytes=budget)

    def _use_order(self, user_ids: np.ndarray | None) -> None:
        """A reordered dataset: batches' ``n_id`` arrive as stored positions and leave as user ids."""
        if user_ids is not None:
            self._user_ids = torch.from_numpy(np.asarray(user_ids, dtype=np.int64)).to(self.device)

    # -- what a link loader changes ----------------------------------------------------------------
    def _seed_source(self, input_nodes, meta: DatasetMeta, splits: dict[str, np.ndarray]) -> SeedSource:
        """What batches are built around: the input nodes (a link loader: its edges). On a
        heterogeneous graph, also the per-edge-type fanouts (``HeteroLayout``)."""
        if meta.hetero is None:
            check_untyped(self._num_neighbors, input_nodes)
            return NodeSeeds(*seed_ids(input_nodes, meta.num_nodes, splits))
        self._hetero = self._use_types(meta.hetero)
        self._input_type, nodes, ids = self._hetero.seeds(input_nodes, splits)
        return NodeSeeds(nodes, ids)

    def _use_types(self, hetero: HeteroMeta) -> HeteroLayout:
        """Sample a heterogeneous graph: fanouts per edge type, batches split into types."""
        if self.options.disjoint or self.options.weight_attr or self.subgraph_type != "directional":
            raise UsageError(
                "disjoint, weight_attr and subgraph_type='bidirectional' are not supported on heterogeneous graphs yet"
            )
        layout = HeteroLayout(hetero)
        per_type = check_type_fanouts(layout.fanouts(self._num_neighbors))
        self.options = _with(
            self.options, type_fanouts=per_type.tolist(), num_neighbors=hop_bounds(per_type), edge_ids=True
        )  # a batch's edge ids say each edge's type
        return layout

    def _pipeline_extras(self) -> dict:
        """Pipeline options beyond NeighborLoader's (a link loader: its negative sampling)."""
        return {}

    def _begin_epoch(self, epoch: int) -> None:
        """Called before an epoch's batches are received (a link loader works out their labels)."""

    def _decorate(self, batch: Data | HeteroData, index: int) -> None:
        """Add what batch ``index`` carries beyond a node batch (a link loader: its labelled edges)."""

    def __len__(self) -> int:
        return self._pipeline.num_batches

    # -- resuming ---------------------------------------------------------------------------------
    STATE_LOADER: ClassVar[Literal["node", "link"]] = "node"

    def state_dict(self) -> dict[str, Any]:
        """Where this loader is: a plain dict (torchdata's ``StatefulDataLoader`` convention) from
        which ``load_state_dict`` on a loader built the same way resumes with exactly the batches
        this one has not yet yielded, in the same order. Take it between batches (in the training
        loop, after the step on the batch just yielded) or between epochs."""
        epoch, yielded = self._current if self._current is not None else (self._epoch, self._first)
        if self._fingerprint is None:
            self._fingerprint = items_fingerprint(seeds_as_arrays(self.seeds))
        options = self.options
        return LoaderState(
            loader=self.STATE_LOADER,
            epoch=epoch,
            batches_yielded=yielded,
            num_batches=len(self),
            seed=options.seed,
            shuffle=options.shuffle,
            batch_size=options.batch_size,
            drop_last=options.drop_last,
            num_neighbors=list(options.num_neighbors),
            learner=self._learner.index,
            learners=self._learner.count,
            items=self.seeds.items,
            items_sha256=self._fingerprint,
        ).model_dump()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from ``state`` (``state_dict()`` of a loader built the same way, seed included):
        the next ``iter()`` yields the rest of the epoch it names. A state of another loader (other
        seeds, seed, batch size, fanouts or learner ranks) is refused, naming what differs."""
        saved = LoaderState.parse(state)
        mine = LoaderState.parse(self.state_dict())
        saved.check_matches(mine)
        self._epoch, self._first = saved.next_position()
        self._current = None

    # -- iteration --------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Data]:
        began = time.perf_counter()
        pipeline, feed = self._pipeline, self._feed
        epoch, first = self._epoch, self._first
        count = pipeline.start_epoch(epoch, first=first)
        self._begin_epoch(epoch)
        feed.start_epoch()
        self._epoch, self._first = epoch + 1, 0
        self._current = (epoch, first)
        ready: queue.Queue = queue.Queue(maxsize=self._ahead)
        stop = threading.Event()
        build = self._builder().build
        receiver = threading.Thread(
            target=receive,
            args=(pipeline, feed, build, range(first, count), ready, stop),
            daemon=True,
            name="remotegnn receiver",
        )
        receiver.start()
        waited = 0.0  # the training loop's stall: time spent here with no batch ready
        try:
            for b in range(first, count):
                started = time.perf_counter()
                item = ready.get()
                waited += time.perf_counter() - started
                if isinstance(item, BaseException):
                    raise item
                batch, fed = item
                feed.hand_over(fed, batch)
                self._current = (epoch, b + 1)
                yield batch
                if fed.held:
                    pipeline.release(b)
                self._progress.batch_taken(epoch, b + 1 - first)
            stats = pipeline.stats().with_feed(feed.epoch_counters())
            self.last_stats = stats.model_copy(update={"learner_stall_s": waited})
            self._progress.epoch_ended(epoch, time.perf_counter() - began, count - first, waited, self.last_stats)
        finally:
            self._current = None  # done, or abandoned: the next epoch is where this loader resumes
            stop.set()
            receiver.join()

    @property
    def _ahead(self) -> int:
        """Batches built ahead of the training loop: ``prefetch_factor``'s, at least ``MIN_AHEAD``
        on CUDA (copies overlap the step); on a CPU device batches that point into the ring must
        leave a slot free for the next one."""
        if self.device.type == "cuda":
            return max(MIN_AHEAD, self.prefetch)
        return min(self.prefetch, self.options.ring_slots - 1)

    def _builder(self) -> BatchBuilder:
        return BatchBuilder(
            device=self.device,
            feature_dtype=self._feature_dtype,
            keep_wire_dtype=self.keep_wire_dtype,
            disjoint=self.options.disjoint,
            bidirectional=self.subgraph_type == "bidirectional",
            node_attrs=self._device_attrs,
            source=self._source,
            user_ids=self._user_ids,
            hetero=self._hetero,
            input_type=self._input_type,
            transform=self.transform,
            decorate=self._decorate,
        )

    def _node_attrs(self) -> dict[str, torch.Tensor]:
        """Node-level attributes the frame does not carry (masks; a Data's own extras), kept on
        the device once (``_device_attrs``) and sliced by ``n_id`` per batch."""
        if self._source is None:
            return self._masks
        source = self._source
        return {
            k: v
            for k, v in source.items()
            if k not in ("x", "y") and isinstance(v, torch.Tensor) and source.is_node_attr(k)
        }

    # -- lifetime ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the server's processes and remove a temporary dataset (also on garbage collection)."""
        self._pipeline.close()
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)

    def __enter__(self) -> DistributedGraphLoader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(batches={len(self)}, num_neighbors={self.options.num_neighbors})"
