"""What every MemoryBridge package shares, and nothing else.

- :mod:`foundation.errors`: the one error hierarchy (a root class, exit codes, "did you mean");
- :mod:`foundation.fileio`: atomic writes and pydantic-model reads and writes;
- :mod:`foundation.models`: the base of every boundary model (frozen, unknown fields refused);
- :mod:`foundation.parsing`: pure parsers for comma lists and HOST:PORT addresses;
- :mod:`foundation.cli`: the CLI kit (consoles, the one-line error handler, ``--json`` output,
  option parsing, pydantic errors translated into option names, defaults taken from models);
- :mod:`foundation.units`: units named once, and durations as people read them;
- :mod:`foundation.logs`: diagnostics through stdlib logging, shown on stderr by every entry point;
- :mod:`foundation.progress`: progress bars on a terminal, silence elsewhere;
- :mod:`foundation.jobtext`: a training job's result, read back from what it printed.

It imports no other package of the project; every other package builds on it (the import rule is
checked by ``tests/test_layering.py``).
"""
