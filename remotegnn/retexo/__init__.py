"""Distributed full-graph training over a partitioned graph: the standard procedure and RETEXO.

Scalable Neural Network Training over Distributed Graphs (RETEXO) trains a GNN layer by layer
("lazy message passing"): one exchange of the previous layer's frozen representations per layer
instead of a forward and a backward exchange per layer in every round. This package holds:

- :mod:`remotegnn.retexo.partition`: split a dataset into n workers' parts (inner nodes, their
  in-edges, the boundary lists) and report the partition's quality;
- :mod:`remotegnn.retexo.part`: one worker's part loaded for training;
- :mod:`remotegnn.retexo.volume`: the terms of the paper's data-volume model (Eq. 2: DV_std,
  DV_lazy, gamma; the model itself is ``planner.costmodel.datavolume``, which the planner prices
  with too) counted on a partition and a model before training;
- :mod:`remotegnn.retexo.comm`: the exchanges between workers and with the master, over threads
  in one process or over MPI, with every byte counted by kind;
- :mod:`remotegnn.retexo.models` and :mod:`remotegnn.retexo.training`: GCN, GraphSAGE and GAT
  trained the standard way or with RETEXO.
"""
