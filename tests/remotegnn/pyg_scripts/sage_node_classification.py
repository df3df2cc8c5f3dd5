"""PyG's GraphSAGE node classification recipe on Cora, as its examples write it: NeighborLoader with
num_workers, pin_memory and persistent_workers, 15 epochs (test accuracy about 80%, where it levels
off). The test runs it as is, and again with only the import line changed to
DistributedGraphLoader.

Usage: python sage_node_classification.py ROOT SEED OUT.json (ROOT/Cora/raw holds the Planetoid files).
"""

import json
import sys

import torch
import torch.nn.functional as F
from torch_geometric.datasets import Planetoid
from torch_geometric.loader import NeighborLoader
from torch_geometric.nn import GraphSAGE
from torch_geometric.transforms import NormalizeFeatures

root, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.manual_seed(seed)
data = Planetoid(root, "Cora", transform=NormalizeFeatures())[0]
kwargs = {"batch_size": 32, "num_workers": 2, "pin_memory": True, "persistent_workers": True}
train_loader = NeighborLoader(data, num_neighbors=[10, 5], input_nodes=data.train_mask, shuffle=True, **kwargs)
test_loader = NeighborLoader(data, num_neighbors=[-1, -1], input_nodes=data.test_mask, **kwargs)

model = GraphSAGE(data.num_features, 64, num_layers=2, out_channels=7, dropout=0.5)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)


def describe(batch) -> dict:
    """What a training loop relies on in a batch."""
    return {
        "keys": sorted(batch.keys()),
        "dtypes": {key: str(batch[key].dtype) for key in ("x", "y", "edge_index", "n_id", "input_id")},
        "seeds_first": bool(torch.equal(batch.n_id[: batch.batch_size], data.test_mask.nonzero().view(-1)[:32])),
        "edges_local": bool(batch.edge_index.max() < batch.num_nodes),
        "x_is_rows": bool(torch.equal(batch.x, data.x[batch.n_id])),
    }


for _epoch in range(15):
    model.train()
    for batch in train_loader:
        optimizer.zero_grad()
        out_ = model(batch.x, batch.edge_index)[: batch.batch_size]
        F.cross_entropy(out_, batch.y[: batch.batch_size]).backward()
        optimizer.step()

model.eval()
correct = total = 0
with torch.no_grad():
    for batch in test_loader:
        pred = model(batch.x, batch.edge_index)[: batch.batch_size].argmax(-1)
        correct += int((pred == batch.y[: batch.batch_size]).sum())
        total += batch.batch_size
first = next(iter(test_loader))
with open(out, "w") as handle:
    json.dump({"test_acc": correct / total, "tested": total, "batch": describe(first)}, handle)
