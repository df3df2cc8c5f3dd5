"""The learners' rendezvous: the first learner offers every address of its machine, loopback last,
and another learner takes the first it can connect to, and sends gloo's and NCCL's own
connections out of the interface the rendezvous used. (Two learners training over it: the
example's data-parallel test.)"""

from __future__ import annotations

import socket

import pytest
import torch

from foundation.errors import UsageError
from remotegnn import distributed
from remotegnn.distributed import Rendezvous


@pytest.fixture
def listening():
    with socket.create_server(("127.0.0.1", 0)) as server:  # on loopback only: 127.0.0.2 is refused
        yield server.getsockname()[1]


def test_this_machines_addresses_end_with_loopback():
    addresses = distributed._own_addresses()
    assert list(addresses)[-1] == "127.0.0.1" and addresses["127.0.0.1"] == "lo"


def test_the_first_address_that_answers_is_taken_with_this_sides_own(listening):
    meeting = Rendezvous(addresses=["127.0.0.2", "127.0.0.1"], port=listening)
    assert distributed._reachable(meeting) == ("127.0.0.1", "127.0.0.1")


def test_no_address_answering_names_the_way_out(listening):
    with pytest.raises(UsageError, match="set MEMORYBRIDGE_LEARNER_ADDRESS to one that does"):
        distributed._reachable(Rendezvous(addresses=["127.0.0.2"], port=listening))


def test_gloo_and_nccl_leave_by_the_rendezvous_interface_unless_one_is_named(monkeypatch):
    environment = {"NCCL_SOCKET_IFNAME": "ens5"}  # the user's choice stands
    monkeypatch.setattr(distributed.os, "environ", environment)
    distributed._use_interface(distributed._own_addresses().get("127.0.0.1"))  # the rendezvous went over lo
    assert environment == {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "ens5"}


def test_a_rendezvous_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="addresses"):
        Rendezvous.model_validate_json(b'{"port": 80}')


@pytest.mark.parametrize(
    "backend, device",
    [
        ("gloo", "cpu"),
        pytest.param(
            "nccl",
            "cuda",
            marks=pytest.mark.skipif(
                not torch.cuda.is_available(), reason="needs a CUDA GPU (NCCL's path cannot run without one)"
            ),
        ),
    ],
)
def test_one_data_parallel_rank_trains_as_the_model_alone(backend, device, tmp_path):
    """DistributedDataParallel over a one-rank group (NCCL on a GPU, as a learner with one GPU
    would run it) takes the same steps as the bare model: the all-reduce of one rank and the
    division by a world size of one change nothing but rounding."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch_geometric.nn import GraphSAGE

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(300, 16, generator=generator)
    edge_index = torch.randint(0, 300, (2, 2000), generator=generator)
    y = torch.randint(0, 4, (300,), generator=generator)
    learners = distributed.Learners(rank=0, size=1, device=torch.device(device))

    def trained(wrap) -> list[torch.Tensor]:
        torch.manual_seed(0)
        model = GraphSAGE(16, 32, num_layers=2, out_channels=4).to(learners.device)
        module = wrap(model)
        optimizer = torch.optim.Adam(module.parameters(), lr=0.01)
        for _ in range(5):
            optimizer.zero_grad()
            out = module(x.to(learners.device), edge_index.to(learners.device))
            torch.nn.functional.cross_entropy(out, y.to(learners.device)).backward()
            optimizer.step()
        return [p.detach().cpu() for p in model.parameters()]

    alone = trained(lambda model: model)
    dist.init_process_group(backend, store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    try:
        parallel = trained(lambda model: DistributedDataParallel(model, device_ids=learners.device_ids))
    finally:
        dist.destroy_process_group()
    for a, b in zip(alone, parallel, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
