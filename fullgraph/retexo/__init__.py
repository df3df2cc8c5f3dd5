"""Distributed full-graph training over a partitioned graph: the standard procedure and RETEXO.

Scalable Neural Network Training over Distributed Graphs (RETEXO) trains a GNN layer by layer
("lazy message passing"): one exchange of the previous layer's frozen representations per layer
instead of a forward and a backward exchange per layer in every round. This package holds:

- :mod:`fullgraph.retexo.config`: how to train (``TrainConfig``), read by the command line too;
- :mod:`fullgraph.retexo.volume`: the terms of the paper's data-volume model (Eq. 2: DV_std,
  DV_lazy, gamma; the model itself is :mod:`contracts.datavolume`, which the planner prices
  with too) counted on a partition and a model before training;
- :mod:`fullgraph.retexo.models` and :mod:`fullgraph.retexo.training`: GCN, GraphSAGE and GAT
  trained the standard way or with RETEXO, rank by rank, in threads of this process;
- :mod:`fullgraph.retexo.mpi`: the same as one ``mpiexec`` job.
"""
