"""The counted exchange every full-graph method trains over, and the transports that carry it.

n workers (ranks ``0..n-1``) and one master (rank ``n``) pass raw float32/float64 buffers:
boundary rows between workers, gradients up to the master, weights down from it, a slice's
outputs and their gradients. Every transport sits behind one interface
(:class:`~fullgraph.exchange.endpoint.Endpoint`) and counts the same payload bytes by kind:

- ``kinds``: what crosses the network, by kind (the message tags);
- ``ledger``: each rank's byte and time counts, and the report a rank sends its master;
- ``endpoint``: the counted operations (send, receive, exchange, broadcast, reduce);
- ``local``: every rank a thread of one process, buffers copied through queues;
- ``mpi``: one MPI rank per worker and one for the master, buffers sent from numpy memory;
- ``pinch``: a reliable UDP layer, with fixed-point sums added in the kernel (XDP) and
  broadcasts cloned by TC (the ``udp`` and ``pinch`` exchanges);
- ``options`` and ``fabrics``: the user's choice of exchange, and the endpoints it builds for
  ranks that are threads of this process or ranks of an ``mpiexec`` job.
"""
