"""`remotegnn serve`: a memory server. As a memory rank of `remotegnn launch` it streams batches to
the job's learners over MPI; with --listen it answers PyG FeatureStore/GraphStore clients over TCP.

The server's resource options are declared once here; `remotegnn launch` reuses them and
passes them on (``serve_flags``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError

from remotegnn.cli.app import app, flag_errors, handle_errors

CacheGb = Annotated[Optional[float], typer.Option(help="RAM for hot feature rows, GB (10^9 bytes), per memory rank")]
Policy = Annotated[Optional[str], typer.Option(help="which rows the cache holds: presample, degree or none")]
BatchCreators = Annotated[Optional[int], typer.Option(help="sampling processes (default: half the vCPUs)")]
VectorLoaders = Annotated[Optional[int], typer.Option(help="feature-gathering processes (default: a quarter of the vCPUs)")]
VolumeMbps = Annotated[Optional[float], typer.Option(help="emulate a cloud volume for cache misses: MB/s (gp3: 125)")]
VolumeIops = Annotated[Optional[float], typer.Option(help="... and its IOPS (gp3: 3000); either flag turns emulation on")]


def serve_flags(cache_gb=None, policy=None, batch_creators=None, vector_loaders=None, volume_mbps=None,
                volume_iops=None) -> list[str]:
    """The `serve` options given, as command-line flags (what `launch` hands its memory ranks)."""
    values = {"--cache-gb": cache_gb, "--policy": policy, "--batch-creators": batch_creators,
              "--vector-loaders": vector_loaders, "--volume-mbps": volume_mbps, "--volume-iops": volume_iops}
    return [part for flag, value in values.items() if value is not None for part in (flag, str(value))]


def serve_config(dataset, cache_gb, policy, batch_creators, vector_loaders, volume_mbps, volume_iops,
                 stats_every: float = 10.0):
    """Validate the options into a ServeConfig (errors name the flag)."""
    from remotegnn.mpi.server import ServeConfig
    from remotegnn.server import PipelineOptions
    from remotegnn.volume import VolumeLimits

    defaults = {"cache_bytes": None if cache_gb is None else int(cache_gb * 1e9), "cache_policy": policy,
                "batch_creators": batch_creators, "vector_loaders": vector_loaders}
    defaults = {k: v for k, v in defaults.items() if v is not None}
    volume = {"mb_per_s": volume_mbps, "iops": volume_iops}
    volume = {k: v for k, v in volume.items() if v is not None} or None
    try:
        PipelineOptions(**defaults)
        if volume is not None:
            VolumeLimits(**volume)
        return ServeConfig(dataset=dataset, defaults=defaults, volume=volume, stats_every_s=stats_every)
    except ValidationError as exc:
        raise flag_errors(exc, {"cache_bytes": "cache_gb", "cache_policy": "policy", "mb_per_s": "volume_mbps",
                                "iops": "volume_iops", "stats_every_s": "stats_every"}) from None


@app.command()
@handle_errors
def serve(
    dataset: Annotated[Optional[Path], typer.Argument(help="dataset directory served when a loader names none")] = None,
    listen: Annotated[Optional[str], typer.Option(help="HOST:PORT: serve PyG remote stores over TCP instead of MPI")] = None,
    cache_gb: CacheGb = None,
    policy: Policy = None,
    batch_creators: BatchCreators = None,
    vector_loaders: VectorLoaders = None,
    volume_mbps: VolumeMbps = None,
    volume_iops: VolumeIops = None,
    stats_every: Annotated[float, typer.Option(help="seconds between stats lines on stderr")] = 10.0,
) -> None:
    """Serve a dataset: as a memory rank of `remotegnn launch` (MPI), or to PyG stores (--listen).

    Run without --listen outside `remotegnn launch`, it stops with an error: separately started
    MPI jobs cannot connect, so the servers and the training script are always one job.
    """
    from remotegnn.errors import UsageError

    config = serve_config(dataset, cache_gb, policy, batch_creators, vector_loaders, volume_mbps, volume_iops,
                          stats_every)
    if listen is not None:
        _listen(config, listen)
        return
    from remotegnn.mpi.server import serve as serve_mpi
    from remotegnn.mpi.world import world

    here = world()
    if not here.is_memory:
        raise UsageError(f"rank {here.rank} is a learner rank: `remotegnn launch` runs serve on the first "
                         f"{here.memory_ranks} rank(s) only")
    serve_mpi(here, config)


def _listen(config, listen: str) -> None:
    from remotegnn.errors import UsageError
    from remotegnn.pyg.server import run_server

    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise UsageError(f"--listen {listen!r}: give HOST:PORT, e.g. 127.0.0.1:7070 (port 0 picks a free one)")
    if config.dataset is None:
        raise UsageError("--listen needs the DATASET to serve")
    defaults = config.defaults
    run_server(config.dataset, host, int(port), cache_bytes=defaults.get("cache_bytes", 0),
               policy=defaults.get("cache_policy", "degree"),
               on_ready=lambda h, p: print(f"remotegnn store server listening on {h}:{p}", flush=True))
