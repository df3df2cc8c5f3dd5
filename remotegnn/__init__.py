"""RemoteGNN: memory machines that hold graph structure and hot features in RAM, read the rest from a
slow cloud volume, and sample mini-batches for a GPU learning machine (the MemoryBridge paper, section IV-C)."""
