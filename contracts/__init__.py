"""Every file format two packages share, defined once: versioned pydantic models that import only foundation.

profile      a dataset's profile: `remotegnn profile` writes it, `planner recommend` reads it
workload     what the user trains (sampled or full-graph): part of every plan request
plan         a recommendation request and the plan it produces (`planner`, the API, `provision up`)
cluster      the cluster state file `provision up` writes and `provision run` reads
partition    the partition manifest `fullgraph partition` writes and the planner prices
datavolume   the RETEXO paper's data-volume model, which the planner prices with and training reports
testbed      a testbed's state, embedded in each of its runs
stats        what an epoch of the sampled pipeline cost, stage by stage
progress     training progress events, from the learner's loader to `provision run`
runs         the records of training jobs (testbed and cluster) and a calibration job's report
calibration  the calibration file `planner calibrate` writes and the report of its fit
kinds        the schema names that changed, and the former names still read
"""
