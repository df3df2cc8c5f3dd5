"""Entry point of the `fullgraph` console script."""

from __future__ import annotations

from foundation import process
from fullgraph.cli import partition, retexo, slicegcn  # noqa: F401  (each registers its commands)
from fullgraph.cli.app import app


def main() -> None:
    process.start()
    app()


if __name__ == "__main__":
    main()
