"""Dataset profiles: the sizes and access skew of a graph, all the planner needs to know about it."""
