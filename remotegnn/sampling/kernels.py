"""The numba k-hop neighbour sampler (one thread, reused buffers): uniform or weighted, one
subgraph per batch or one tree per seed (disjoint).

Walks the CSC (incoming neighbours, as PyG samples). A node's local id is kept in a dense
``local`` array of length N (-1 = not in the batch) instead of a hash map: one array read per
sampled edge, and the array is reset by walking only the batch's nodes, so a batch costs
O(sampled edges) regardless of N.

Weighted sampling (``weights`` in CSC order, empty for uniform) draws without replacement by
Efraimidis and Spirakis's keys u ** (1 / w), keeping the ``fanout`` largest: the same law as
drawing one neighbour at a time with probability proportional to its weight among those left.
With replacement it draws each pick from the weights' cumulative sum. As in PyG, a node with no
more neighbours than the fanout keeps all of them, whatever their weights.
"""

from __future__ import annotations

import numba
import numpy as np

from remotegnn.sampling.rng import below, uniform

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
def _pick_weighted(state, start, degree, fanout, replace, weights, picks):
    """``_pick`` with each neighbour's chance proportional to its weight (> 0 to be drawn)."""
    if replace:
        total = 0.0
        for j in range(degree):
            total += weights[start + j]
        if total <= 0.0:
            return 0
        for q in range(fanout):
            target = uniform(state) * total
            acc = 0.0
            chosen = degree - 1
            for j in range(degree):
                acc += weights[start + j]
                if acc > target:
                    chosen = j
                    break
            while weights[start + chosen] <= 0.0:  # rounding at the top end: the last positive one
                chosen -= 1
            picks[q] = start + chosen
        return fanout
    keys = np.empty(degree, dtype=np.float64)
    positive = 0
    for j in range(degree):
        w = weights[start + j]
        if w > 0.0:
            keys[j] = np.log(uniform(state)) / w  # log of u ** (1 / w): the same order
            positive += 1
        else:
            keys[j] = -np.inf
    count = min(fanout, positive)
    order = np.argsort(-keys)
    for q in range(count):
        picks[q] = start + order[q]
    return count


@numba.njit(nogil=True, cache=True)
def _pick(state, start, degree, fanout, replace, weights, picks, scratch):
    """Fill picks[:count] with edge positions in [start, start+degree); return count."""
    if fanout < 0 or (not replace and degree <= fanout):
        for j in range(degree):
            picks[j] = start + j
        return degree
    if degree == 0:
        return 0
    if weights.shape[0] > 0:
        return _pick_weighted(state, start, degree, fanout, replace, weights, picks)
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
def sample_khop(
    indptr, indices, eid, weights, seeds, fanouts, replace, state, local, nodes, edges, eids, hop_nodes, hop_edges
):
    """Sample a directional k-hop subgraph around ``seeds`` (``weights``: empty for uniform).

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
            count = _pick(state, start, degree, fanout, replace, weights, picks, scratch)
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


@numba.njit(nogil=True, cache=True)
def _append(buf, n, value):
    if n == buf.shape[0]:
        buf = _grow(buf, n + 1)
    buf[n] = value
    return buf


@numba.njit(nogil=True, cache=True)
def sample_disjoint(indptr, indices, eid, weights, seeds, fanouts, replace, state, local):
    """One directional k-hop tree per seed (PyG's ``disjoint=True``): a node reached from two
    seeds appears once in each tree. Returns (nodes, edges, eids, batch, hop_nodes, hop_edges),
    ordered as PyG orders them: by hop, then by seed, then as found; ``batch`` is each node's
    seed index. ``local`` must be all -1 on entry and is all -1 again on return."""
    hops = fanouts.shape[0]
    n_seeds = seeds.shape[0]
    tree_nodes = np.empty(max(16, 4 * n_seeds), dtype=np.int64)
    node_hop = np.empty(tree_nodes.shape[0], dtype=np.int64)
    node_tree = np.empty(tree_nodes.shape[0], dtype=np.int64)
    edge_src = np.empty(max(16, 4 * n_seeds), dtype=np.int64)
    edge_dst = np.empty(edge_src.shape[0], dtype=np.int64)
    edge_eid = np.empty(edge_src.shape[0], dtype=np.int64)
    edge_hop = np.empty(edge_src.shape[0], dtype=np.int64)
    max_fanout = 1
    for h in range(hops):
        if fanouts[h] > max_fanout:
            max_fanout = fanouts[h]
    picks = np.empty(max_fanout, dtype=np.int64)
    scratch = np.empty(0, dtype=np.int64)
    n = 0
    m = 0
    for i in range(n_seeds):
        root = n
        tree_nodes = _append(tree_nodes, n, seeds[i])
        node_hop = _append(node_hop, n, 0)
        node_tree = _append(node_tree, n, i)
        local[seeds[i]] = n
        n += 1
        begin, end = root, n
        for h in range(hops):
            fanout = fanouts[h]
            for k in range(begin, end):
                start = indptr[tree_nodes[k]]
                degree = indptr[tree_nodes[k] + 1] - start
                if degree > picks.shape[0]:
                    picks = np.empty(degree, dtype=np.int64)
                if fanout > FLOYD_MAX_FANOUT and not replace and degree > fanout and scratch.shape[0] < degree:
                    scratch = np.empty(degree, dtype=np.int64)
                count = _pick(state, start, degree, fanout, replace, weights, picks, scratch)
                for q in range(count):
                    neighbour = indices[picks[q]]
                    slot = local[neighbour]
                    if slot < 0:
                        slot = n
                        local[neighbour] = n
                        tree_nodes = _append(tree_nodes, n, neighbour)
                        node_hop = _append(node_hop, n, h + 1)
                        node_tree = _append(node_tree, n, i)
                        n += 1
                    edge_src = _append(edge_src, m, slot)
                    edge_dst = _append(edge_dst, m, k)
                    edge_eid = _append(edge_eid, m, eid[picks[q]])
                    edge_hop = _append(edge_hop, m, h)
                    m += 1
            begin, end = end, n
        for k in range(root, n):
            local[tree_nodes[k]] = -1
    # A stable counting sort by hop turns tree order (seed, hop) into PyG's (hop, seed).
    hop_nodes = np.zeros(hops + 1, dtype=np.int64)
    hop_edges = np.zeros(hops, dtype=np.int64)
    for k in range(n):
        hop_nodes[node_hop[k]] += 1
    for k in range(m):
        hop_edges[edge_hop[k]] += 1
    node_next = np.zeros(hops + 1, dtype=np.int64)
    edge_next = np.zeros(hops, dtype=np.int64)
    for h in range(1, hops + 1):
        node_next[h] = node_next[h - 1] + hop_nodes[h - 1]
        if h < hops:
            edge_next[h] = edge_next[h - 1] + hop_edges[h - 1]
    position = np.empty(n, dtype=np.int64)
    nodes = np.empty(n, dtype=np.int64)
    batch = np.empty(n, dtype=np.int64)
    for k in range(n):
        p = node_next[node_hop[k]]
        node_next[node_hop[k]] += 1
        position[k] = p
        nodes[p] = tree_nodes[k]
        batch[p] = node_tree[k]
    edges = np.empty((2, m), dtype=np.int64)
    eids = np.empty(m, dtype=np.int64)
    for k in range(m):
        p = edge_next[edge_hop[k]]
        edge_next[edge_hop[k]] += 1
        edges[0, p] = position[edge_src[k]]
        edges[1, p] = position[edge_dst[k]]
        eids[p] = edge_eid[k]
    return nodes, edges, eids, batch, hop_nodes, hop_edges
