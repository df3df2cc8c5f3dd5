"""Every NeighborLoader and DataLoader argument: works, is a documented no-op, or is refused with a
UsageError naming it (remotegnn.loader_args), through the real loader."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch_geometric.loader import NeighborLoader

from foundation.errors import UsageError
from remotegnn import loader_args
from remotegnn.loader import DistributedGraphLoader
from remotegnn.server import ServerOptions
from tests.remotegnn.test_loader import FAST, golden_data

DATALOADER_ARGS = [
    "batch_size",
    "shuffle",
    "drop_last",
    "num_workers",
    "pin_memory",
    "persistent_workers",
    "prefetch_factor",
    "worker_init_fn",
    "generator",
    "timeout",
]


def test_the_loader_takes_every_neighbor_loader_and_data_loader_argument_by_name():
    ours = inspect.signature(DistributedGraphLoader).parameters
    theirs = [name for name in inspect.signature(NeighborLoader).parameters if name not in ("data", "kwargs")]
    assert [name for name in theirs + DATALOADER_ARGS if name not in ours] == []
    for name in theirs:  # the same defaults, so a script that leaves one out gets PyG's behaviour
        assert ours[name].default == inspect.signature(NeighborLoader).parameters[name].default, name


@pytest.mark.parametrize(
    "argument, message",
    [
        ({"input_time": torch.zeros(14)}, "input_time=tensor.*temporal sampling is not supported"),
        ({"time_attr": "time"}, "time_attr='time': temporal sampling is not supported"),
        ({"temporal_strategy": "last"}, "temporal_strategy='last': temporal sampling"),
        ({"transform_sampler_output": print}, "transform_sampler_output=.*change the batch with transform="),
        ({"neighbor_sampler": object()}, "neighbor_sampler=.*give its options"),
        ({"worker_init_fn": print}, "worker_init_fn=.*per-process set-up before the training loop"),
        ({"directed": False}, r"directed=False \(deprecated in PyG"),
        ({"subgraph_type": "induced"}, "subgraph_type='induced': choose 'directional'"),
        ({"collate_fn": print}, "collate_fn: not supported by DistributedGraphLoader: .*transform="),
        ({"sampler": [1, 2]}, "sampler: not supported.*input_nodes"),
        ({"batch_sampler": [1, 2]}, "batch_sampler: not supported"),
        ({"multiprocessing_context": "fork"}, "multiprocessing_context: not supported"),
        ({"pin_memory_device": "cuda"}, "pin_memory_device: not supported.*device='cuda:N'"),
        ({"in_order": False}, "in_order: not supported"),
        (
            {"cache_bytes": 100},
            r"cache_bytes=100: a memory-server option; pass it as server=ServerOptions\(cache_bytes=100\)",
        ),
        ({"vector_loaders": 2}, r"server=ServerOptions\(vector_loaders=2\)"),
        ({"batchsize": 4}, "unexpected argument 'batchsize'; did you mean batch_size"),
        ({"server": {"cache_bytes": 1}}, r"server: expected ServerOptions\(...\), got dict"),
        (
            {"num_neighbors": {("a", "to", "b"): [2]}},
            "num_neighbors: a dict of fanouts per edge type needs a heterogeneous",
        ),
        ({"num_neighbors": {("a", "to", "b"): 2}}, "num_neighbors: give a list of fanouts per edge type"),
        ({"num_neighbors": [2.5, 1]}, r"num_neighbors=\[2.5, 1\]: give one fanout per hop as a list of integers"),
        ({"num_neighbors": "15,10"}, "num_neighbors='15,10': give one fanout per hop"),
        ({"num_neighbors": 5}, "num_neighbors=5: give one fanout per hop"),
        ({"num_neighbors": [0]}, "each fanout must be positive, or -1"),
        (
            {"input_nodes": ("paper", torch.ones(14, dtype=torch.bool))},
            r"input_nodes=\(type, nodes\) needs a heterogeneous",
        ),
        ({"seed": 1, "generator": torch.Generator()}, "seed and generator both fix the draws"),
        ({"generator": 3}, "generator: expected a torch.Generator"),
        ({"seed": -1}, "seed=-1: give an integer >= 0"),
        ({"timeout": -1}, "timeout=-1: give the longest wait"),
        ({"prefetch_factor": 0}, "prefetch_factor=0: give the batches to build ahead"),
        ({"batch_size": 0}, "batch_size: Input should be greater than 0"),
        ({"weight_attr": "edge_weight"}, "weight_attr='edge_weight' must name a 1-D tensor"),
    ],
)
def test_refused_arguments_are_named_with_what_to_do(argument, message):
    arguments = {"num_neighbors": [2], **argument}
    with pytest.raises(UsageError, match=message):
        DistributedGraphLoader(golden_data(), **arguments)


def test_a_dataset_without_the_named_weights_is_refused(rmat):
    with pytest.raises(UsageError, match="weight_attr='w': the dataset stores none as edge weights.*--weight-attr"):
        DistributedGraphLoader(rmat.path, [2], weight_attr="w", **FAST)


def test_no_op_arguments_are_accepted_as_pyg_examples_pass_them():
    with DistributedGraphLoader(
        golden_data(),
        [2],
        batch_size=4,
        num_workers=4,
        persistent_workers=True,
        is_sorted=True,
        filter_per_worker=False,
        **FAST,
    ) as loader:
        assert sum(len(b.input_id) for b in loader) == 14
    assert set(loader_args.NO_OPS) == {"num_workers", "persistent_workers", "is_sorted", "filter_per_worker"}


def test_pin_memory_without_cuda_warns_as_data_loader_does_and_still_loads():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: pin_memory pins here")
    with pytest.warns(UserWarning, match="pin_memory=True, but no CUDA device"):
        loader = DistributedGraphLoader(golden_data(), [2], batch_size=7, pin_memory=True, **FAST)
    with loader:
        assert [len(b.input_id) for b in loader] == [7, 7]


def test_a_generator_fixes_the_draws_as_its_seed_does():
    def epoch(**draws) -> list[list[int]]:
        options = {"server": FAST["server"], "timeout": FAST["timeout"]}
        with DistributedGraphLoader(golden_data(), [2, 2], batch_size=3, shuffle=True, **options, **draws) as loader:
            return [b.n_id.tolist() for b in loader]

    generator = torch.Generator().manual_seed(1234)
    assert epoch(generator=generator) == epoch(seed=1234) != epoch(seed=1235)


def test_timeout_and_prefetch_factor_keep_data_loader_meanings():
    assert loader_args.timeout_seconds(0) == loader_args.DEFAULT_TIMEOUT_S  # 0: bounded, not forever
    assert loader_args.timeout_seconds(2.5) == 2.5
    assert loader_args.prefetch_batches(None) == loader_args.DEFAULT_PREFETCH
    with DistributedGraphLoader(
        golden_data(), [2], prefetch_factor=5, timeout=7, **{"server": FAST["server"]}
    ) as loader:
        assert loader.prefetch == 5 and loader.options.timeout_s == 7


def test_server_options_reach_the_memory_server():
    server = ServerOptions(batch_creators=1, vector_loaders=1, ring_slots=3, cache_bytes=64)
    with DistributedGraphLoader(golden_data(), [2], server=server, timeout=20) as loader:
        assert loader.options.ring_slots == 3 and loader.options.cache_bytes == 64
        assert "ring_slots" in loader.options.model_fields_set  # set, so it overrides a server's own default
        assert "wire_dtype" not in loader.options.model_fields_set  # left to the server
