"""`provision run`: from a provisioned cluster to a finished training job, and its record back home."""
