"""Entry point of the `remotegnn` console script."""

from __future__ import annotations

from remotegnn.cli import convert, info, launch, profile, serve, synth  # noqa: F401  (each registers its command)
from remotegnn.cli import testbed  # noqa: F401  (registers the `testbed` command group)
from remotegnn.cli.app import app


def main() -> None:
    app()


if __name__ == "__main__":
    main()
