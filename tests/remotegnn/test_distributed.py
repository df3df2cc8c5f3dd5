"""The learners' rendezvous: the first learner offers every address of its machine, loopback last,
and another learner takes the first it can connect to, and sends gloo's and NCCL's own
connections out of the interface the rendezvous used. (Two learners training over it: the
example's data-parallel test.)"""

from __future__ import annotations

import socket

import pytest

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
    distributed._use_interface("127.0.0.1")
    assert environment == {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "ens5"}


def test_a_rendezvous_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="addresses"):
        Rendezvous.model_validate_json(b'{"port": 80}')
