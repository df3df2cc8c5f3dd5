"""SliceGCN: feature columns spread over the memory machines, each running its own GCN on its slice.

After "Slicing Input Features to Accelerate Deep Learning: A Case Study with Graph Neural
Networks": every memory rank holds the whole graph structure and one column slice of the
features and runs a GCN on it (full batch, CPU); the learner concatenates the p outputs, adds a
slice encoding, applies the classifier, and sends each rank its slice of the gradient. No
feature row crosses the network, only the slices' outputs for the nodes a pass needs.

- ``config``: how to train (``SliceConfig``), read by the command line too;
- ``slicing``: the paper's Algorithm 1 (with its overlap rule for the last slice) and sliced datasets;
- ``model``: the per-slice GCN (Eq. 6), feature fusion, slice encoding and the classifier;
- ``training``: the learner and the ranks over the exchange (in threads of this process over
  queues, udp or pinch), with every byte counted, and the single-process reference that gives
  the same logits;
- ``mpi``: one ``mpiexec`` job of p ranks and the learner.
"""
