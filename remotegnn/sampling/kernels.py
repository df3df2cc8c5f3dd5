"""The numba k-hop uniform neighbour sampler (one thread, reused buffers).

Walks the CSC (incoming neighbours, as PyG samples). A node's local id is kept in a dense
``local`` array of length N (-1 = not in the batch) instead of a hash map: one array read per
sampled edge, and the array is reset by walking only the batch's nodes, so a batch costs
O(sampled edges) regardless of N.
"""

from __future__ import annotations

import numba
import numpy as np

from remotegnn.sampling.rng import below

# Up to this fanout, distinct neighbours are drawn with Floyd's algorithm and a linear
# membership scan (O(k^2), no extra memory); above it, a partial Fisher-Yates over positions.
FLOYD_MAX_FANOUT = 64


@numba.njit(nogil=True, cache=True)
def _grow(buf, needed):
    cap = buf.shape[-1]
    while cap < needed:
        cap *= 2
    if buf.ndim == 1:
        out = np.empty(cap, dtype=buf.dtype)
        out[: buf.shape[0]] = buf
    else:
        out = np.empty((buf.shape[0], cap), dtype=buf.dtype)
        out[:, : buf.shape[1]] = buf
    return out


@numba.njit(nogil=True, cache=True)
def _pick(state, start, degree, fanout, replace, picks, scratch):
    """Fill picks[:count] with edge positions in [start, start+degree); return count."""
    if fanout < 0 or (not replace and degree <= fanout):
        for j in range(degree):
            picks[j] = start + j
        return degree
    if degree == 0:
        return 0
    if replace:
        for j in range(fanout):
            picks[j] = start + below(state, degree)
        return fanout
    if fanout <= FLOYD_MAX_FANOUT:
        count = 0
        for j in range(degree - fanout, degree):
            t = below(state, j + 1)
            for q in range(count):
                if picks[q] == start + t:
                    t = j
                    break
            picks[count] = start + t
            count += 1
        return count
    for j in range(degree):
        scratch[j] = j
    for j in range(fanout):
        r = j + below(state, degree - j)
        tmp = scratch[j]
        scratch[j] = scratch[r]
        scratch[r] = tmp
        picks[j] = start + scratch[j]
    return fanout


@numba.njit(nogil=True, cache=True)
def sample_khop(indptr, indices, eid, seeds, fanouts, replace, state, local, nodes, edges, eids, hop_nodes, hop_edges):
    """Sample a directional k-hop subgraph around ``seeds``.

    Returns (nodes, edges, eids, n_nodes, n_edges) where the buffers may have been grown (the
    caller keeps them for the next batch). nodes[:n_nodes] are global ids, seeds first then each
    hop's new nodes; edges[0] is the neighbour's local id, edges[1] the target's.
    hop_nodes[h] / hop_edges[h] receive the per-hop counts. ``local`` must be all -1 on entry
    and is all -1 again on return.
    """
    n_seeds = seeds.shape[0]
    if nodes.shape[0] < n_seeds:
        nodes = _grow(nodes, n_seeds)
    for i in range(n_seeds):
        s = seeds[i]
        nodes[i] = s
        if local[s] < 0:
            local[s] = i
    n_nodes = n_seeds
    n_edges = 0
    hop_nodes[0] = n_seeds
    max_fanout = 1
    for h in range(fanouts.shape[0]):
        if fanouts[h] > max_fanout:
            max_fanout = fanouts[h]
    picks = np.empty(max_fanout, dtype=np.int64)
    scratch = np.empty(0, dtype=np.int64)
    begin, end = 0, n_seeds
    for h in range(fanouts.shape[0]):
        fanout = fanouts[h]
        edges_before = n_edges
        for i in range(begin, end):
            target = nodes[i]
            start = indptr[target]
            degree = indptr[target + 1] - start
            want = degree if (fanout < 0 or (not replace and degree <= fanout)) else fanout
            if degree == 0:
                want = 0
            if want > picks.shape[0]:
                picks = np.empty(want, dtype=np.int64)
            if fanout > FLOYD_MAX_FANOUT and not replace and degree > fanout and scratch.shape[0] < degree:
                scratch = np.empty(degree, dtype=np.int64)
            count = _pick(state, start, degree, fanout, replace, picks, scratch)
            if n_edges + count > edges.shape[1]:
                edges = _grow(edges, n_edges + count)
                eids = _grow(eids, n_edges + count)
            if n_nodes + count > nodes.shape[0]:
                nodes = _grow(nodes, n_nodes + count)
            target_local = local[target]
            for q in range(count):
                p = picks[q]
                neighbour = indices[p]
                slot = local[neighbour]
                if slot < 0:
                    slot = n_nodes
                    local[neighbour] = slot
                    nodes[n_nodes] = neighbour
                    n_nodes += 1
                edges[0, n_edges] = slot
                edges[1, n_edges] = target_local
                eids[n_edges] = eid[p]
                n_edges += 1
        hop_nodes[h + 1] = n_nodes - end
        hop_edges[h] = n_edges - edges_before
        begin, end = end, n_nodes
    for i in range(n_nodes):
        local[nodes[i]] = -1
    return nodes, edges, eids, n_nodes, n_edges
