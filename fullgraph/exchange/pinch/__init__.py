"""PINCH: the exchanges of distributed training over UDP, summed and broadcast inside the kernel.

From "PINCH: Accelerating Distributed GNN Training through In-Kernel Operation Using eBPF":
an XDP program adds incoming fixed-point records into a memory-mapped BPF array as packets
arrive (no system call per packet), a TC program clones one packet to every peer, and a
reliable-UDP layer (per-epoch sequence numbers, a dedup window before the add, NACKs and
completion signals) keeps the sums exact under loss and duplication.

- ``wire``: the datagram format (mirrors ``bpf/pinch.h``);
- ``fixedpoint``: floats as int32 mantissas with a shift per record, summed exactly in int64,
  with saturation flags and the error bound;
- ``aggregate``: the receiver's arrays and what XDP does to them, also done in user space;
- ``libbpf`` / ``kernel``: the compiled programs loaded over the system libbpf (ctypes);
- ``transport``: the reliable UDP layer; ``endpoint``: the ``udp`` and ``pinch`` endpoints;
- ``addresses``: how the ranks of an ``mpiexec`` job learn each other's UDP addresses;
- ``faults``: loss and duplication on a link, for tests and benchmarks on the testbed.
"""
