"""ClusterPlanner: what to rent on AWS to train a GNN on a graph larger than one machine.

The planner prices every feasible cluster (a GPU learning machine plus k GPU-less memory
machines with one gp3 volume each, or a single GPU machine) with a cost model over a shipped
price snapshot, and recommends the cheapest plan within the user's budget and deadline.
"""

__version__ = "0.1.0"
