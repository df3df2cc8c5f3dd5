"""`remotegnn launch`: run memory servers and a training script as one MPI job."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError

from foundation.cli import SIGNAL_EXIT_BASE, err, handle_errors, stopping_signal, usage_from_validation
from remotegnn.cli.app import app
from remotegnn.cli.serve import (
    BatchCreators,
    CacheGb,
    Layout,
    Policy,
    VectorLoaders,
    VolumeIops,
    VolumeMbps,
    serve_config,
    serve_flags,
)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@handle_errors
def launch(
    train: Annotated[list[str], typer.Argument(help="the training command, after `--`", show_default=False)],
    memory: Annotated[int, typer.Option(help="memory ranks (one per memory machine); they shard the feature rows")] = 1,
    learners: Annotated[int, typer.Option(help="learner ranks; each gets its own slice of every epoch's seeds")] = 1,
    hostfile: Annotated[
        Optional[Path], typer.Option(help="Open MPI hostfile, e.g. from `provision up` (default: this host)")
    ] = None,
    dataset: Annotated[
        Optional[Path], typer.Option(help="dataset the memory ranks serve when a loader names none")
    ] = None,
    cache_gb: CacheGb = None,
    policy: Policy = None,
    batch_creators: BatchCreators = None,
    vector_loaders: VectorLoaders = None,
    volume_mbps: VolumeMbps = None,
    volume_iops: VolumeIops = None,
    layout: Layout = None,
    mpi_arg: Annotated[
        Optional[list[str]],
        typer.Option(
            help="extra mpiexec options, split like a shell (repeatable; glue with =): --mpi-arg='--mca btl tcp,self'"
        ),
    ] = None,
    flows: Annotated[
        int,
        typer.Option(
            help="TCP connections between each pair of ranks (Open MPI's btl_tcp_links; the plan's data_path.flows): "
            "AWS carries at most 10 Gbit/s per flow in a placement group"
        ),
    ] = 1,
    mpiexec: Annotated[Optional[str], typer.Option(help="mpiexec to use (default: the venv's, else PATH)")] = None,
    progress: Annotated[
        Optional[Path],
        typer.Option(help="file the first learner's loader appends a JSON progress event to as each epoch ends"),
    ] = None,
    checkpoint_request: Annotated[
        Optional[Path],
        typer.Option(
            help="a file whose appearance asks the training script's Checkpointer for a checkpoint at its next step "
            "(provision run creates it at a spot machine's interruption notice)"
        ),
    ] = None,
    sampling: Annotated[
        str,
        typer.Option(
            help="who samples the batches: memory (the memory ranks send whole batches) or learner (each learner "
            "samples from its own copy of the dataset, at the same path, and asks only for the feature rows it "
            "lacks); a loader's sampling= argument wins"
        ),
    ] = "memory",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the mpiexec command instead of running it")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="with --dry-run: print the command as a JSON list")] = False,
) -> None:
    """Run `remotegnn serve` on --memory ranks and TRAIN on --learners ranks in one mpiexec job.

    Example: remotegnn launch --memory 1 --dataset data/cora -- python examples/train_graphsage.py --dataset data/cora

    The training script's DistributedGraphLoader finds its memory ranks by itself. The job's exit
    status is the command's; a rank that fails or dies ends the whole job at once, and Ctrl-C,
    SIGTERM or SIGHUP stops every rank (exit 128 + the signal's number).
    """
    from remotegnn.mpmd import LaunchOptions, mpiexec_command, run

    resources = (cache_gb, policy, batch_creators, vector_loaders, volume_mbps, volume_iops)
    serve_config(dataset, *resources, layout=layout)  # fail early
    try:
        options = LaunchOptions(
            memory=memory,
            learners=learners,
            hostfile=hostfile,
            dataset=dataset,
            serve_args=serve_flags(*resources, layout=layout),
            mpi_args=[part for arg in mpi_arg or [] for part in shlex.split(arg)],
            mpiexec=mpiexec,
            progress=progress,
            checkpoint_request=checkpoint_request,
            flows=flows,
            sampling=sampling,
        )
    except ValidationError as exc:
        raise usage_from_validation(exc) from None
    if dry_run:
        command = mpiexec_command(options, train)
        typer.echo(json.dumps(command) if as_json else shlex.join(command))
        return
    try:
        code = run(options, train)
    except KeyboardInterrupt as interrupt:
        stopped = stopping_signal(interrupt)
        err.print(f"[bold red]interrupted[/] by {stopped.name}: every rank of the job was stopped", highlight=False)
        raise typer.Exit(SIGNAL_EXIT_BASE + stopped) from None
    raise typer.Exit(code)
