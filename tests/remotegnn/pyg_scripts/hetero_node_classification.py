"""Node classification on a heterogeneous graph through ``to_hetero``, as PyG's examples write it:
Cora's papers with their vocabulary terms as a second node type (paper-cites-paper,
paper-has-term, term-in-paper), a GraphSAGE turned heterogeneous by ``to_hetero``, and
NeighborLoader with input_nodes=('paper', mask), 20 epochs (test accuracy about 66%, where it
levels off). The test runs it as is, and again with only the import line changed to
DistributedGraphLoader.

Usage: python hetero_node_classification.py ROOT SEED OUT.json (ROOT/Cora/raw holds the Planetoid files).
"""

import json
import sys

import torch
import torch.nn.functional as F
from torch_geometric.data import HeteroData
from torch_geometric.datasets import Planetoid
from torch_geometric.loader import NeighborLoader
from torch_geometric.nn import SAGEConv, to_hetero
from torch_geometric.transforms import NormalizeFeatures

root, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cora = Planetoid(root, "Cora", transform=NormalizeFeatures())[0]
data = HeteroData()
data["paper"].x, data["paper"].y = cora.x, cora.y
for split in ("train", "val", "test"):
    data["paper"][f"{split}_mask"] = cora[f"{split}_mask"]
data["term"].x = torch.eye(cora.num_features)  # one-hot: the model learns an embedding per term
paper, term = cora.x.nonzero().t()
data["paper", "cites", "paper"].edge_index = cora.edge_index
data["paper", "has", "term"].edge_index = torch.stack([paper, term])
data["term", "in", "paper"].edge_index = torch.stack([term, paper])

torch.manual_seed(seed)
kwargs = {"batch_size": 32, "num_workers": 2, "persistent_workers": True}
fanouts = {("paper", "cites", "paper"): [10, 5], ("paper", "has", "term"): [5, 0], ("term", "in", "paper"): [5, 3]}
train_loader = NeighborLoader(
    data, num_neighbors=fanouts, input_nodes=("paper", data["paper"].train_mask), shuffle=True, **kwargs
)
test_loader = NeighborLoader(data, num_neighbors=fanouts, input_nodes=("paper", data["paper"].test_mask), **kwargs)


class GNN(torch.nn.Module):
    def __init__(self, hidden: int, classes: int):
        super().__init__()
        self.conv1 = SAGEConv((-1, -1), hidden)
        self.conv2 = SAGEConv((-1, -1), classes)

    def forward(self, x, edge_index):
        x = F.dropout(self.conv1(x, edge_index).relu(), p=0.5, training=self.training)
        return self.conv2(x, edge_index)


model = to_hetero(GNN(64, 7), data.metadata(), aggr="mean")
with torch.no_grad():  # lazy layers take their sizes from a first batch
    first = next(iter(train_loader))
    model(first.x_dict, first.edge_index_dict)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

for _epoch in range(20):
    model.train()
    for batch in train_loader:
        optimizer.zero_grad()
        size = batch["paper"].batch_size
        logits = model(batch.x_dict, batch.edge_index_dict)["paper"][:size]
        F.cross_entropy(logits, batch["paper"].y[:size]).backward()
        optimizer.step()

model.eval()
correct = total = 0
with torch.no_grad():
    for batch in test_loader:
        size = batch["paper"].batch_size
        pred = model(batch.x_dict, batch.edge_index_dict)["paper"][:size].argmax(-1)
        correct += int((pred == batch["paper"].y[:size]).sum())
        total += size
batch = next(iter(test_loader))
stores = {**{t: batch[t] for t in batch.node_types}, **{"/".join(e): batch[e] for e in batch.edge_types}}
structure = {
    "keys": sorted(f"{name}.{field}" for name, store in stores.items() for field in store.to_dict()),
    "seeds_first": bool(torch.equal(batch["paper"].n_id[:32], data["paper"].test_mask.nonzero().view(-1)[:32])),
    "x_is_rows": all(torch.equal(batch[t].x, data[t].x[batch[t].n_id]) for t in batch.node_types),
    "edges_are_real": all(
        torch.equal(
            torch.stack([batch[e[0]].n_id[batch[e].edge_index[0]], batch[e[2]].n_id[batch[e].edge_index[1]]]),
            data[e].edge_index[:, batch[e].e_id],
        )
        for e in batch.edge_types
    ),
}
with open(out, "w") as handle:
    json.dump({"test_acc": correct / total, "tested": total, "batch": structure}, handle)
