"""RemoteGNN, the sampled-training data layer: memory machines hold graph structure and hot features
in RAM, read the rest from a slow cloud volume, and sample mini-batches that stream to the learner,
where ``DistributedGraphLoader`` replaces PyG's ``NeighborLoader`` (the MemoryBridge paper, section IV-C)."""
