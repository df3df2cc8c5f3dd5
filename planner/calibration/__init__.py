"""Calibration: fit the pipeline model's coefficients from measured testbed runs, and predict a
testbed configuration with the same models that price AWS clusters.

    runs      the runs file as calibration reads it, and the training job's report inside it
    testbed   a testbed configuration as model inputs; predict() evaluates both cost models on it
    fit       per-stage fits from the runs (`planner calibrate`)

``testbed.json`` is a calibration measured on the emulated cluster (see docs/planner.md,
"Calibration and fidelity").
"""
