"""The emulated links: a TCP stream between two hosts gets the tbf rate of the narrower end."""

from __future__ import annotations

import json
import subprocess

import pytest

from testbed import job, lifecycle
from tests.testbed.conftest import probe_argv

PORT = "5201"
SEND_S = "1.0"


def transfer_gbit(state_dir, bed, sender: str, receiver: str) -> float:
    """Stream from ``sender`` to ``receiver`` for SEND_S and return the receiver's measured rate."""
    server = subprocess.Popen(
        job.host_command(state_dir, bed, receiver, probe_argv("tcp-receive", PORT)), stdout=subprocess.PIPE, text=True
    )
    try:
        assert json.loads(server.stdout.readline()) == {"listening": int(PORT)}
        address = str(bed.host(receiver).address)
        subprocess.run(
            job.host_command(state_dir, bed, sender, probe_argv("tcp-send", address, PORT, SEND_S)),
            check=True,
            timeout=30,
        )
        result = json.loads(server.stdout.readline())
        assert server.wait(timeout=30) == 0
    finally:
        server.kill()
        server.wait()
    return result["gbit_s"]


@pytest.mark.parametrize(
    ("link", "learner", "expected"),
    [
        (1.0, None, 1.0),  # both ends at 1 Gbit/s
        (2.0, 0.5, 0.5),  # the learner's download (the switch end of its veth) is the narrower end
        (0.5, 2.0, 0.5),  # the memory host's upload (its own end) is
    ],
)
def test_a_tcp_stream_gets_the_narrower_ends_rate(make_testbed, state_dir, link, learner, expected):
    bed = make_testbed(link_gbit=link, learner_gbit=learner)
    assert lifecycle.status(state_dir, bed.name).healthy
    rate = transfer_gbit(state_dir, bed, "m0", "l0")
    # TCP payload is 0.94-0.96 of a tbf rate here (headers, tc's accounting); the band is loose
    # on purpose, for a shared 2-core machine, but an unshaped veth runs at 10+ Gbit/s.
    assert 0.8 * expected <= rate <= 1.02 * expected, f"{rate:.3f} Gbit/s through a {expected} Gbit/s link"


def test_every_host_reaches_every_other_through_the_switch(make_testbed, state_dir):
    bed = make_testbed(memory_hosts=2, link_gbit=5.0)
    assert transfer_gbit(state_dir, bed, "m1", "m0") > 1.0  # memory hosts talk to each other too
    assert transfer_gbit(state_dir, bed, "l0", "m1") > 1.0


def test_a_flow_cap_limits_each_tcp_stream_below_the_link(make_testbed, state_dir):
    bed = make_testbed(link_gbit=2.0, flow_gbit=0.5)
    assert lifecycle.status(state_dir, bed.name).healthy  # the htb link class holds the link's rate
    rate = transfer_gbit(state_dir, bed, "m0", "l0")
    # Below the cap is what this test is for; the lower bound only says the cap is not far under its
    # rate. It is looser than the links' own band: a capped stream measured 0.367 Gbit/s (73%) once
    # while more CPU-bound processes than cores ran beside it, where the uncapped link test held.
    assert 0.6 * 0.5 <= rate <= 1.02 * 0.5, f"{rate:.3f} Gbit/s on one flow capped at 0.5 of a 2 Gbit/s link"
    back = transfer_gbit(state_dir, bed, "l0", "m0")  # the learner's flows are capped too
    assert back <= 1.02 * 0.5, back
