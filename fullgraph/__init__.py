"""Full-graph distributed training on GPU-less workers: the partitioner, the counted exchange and its
transports (queues, MPI, UDP, PINCH), and RETEXO, standard training and SliceGCN on top of it.

- ``partitioner`` / ``part``: split a dataset into n workers' parts, and load one for training;
- ``exchange``: the counted exchange between ranks and the transports that carry it;
- ``ranks``: run a job's ranks as threads of this process or as one ``mpiexec`` job;
- ``best``: the earliest round with the best validation score, as every method reports it;
- ``dropout``: dropout drawn from each worker's own generator, as every method applies it;
- ``retexo``: GCN, GraphSAGE and GAT trained the standard way or with RETEXO's lazy message passing;
- ``slicegcn``: feature columns spread over the ranks, each running its own GCN on its slice;
- ``cli``: the `fullgraph` command.
"""
