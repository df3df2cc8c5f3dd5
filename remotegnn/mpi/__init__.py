"""The MPI transport: memory ranks serve batches to learner ranks inside one MPMD ``mpiexec`` job
(``remotegnn launch``). mpi4py is imported only here, so the rest of RemoteGNN runs without it."""
