"""What every MemoryBridge package shares, and nothing else.

- :mod:`foundation.errors`: the one error hierarchy (a root class, exit codes, "did you mean");
- :mod:`foundation.fileio`: atomic writes and pydantic-model reads and writes;
- :mod:`foundation.parsing`: pure parsers for comma lists and HOST:PORT addresses;
- :mod:`foundation.cli`: the CLI kit (consoles, the one-line error handler, ``--json`` output,
  option parsing, pydantic errors translated into option names).

It imports no other package of the project: planner, remotegnn, provisioning and api build on
it (the import rule is checked by ``tests/test_layering.py``).
"""
