"""An emulated two-level cloud cluster on one machine: `testbed`.

Memory hosts and a learner host are network namespaces joined by veth links through a bridge,
each link limited by ``tbf`` to an instance's bandwidth; the memory hosts' reads of the dataset
are throttled by cgroup v1 blkio to a cloud volume's MB/s and IOPS; MPI jobs span the hosts
through a fake ssh agent. See docs/testbed.md.

    state      what a testbed is asked to be and what it is made of (the state file)
    system     running iproute2; what this machine supports, with reasons
    netns      namespaces, bridge, veth and tbf
    volume     the memory hosts' blkio groups and page-cache eviction
    processes  finding and stopping every process on a testbed's hosts
    lifecycle  up (with rollback), down, down --all, status
    mpi        the ssh agent, the mpiexec wrapper, the hostfile and MPI options
    job        exec, mpiexec and run (a `remotegnn launch` job) one at a time, on a cleaned cluster
    runs       the runs file that records each training job
    cli        the `testbed` command
"""
