"""PyG's link prediction recipe on Cora, as its examples write it: RandomLinkSplit, then
LinkNeighborLoader with binary negative sampling for training and the split's labelled test edges
for evaluation, 3 epochs (test accuracy about 70%, against 50% for a guess; the test compares
loaders, so it trains only until the accuracy has mostly risen). The test runs it as is, and
again with only the import line changed to DistributedLinkLoader.

Usage: python sage_link_prediction.py ROOT SEED OUT.json (ROOT/Cora/raw holds the Planetoid files).
"""

import json
import sys

import torch
import torch.nn.functional as F
import torch_geometric.transforms as T
from torch_geometric.datasets import Planetoid
from torch_geometric.loader import LinkNeighborLoader
from torch_geometric.nn import GraphSAGE

root, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
torch.manual_seed(seed)
split = T.RandomLinkSplit(num_val=0.05, num_test=0.1, is_undirected=True, add_negative_train_samples=False)
train_data, _, test_data = Planetoid(root, "Cora", transform=T.Compose([T.NormalizeFeatures(), split]))[0]
train_loader = LinkNeighborLoader(
    train_data,
    num_neighbors=[10, 5],
    edge_label_index=train_data.edge_label_index,
    edge_label=train_data.edge_label,
    neg_sampling_ratio=1.0,
    batch_size=128,
    shuffle=True,
)
test_loader = LinkNeighborLoader(
    test_data,
    num_neighbors=[-1, -1],
    edge_label_index=test_data.edge_label_index,
    edge_label=test_data.edge_label,
    batch_size=256,
)
model = GraphSAGE(train_data.num_features, 64, num_layers=2)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)


def scores(batch):
    h = model(batch.x, batch.edge_index)
    return (h[batch.edge_label_index[0]] * h[batch.edge_label_index[1]]).sum(-1)


for _epoch in range(3):
    model.train()
    for batch in train_loader:
        optimizer.zero_grad()
        F.binary_cross_entropy_with_logits(scores(batch), batch.edge_label.float()).backward()
        optimizer.step()

model.eval()
correct = total = 0
with torch.no_grad():
    for batch in test_loader:
        correct += int(((scores(batch) > 0).float() == batch.edge_label).sum())
        total += batch.edge_label.numel()
first = next(iter(train_loader))
edges = first.n_id[first.edge_label_index]
structure = {
    "keys": sorted(first.keys()),
    "label_values": sorted(torch.unique(first.edge_label).tolist()),
    "labelled_edges": first.edge_label_index.size(1),
    "positives_are_train_edges": bool(
        torch.equal(edges[:, : first.input_id.numel()], train_data.edge_label_index[:, first.input_id])
    ),
    "x_is_rows": bool(torch.equal(first.x, train_data.x[first.n_id])),
}
with open(out, "w") as handle:
    json.dump({"test_acc": correct / total, "tested": total, "batch": structure}, handle)
