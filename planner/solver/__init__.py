"""Finding the cheapest cluster: candidate enumeration, an exact MILP, and the Pareto frontier."""
