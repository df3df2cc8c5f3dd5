"""The seeds' scores from a sampled batch, each layer computing only the rows the next one reads.

A batch from ``DistributedGraphLoader`` (or PyG's ``NeighborLoader``) lists its nodes hop by hop
(``num_sampled_nodes``) and its edges hop by hop (``num_sampled_edges``). Of an L-layer model's
layer i, the seeds need the outputs of the nodes up to hop L - 1 - i only, which read the inputs
of the nodes up to hop L - i along the edges of hops 1 to L - i. PyG's own trimming
(``num_sampled_nodes_per_hop``) drops the hops no layer reads, but each layer still computes an
output for every input node: on a papers100M batch (fanouts 10,10,10, batch 1024), about 660 K
first-layer outputs where the next layer reads 72 K. ``seed_forward`` passes each layer its
inputs and its outputs apart (a bipartite ``(x, x[:outputs])``, as DGL's message-flow blocks do),
so that layer's products run on the outputs only: about a ninth of the step's arithmetic on that
batch, and the same scores (every output row is computed exactly as before).

It applies to PyG's ``GraphSAGE`` (SAGEConv takes a bipartite input) without jumping knowledge,
normalisation layers or a final linear layer. Any other model with a layer per hop gets PyG's own
trimmed forward pass; a batch without per-hop counts, or a model with more or fewer layers than
the batch has hops, the whole forward pass.
"""

from __future__ import annotations

import torch
from torch_geometric.nn import GraphSAGE, SAGEConv


def _blocks_apply(model: torch.nn.Module, hops: int) -> bool:
    """Whether ``model`` is a GraphSAGE whose layers ``seed_forward`` can run one block each."""
    return (
        isinstance(model, GraphSAGE)
        and model.num_layers == hops
        and model.jk_mode is None
        and not hasattr(model, "lin")
        and all(isinstance(norm, torch.nn.Identity) for norm in model.norms)
        and all(isinstance(conv, SAGEConv) for conv in model.convs)
    )


def seed_forward(model: torch.nn.Module, batch) -> torch.Tensor:
    """The model's output rows for the batch's seeds (``out[:batch.batch_size]``).

    Args:
        model: the GNN, one layer per hop of the batch (PyG's ``GraphSAGE`` runs block by block,
            another of PyG's models its trimmed forward pass).
        batch: a sampled batch with ``x``, ``edge_index``, ``batch_size`` and, for the trimmed
            forms, ``num_sampled_nodes`` and ``num_sampled_edges``.
    """
    nodes, edges = getattr(batch, "num_sampled_nodes", None), getattr(batch, "num_sampled_edges", None)
    if nodes is None or edges is None or getattr(model, "num_layers", len(edges)) != len(edges):
        return model(batch.x, batch.edge_index)[: batch.batch_size]
    if not _blocks_apply(model, len(edges)):
        hops = {"num_sampled_nodes_per_hop": nodes, "num_sampled_edges_per_hop": edges}
        return model(batch.x, batch.edge_index, **hops)[: batch.batch_size]
    assert isinstance(model, GraphSAGE)  # what _blocks_apply checked
    return _blocks(model, batch.x, batch.edge_index, nodes, edges)[: batch.batch_size]


def _blocks(model: GraphSAGE, x: torch.Tensor, edge_index: torch.Tensor, nodes, edges) -> torch.Tensor:
    """The layers one block each: layer i's inputs are the nodes up to its farthest hop, its
    outputs those the next layer reads, its edges those into the outputs (hops 1 to farthest)."""
    last = len(model.convs) - 1
    for i, conv in enumerate(model.convs):
        reach = len(edges) - i  # the farthest hop this layer's inputs come from
        inputs, outputs = sum(nodes[: reach + 1]), sum(nodes[:reach])
        source = x[:inputs]
        x = conv((source, source[:outputs]), edge_index[:, : sum(edges[:reach])])
        if i < last:
            x = model.dropout(model.act(x) if model.act is not None else x)
    return x
