"""Entry point of the `remotegnn` console script."""

from __future__ import annotations

from foundation import process
from remotegnn.cli import (  # noqa: F401  (each registers its command)
    convert,
    fetch,
    info,
    launch,
    profile,
    reorder,
    serve,
    shards,
    synth,
)
from remotegnn.cli.app import app


def main() -> None:
    process.start()
    app()


if __name__ == "__main__":
    main()
