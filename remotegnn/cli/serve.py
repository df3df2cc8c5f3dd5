"""`remotegnn serve`: a memory server. As a memory rank of `remotegnn launch` it streams batches to
the job's learners over MPI; with --listen it answers PyG FeatureStore/GraphStore clients over TCP.

The server's resource options are declared once here; `remotegnn launch` reuses them and
passes them on (``serve_flags``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from pydantic import ValidationError

from foundation.cli import handle_errors, host_port_option, usage_from_validation
from remotegnn.cli.app import app

CacheGb = Annotated[Optional[float], typer.Option(help="RAM for hot feature rows, GB (10^9 bytes), per memory rank")]
Policy = Annotated[
    Optional[str],
    typer.Option(help="which rows the cache holds: degree, presample, auto (the better on a sampled epoch) or none"),
]
BatchCreators = Annotated[Optional[int], typer.Option(help="sampling processes (default: half the vCPUs)")]
VectorLoaders = Annotated[
    Optional[int], typer.Option(help="feature-gathering processes (default: a quarter of the vCPUs)")
]
VolumeMbps = Annotated[Optional[float], typer.Option(help="emulate a cloud volume for cache misses: MB/s (gp3: 125)")]
VolumeIops = Annotated[
    Optional[float], typer.Option(help="... and its IOPS (gp3: 3000); either flag turns emulation on")
]
Layout = Annotated[
    Optional[str],
    typer.Option(
        help="how feature rows are dealt to the memory ranks: striped (default: runs of about 64 MiB of the feature "
        "file dealt in turn, so each rank reads only its own part), range (one run each) or modulo (row v on rank "
        "v % ranks); every rank of a job uses the same, and a staged shard (remotegnn fetch --shard) must match it"
    ),
]
STATS_EVERY_S = 10.0  # the MPI server's default period between stats lines

LISTEN_REFUSES = {
    "--batch-creators": "the store server samples in each client's request thread, it has no batch creators",
    "--vector-loaders": "the store server gathers feature rows in each client's request thread, it has no "
    "vector loaders",
    "--stats-every": "the store server prints no periodic stats (with a volume limit, its totals when it stops)",
    "--layout": "the store server serves every row of the dataset itself, it deals rows to no other rank",
}
"""MPI-server options that mean nothing to the store server, and why. --listen refuses them rather
than ignore them, so no one takes a store server for sized or paced by them."""


def serve_flags(
    cache_gb=None,
    policy=None,
    batch_creators=None,
    vector_loaders=None,
    volume_mbps=None,
    volume_iops=None,
    layout=None,
) -> list[str]:
    """The `serve` options given, as command-line flags (what `launch` hands its memory ranks)."""
    values = {
        "--cache-gb": cache_gb,
        "--policy": policy,
        "--batch-creators": batch_creators,
        "--vector-loaders": vector_loaders,
        "--volume-mbps": volume_mbps,
        "--volume-iops": volume_iops,
        "--layout": layout,
    }
    return [part for flag, value in values.items() if value is not None for part in (flag, str(value))]


def serve_config(
    dataset,
    cache_gb,
    policy,
    batch_creators,
    vector_loaders,
    volume_mbps,
    volume_iops,
    stats_every: float = STATS_EVERY_S,
    layout: str | None = None,
):
    """Validate the options into a ServeConfig (errors name the flag)."""
    from remotegnn.mpi.server import ServeConfig
    from remotegnn.server import PipelineOptions
    from remotegnn.volume import VolumeLimits

    defaults = {
        "cache_bytes": None if cache_gb is None else int(cache_gb * 1e9),
        "cache_policy": policy,
        "batch_creators": batch_creators,
        "vector_loaders": vector_loaders,
    }
    defaults = {k: v for k, v in defaults.items() if v is not None}
    given_volume = {"mb_per_s": volume_mbps, "iops": volume_iops}
    volume: dict[str, Any] | None = {k: v for k, v in given_volume.items() if v is not None} or None
    try:
        PipelineOptions(**defaults)
        if volume is not None:
            VolumeLimits(**volume)
        shards = {} if layout is None else {"layout": layout}
        return ServeConfig(dataset=dataset, defaults=defaults, volume=volume, stats_every_s=stats_every, **shards)
    except ValidationError as exc:
        raise usage_from_validation(
            exc,
            {
                "cache_bytes": "--cache-gb",
                "cache_policy": "--policy",
                "mb_per_s": "--volume-mbps",
                "iops": "--volume-iops",
                "stats_every_s": "--stats-every",
                "layout": "--layout",
            },
        ) from None


@app.command()
@handle_errors
def serve(
    dataset: Annotated[Optional[Path], typer.Argument(help="dataset directory served when a loader names none")] = None,
    listen: Annotated[
        Optional[str], typer.Option(help="HOST:PORT: serve PyG remote stores over TCP instead of MPI")
    ] = None,
    cache_gb: CacheGb = None,
    policy: Policy = None,
    batch_creators: BatchCreators = None,
    vector_loaders: VectorLoaders = None,
    volume_mbps: VolumeMbps = None,
    volume_iops: VolumeIops = None,
    layout: Layout = None,
    stats_every: Annotated[
        Optional[float],
        typer.Option(help=f"seconds between stats lines on stderr (default {STATS_EVERY_S:g}; not with --listen)"),
    ] = None,
) -> None:
    """Serve a dataset: as a memory rank of `remotegnn launch` (MPI), or to PyG stores (--listen).

    Run without --listen outside `remotegnn launch`, it stops with an error: separately started
    MPI jobs cannot connect, so the servers and the training script are always one job.

    With --listen, the cache and volume options apply to the store server; --batch-creators,
    --vector-loaders, --stats-every and --layout are refused (it has no such processes, stats
    lines or other ranks).
    """
    from foundation.errors import UsageError

    if listen is not None:
        given = {
            "--batch-creators": batch_creators,
            "--vector-loaders": vector_loaders,
            "--stats-every": stats_every,
            "--layout": layout,
        }
        for flag, value in given.items():
            if value is not None:
                raise UsageError(f"{flag} has no effect with --listen: {LISTEN_REFUSES[flag]}; drop it")
    config = serve_config(
        dataset,
        cache_gb,
        policy,
        batch_creators,
        vector_loaders,
        volume_mbps,
        volume_iops,
        STATS_EVERY_S if stats_every is None else stats_every,
        layout,
    )
    if listen is not None:
        _listen(config, listen)
        return
    from remotegnn.mpi.server import serve as serve_mpi
    from remotegnn.mpi.world import world

    here = world()
    if not here.is_memory:
        raise UsageError(
            f"rank {here.rank} is a learner rank: `remotegnn launch` runs serve on the first "
            f"{here.memory_ranks} rank(s) only"
        )
    serve_mpi(here, config)


def _listen(config, listen: str) -> None:
    from foundation.errors import UsageError
    from remotegnn.pyg.server import run_server
    from remotegnn.volume import VolumeLimits

    host, port = host_port_option(listen, "--listen", allow_port_zero=True)
    if config.dataset is None:
        raise UsageError("--listen needs the DATASET to serve")
    defaults = config.defaults
    run_server(
        config.dataset,
        host,
        port,
        cache_bytes=defaults.get("cache_bytes", 0),
        policy=defaults.get("cache_policy", "degree"),
        volume_limits=None if config.volume is None else VolumeLimits(**config.volume),
        on_ready=lambda h, p: print(f"remotegnn store server listening on {h}:{p}", flush=True),
    )
