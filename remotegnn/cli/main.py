"""Entry point of the `remotegnn` console script."""

from __future__ import annotations

from remotegnn.cli import (  # noqa: F401  (each registers its command)
    convert,
    fetch,
    info,
    launch,
    partition,
    profile,
    reorder,
    retexo,
    serve,
    slicegcn,
    synth,
    testbed,
)
from remotegnn.cli.app import app


def main() -> None:
    app()


if __name__ == "__main__":
    main()
