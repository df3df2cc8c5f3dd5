"""Cost models: how long an epoch takes on a cluster and what the whole job costs.

``paper`` reproduces the MemoryBridge paper's equations (3)-(8); ``pipeline`` (the default) models the
memory-machine pipeline stage by stage. Both evaluate whole arrays of candidate clusters at once.
"""
