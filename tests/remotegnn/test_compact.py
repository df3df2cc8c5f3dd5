"""The compact batch encoding: exact round trips, the narrow widths it picks, and forged frames refused."""

from __future__ import annotations

import numpy as np
import pytest

from contracts import wirebytes
from remotegnn import compact, wire
from remotegnn.cache.learner import LearnerCache, Received
from remotegnn.sampling import NeighborSampler

SEEDS = 64


def _sampled(rmat, batch: int = 0, fanouts=(5, 3)):
    train = np.asarray(rmat.split("train"))
    sub = NeighborSampler(rmat.csc, list(fanouts)).sample(train[:SEEDS], 0, 0, batch)
    return sub, np.arange(SEEDS, dtype=np.int64)


def _frame(parts: dict, extra: dict | None = None) -> wire.Frame:
    tensors = {**compact.arrays(parts), **(extra or {})}
    buf = np.zeros(wire.frame_size([wire.spec_of(k, v) for k, v in tensors.items()]), dtype=np.uint8)
    wire.encode(buf, wire.Kind.BATCH, 0, 0, 0, tensors)
    return wire.decode(buf)


def _encode(rmat, sub, input_id, edge_ids: bool = True) -> dict:
    return compact.encode(
        sub.n_id,
        sub.edge_index,
        sub.e_id if edge_ids else None,
        input_id,
        np.asarray(sub.num_sampled_nodes),
        np.asarray(sub.num_sampled_edges),
        num_nodes=rmat.meta.num_nodes,
        num_edges=rmat.meta.num_edges,
    )


@pytest.mark.parametrize("edge_ids", [True, False])
def test_a_sampled_batch_round_trips_exactly(rmat, edge_ids):
    sub, input_id = _sampled(rmat)
    y = np.asarray(rmat.labels)[sub.n_id]
    frame = _frame(_encode(rmat, sub, input_id, edge_ids), {"y": y.astype(compact.label_dtype(y))})
    out = compact.expand(frame, rmat.meta.num_nodes)
    np.testing.assert_array_equal(out["n_id"], sub.n_id)
    np.testing.assert_array_equal(out["edge_index"], sub.edge_index)
    np.testing.assert_array_equal(out["input_id"], input_id)
    np.testing.assert_array_equal(out["y"], y)
    assert all(out[name].dtype == np.int64 for name in ("n_id", "edge_index", "input_id", "y"))
    assert ("e_id" in out.tensors) == edge_ids
    if edge_ids:
        np.testing.assert_array_equal(out["e_id"], sub.e_id)


def test_it_picks_the_narrowest_exact_widths(rmat):
    sub, input_id = _sampled(rmat)
    parts = _encode(rmat, sub, input_id)
    widths = {name: dtype for name, (dtype, _) in parts.items()}
    assert widths["n_id"] == np.int32 and widths["e_id"] == np.int32  # a graph below 2**31 nodes and edges
    assert widths["src"] == np.uint16  # a batch of at most 65,536 nodes
    assert widths["dst_count"] == np.uint8 and "dst" not in parts  # grouped by destination, fanout <= 255
    y = np.array([-1, 3, 200], dtype=np.int64)
    assert compact.label_dtype(y) == np.int16 and compact.label_dtype(y[:2]) == np.int8


def test_id_and_edge_bytes_fall_at_least_threefold_against_int64(rmat):
    sub, input_id = _sampled(rmat, fanouts=(15, 10, 5))
    y = np.asarray(rmat.labels)[sub.n_id]
    compact_bytes = sum(values.nbytes for values in compact.arrays(_encode(rmat, sub, input_id, False)).values())
    compact_bytes += y.astype(compact.label_dtype(y)).nbytes
    int64_bytes = 8 * (2 * len(sub.n_id) + 3 * len(sub.e_id) + len(input_id))
    assert int64_bytes >= 3 * compact_bytes


def test_unsorted_destinations_travel_as_indices(rmat):
    sub, input_id = _sampled(rmat)
    order = np.random.default_rng(0).permutation(sub.edge_index.shape[1])
    edge_index, e_id = sub.edge_index[:, order], sub.e_id[order]
    parts = compact.encode(
        sub.n_id,
        edge_index,
        e_id,
        input_id,
        np.asarray(sub.num_sampled_nodes),
        np.asarray(sub.num_sampled_edges),
        num_nodes=rmat.meta.num_nodes,
        num_edges=rmat.meta.num_edges,
    )
    assert "dst" in parts and "dst_count" not in parts
    out = compact.expand(_frame(parts))
    np.testing.assert_array_equal(out["edge_index"], edge_index)
    np.testing.assert_array_equal(out["e_id"], e_id)


def _forged(rmat, name: str, change) -> wire.Frame:
    sub, input_id = _sampled(rmat)
    arrays = compact.arrays(_encode(rmat, sub, input_id))
    arrays[name] = change(arrays[name].copy())
    buf = np.zeros(wire.frame_size([wire.spec_of(k, v) for k, v in arrays.items()]), dtype=np.uint8)
    wire.encode(buf, wire.Kind.BATCH, 0, 0, 0, arrays)
    return wire.decode(buf)


def _bump_last(values: np.ndarray) -> np.ndarray:
    values[-1] += 1
    return values


def _set_last(value: int):
    def change(values: np.ndarray) -> np.ndarray:
        values[-1] = value
        return values

    return change


@pytest.mark.parametrize(
    ("name", "change", "reason"),
    [
        ("dst_count", _bump_last, "do not fit a batch"),  # counts overrun the edges sent
        ("src", _set_last(60_000), "fall outside"),  # a source past the batch's nodes
        ("n_id", _set_last(-5), "fall outside"),
        ("e_id", lambda v: v[:-1], "holds"),  # one edge id short
        ("num_sampled_edges", _bump_last, "per-hop counts"),
    ],
)
def test_a_forged_frame_is_refused_with_its_reason(rmat, name, change, reason):
    frame = _forged(rmat, name, change)
    with pytest.raises(wire.FrameError, match=reason) as error:
        Received(frame, [], LearnerCache.empty())  # what both transports build from every frame
    assert repr(name) in str(error.value)


def test_nodes_past_the_graph_and_missing_tensors_are_refused(rmat):
    sub, input_id = _sampled(rmat)
    frame = _frame(_encode(rmat, sub, input_id))
    with pytest.raises(wire.FrameError, match=r"outside \[0, 10\)"):
        compact.expand(frame, num_nodes=10)
    del frame.tensors["src"]
    with pytest.raises(wire.FrameError, match="lacks src"):
        compact.expand(frame)


def test_another_frame_version_is_refused(rmat):
    sub, input_id = _sampled(rmat)
    tensors = compact.arrays(_encode(rmat, sub, input_id))
    buf = np.zeros(wire.frame_size([wire.spec_of(k, v) for k, v in tensors.items()]), dtype=np.uint8)
    wire.encode(buf, wire.Kind.BATCH, 0, 0, 0, tensors)
    buf[4:6] = np.frombuffer(np.uint16(wire.VERSION - 1).tobytes(), dtype=np.uint8)
    with pytest.raises(wire.FrameError, match="unknown frame version 1"):
        wire.decode(buf)
    buf[4:6] = np.frombuffer(np.uint16(wire.VERSION).tobytes(), dtype=np.uint8)
    with pytest.raises(wire.FrameError, match="truncated"):
        wire.decode(buf[: len(buf) // 2])


def test_the_planners_widths_are_what_a_frame_holds(rmat):
    """``contracts.wirebytes`` prices what ``encode`` writes: per node its position and label, per
    destination a count, per edge a source index; and the frame constants are ``wire``'s."""
    sub, input_id = _sampled(rmat, fanouts=(15, 10, 5))
    y = np.asarray(rmat.labels)[sub.n_id]
    arrays = compact.arrays(_encode(rmat, sub, input_id, edge_ids=False))
    nodes, edges = len(sub.n_id), sub.edge_index.shape[1]
    destinations = nodes - sub.num_sampled_nodes[-1]
    priced = (
        nodes * wirebytes.compact_node_bytes(rmat.meta.num_nodes, rmat.meta.num_classes)
        + destinations * wirebytes.fanout_count_bytes([15, 10, 5])
        + edges * wirebytes.compact_edge_bytes(nodes)
    )
    sent = sum(arrays[name].nbytes for name in ("n_id", "src")) + y.astype(compact.label_dtype(y)).nbytes
    assert len(arrays["dst_count"]) <= destinations  # trailing destinations without edges are not sent
    assert sent + len(arrays["dst_count"]) <= priced <= sent + destinations
    specs = [wire.spec_of(name, value) for name, value in arrays.items()]
    tensors = sum(spec.nbytes for spec in specs)
    overhead = wire.frame_size(specs) - tensors
    assert abs(overhead - wirebytes.frame_overhead_bytes(len(specs))) <= wirebytes.FRAME_ALIGN * len(specs) / 2
    assert wirebytes.FRAME_HEADER_BYTES == wire.HEADER_BYTES and wirebytes.TABLE_ENTRY_BYTES == wire.ENTRY_BYTES
