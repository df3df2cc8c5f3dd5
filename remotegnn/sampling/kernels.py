"""The numba k-hop neighbour sampler (one thread, reused buffers): uniform or weighted, one
subgraph per batch or one tree per seed (disjoint).

Walks the CSC (incoming neighbours, as PyG samples). A node's local id is kept in a dense
``local`` array of length N (-1 = not in the batch) instead of a hash map: one array read per
sampled edge, and the array is reset by walking only the batch's nodes, so a batch costs
O(sampled edges) regardless of N.

Each hop runs in two passes, for memory-level parallelism: the first draws every frontier node's
picks (CSC positions), the second resolves them (neighbour id, its local id, edge id) in a tight
loop that prefetches the reads ``PREFETCH_AHEAD`` edges ahead. One pass per edge would leave the
CPU waiting out each random read alone; on the R-MAT benchmark graph the two passes sample a
batch in about 55% of the time, with the same output.

Weighted sampling (``weights``: each CSC position's running sum of its node's in-edge weights,
``running_sums``; empty for uniform) draws each pick by a binary search of those sums; without
replacement it follows the law of drawing one neighbour at a time with probability proportional
to its weight among those left (``_pick_weighted``). As in PyG, a node with no more neighbours
than the fanout keeps all of them, whatever their weights.
"""

from __future__ import annotations

import numba
import numpy as np

from remotegnn.prefetch import prefetch
from remotegnn.sampling.rng import below, uniform

# Up to this fanout, distinct neighbours are drawn with Floyd's algorithm and a linear
# membership scan (O(k^2), no extra memory); above it, a partial Fisher-Yates over positions.
FLOYD_MAX_FANOUT = 64
# Weighted draws without replacement: repeats allowed per pick before the rest are drawn by keys.
REJECTION_BUDGET = 4
# How many items (frontier nodes, picked edges) ahead of use their random reads are prefetched:
# enough to cover a memory latency, measured flat from 16 to 64 on the benchmark graph.
PREFETCH_AHEAD = 32


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
def running_sums(indptr, weights):
    """Each CSC position's running sum of its node's in-edge weights (restarting at every node),
    so a weighted draw is one binary search within the node's segment."""
    out = np.empty(weights.shape[0], dtype=np.float32)
    for v in range(indptr.shape[0] - 1):
        total = 0.0
        for p in range(indptr[v], indptr[v + 1]):
            total += weights[p]
            out[p] = total
    return out


@numba.njit(inline="always", nogil=True)
def _draw(state, start, degree, cumulative):
    """One neighbour, with probability proportional to its weight (0-weight ones never)."""
    target = uniform(state) * cumulative[start + degree - 1]
    lo, hi = 0, degree - 1
    while lo < hi:  # the first position whose running sum exceeds the target
        mid = (lo + hi) // 2
        if cumulative[start + mid] > target:
            hi = mid
        else:
            lo = mid + 1
    return start + lo


@numba.njit(nogil=True, cache=True)
def _pick_weighted(state, start, degree, fanout, replace, cumulative, picks):
    """``_pick`` with each neighbour's chance proportional to its weight (> 0 to be drawn).

    Without replacement: draws with replacement, a repeat discarded, which is exactly successive
    sampling (each next neighbour proportional to weight among those left) and costs O(fanout x
    log degree); if repeats pile up (a few neighbours hold most of the weight, or fewer than
    ``fanout`` have any), the rest are drawn by Efraimidis and Spirakis's keys over the neighbours
    left, O(degree). Switching on what was drawn so far keeps the law exact."""
    if cumulative[start + degree - 1] <= 0.0:
        return 0
    if replace:
        for q in range(fanout):
            picks[q] = _draw(state, start, degree, cumulative)
        return fanout
    count = 0
    if fanout <= FLOYD_MAX_FANOUT:
        budget = REJECTION_BUDGET * fanout
        while count < fanout and budget > 0:
            budget -= 1
            p = _draw(state, start, degree, cumulative)
            repeat = False
            for q in range(count):
                if picks[q] == p:
                    repeat = True
                    break
            if not repeat:
                picks[count] = p
                count += 1
        if count == fanout:
            return count
    keys = np.empty(degree, dtype=np.float64)
    for j in range(degree):
        w = cumulative[start + j] - (cumulative[start + j - 1] if j > 0 else 0.0)
        keys[j] = np.log(uniform(state)) / w if w > 0.0 else -np.inf  # log of u ** (1 / w): same order
    for q in range(count):
        keys[picks[q] - start] = -np.inf  # already drawn
    order = np.argsort(-keys)
    for j in range(degree):
        if count == fanout or keys[order[j]] == -np.inf:
            break
        picks[count] = start + order[j]
        count += 1
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
def _type_run(etype, run, stop):
    """(edge type, end) of the run of same-type in-edges starting at ``run`` (type 0 to ``stop``
    without types): a node's in-edges are grouped by type, since edge ids are."""
    if etype.shape[0] == 0:
        return 0, stop
    r = etype[run]
    end = run + 1
    while end < stop and etype[end] == r:
        end += 1
    return r, end


@numba.njit(nogil=True, cache=True)
def sample_khop(
    indptr,
    indices,
    eid,
    etype,
    weights,
    seeds,
    fanouts,
    replace,
    state,
    local,
    nodes,
    edges,
    eids,
    hop_nodes,
    hop_edges,
):
    """Sample a directional k-hop subgraph around ``seeds``.

    ``fanouts`` is [hops, edge types] (one column for a homogeneous graph, whose ``etype`` is
    empty; otherwise ``etype`` holds each CSC position's edge type and a 0 fanout skips that type
    at that hop); ``weights`` is empty for uniform sampling.
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
    picks = np.empty(max(1, fanouts.max()), dtype=np.int64)
    scratch = np.empty(0, dtype=np.int64)
    begin, end = 0, n_seeds
    for h in range(fanouts.shape[0]):
        edges_before = n_edges
        for i in range(begin, end):
            if i + PREFETCH_AHEAD < end:
                prefetch(indptr, nodes[i + PREFETCH_AHEAD])
            target = nodes[i]
            target_local = local[target]
            run, stop = indptr[target], indptr[target + 1]
            while run < stop:
                r, run_end = _type_run(etype, run, stop)
                fanout, degree, start = fanouts[h, r], run_end - run, run
                run = run_end
                if fanout == 0:
                    continue
                want = degree if (fanout < 0 or (not replace and degree <= fanout)) else fanout
                if want > picks.shape[0]:
                    picks = np.empty(want, dtype=np.int64)
                if fanout > FLOYD_MAX_FANOUT and not replace and degree > fanout and scratch.shape[0] < degree:
                    scratch = np.empty(degree, dtype=np.int64)
                count = _pick(state, start, degree, fanout, replace, weights, picks, scratch)
                if n_edges + count > edges.shape[1]:
                    edges = _grow(edges, n_edges + count)
                    eids = _grow(eids, n_edges + count)
                for q in range(count):  # eids holds the CSC position until the second pass
                    eids[n_edges] = picks[q]
                    edges[1, n_edges] = target_local
                    n_edges += 1
        if n_nodes + n_edges - edges_before > nodes.shape[0]:
            nodes = _grow(nodes, n_nodes + n_edges - edges_before)
        n_nodes = _resolve(indices, eid, local, nodes, n_nodes, edges, eids, edges_before, n_edges)
        hop_nodes[h + 1] = n_nodes - end
        hop_edges[h] = n_edges - edges_before
        begin, end = end, n_nodes
    for i in range(n_nodes):
        if i + PREFETCH_AHEAD < n_nodes:
            prefetch(local, nodes[i + PREFETCH_AHEAD])
        local[nodes[i]] = -1
    return nodes, edges, eids, n_nodes, n_edges


@numba.njit(inline="always", nogil=True)
def _resolve(indices, eid, local, nodes, n_nodes, edges, eids, first, stop):
    """Turn picked CSC positions eids[first:stop] into edges: each neighbour's local id (a new
    one, appended to ``nodes``, on first sight) into edges[0], its edge id into eids. Returns the
    new node count; ``nodes`` must have room for one new node per edge."""
    for k in range(first, stop):
        if k + 2 * PREFETCH_AHEAD < stop:
            ahead = eids[k + 2 * PREFETCH_AHEAD]
            prefetch(indices, ahead)
            prefetch(eid, ahead)
        if k + PREFETCH_AHEAD < stop:
            prefetch(local, indices[eids[k + PREFETCH_AHEAD]])
        p = eids[k]
        neighbour = indices[p]
        slot = local[neighbour]
        if slot < 0:
            slot = n_nodes
            local[neighbour] = slot
            nodes[n_nodes] = neighbour
            n_nodes += 1
        edges[0, k] = slot
        eids[k] = eid[p]
    return n_nodes


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
