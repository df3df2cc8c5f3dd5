"""`planner`: what to rent on AWS to train a GNN on a graph larger than one machine.

Every command that prints a result takes --json (the same pydantic models the API and plan
files use). Errors print one line without a traceback: exit 2 for a wrong request, 1 for one
that cannot be satisfied.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError

from contracts.plan import DEFAULT_MAX_MEMORY_NODES, MAX_MEMORY_NODES, PlanRequest
from contracts.workload import FullGraphJob, Workload
from foundation import process
from foundation.cli import (
    csv_option,
    emit_json,
    err,
    handle_errors,
    model_default,
    out,
    usage_from_validation,
)
from foundation.errors import UsageError
from planner.catalog.build import write_snapshot
from planner.catalog.snapshot import load_catalog
from planner.cli import render
from planner.wording import infeasible_text

app = typer.Typer(
    help="ClusterPlanner: price every feasible AWS cluster for GNN training and recommend the cheapest.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
pricing_app = typer.Typer(help="Build, refresh and inspect the price snapshot.", no_args_is_help=True)
app.add_typer(pricing_app, name="pricing")

DEFAULT_REFRESH_DIR = Path.home() / ".memorybridge" / "pricing"
SNAPSHOT_HELP = "price snapshot (default: the shipped one)"
SNAPSHOT_META_HELP = "print the snapshot's path and metadata as JSON"  # pricing build and refresh


@app.command()
@handle_errors
def recommend(
    dataset: Annotated[
        Optional[str], typer.Option("--dataset", "-d", help="built-in dataset (see `planner datasets`)")
    ] = None,
    dataset_file: Annotated[
        Optional[Path], typer.Option(help="your graph's profile JSON (written by `remotegnn profile`)")
    ] = None,
    budget: Annotated[Optional[float], typer.Option(help="total budget for the whole job, USD")] = None,
    epochs: Annotated[int, typer.Option(help="training epochs")] = model_default(Workload, "epochs"),
    deadline: Annotated[Optional[float], typer.Option(help="finish within this many hours (start-up included)")] = None,
    max_hourly: Annotated[Optional[float], typer.Option(help="cluster price cap, USD per hour")] = None,
    model: Annotated[
        str, typer.Option(help="cost model: pipeline (stage by stage) or paper (MemoryBridge paper, eqs. 3-8)")
    ] = model_default(PlanRequest, "model"),
    spot: Annotated[
        bool, typer.Option("--spot", help="price spot instances (lowest zone) instead of on-demand")
    ] = False,
    ena_express: Annotated[
        bool,
        typer.Option(
            "--ena-express",
            help="price ENA Express (25 Gbit/s per flow instead of 10) where the learner and memory types both "
            "support it; `provision up` then enables it",
        ),
    ] = False,
    gpu_families: Annotated[Optional[str], typer.Option(help="learner families, comma-separated (g4dn,g5)")] = None,
    memory_families: Annotated[Optional[str], typer.Option(help="memory-machine families (r8g,x2gd)")] = None,
    max_memory_gib: Annotated[Optional[float], typer.Option(help="largest RAM of any machine, GiB")] = None,
    arch: Annotated[Optional[str], typer.Option(help="x86_64 or arm64 for every machine")] = None,
    exclude: Annotated[Optional[str], typer.Option(help="instance types never to use, comma-separated")] = None,
    max_memory_nodes: Annotated[
        int, typer.Option(help=f"largest number k of memory machines (up to {MAX_MEMORY_NODES})")
    ] = DEFAULT_MAX_MEMORY_NODES,
    volume: Annotated[
        Optional[str],
        typer.Option(help="price only this gp3 volume, TYPE:MBPS:IOPS (e.g. gp3:125:3000, gp3's baseline)"),
    ] = None,
    volume_mbps: Annotated[Optional[int], typer.Option(help="price only gp3 volumes of this MB/s (125-1000)")] = None,
    volume_iops: Annotated[
        Optional[int], typer.Option(help="price only gp3 volumes of these IOPS (3000-16000)")
    ] = None,
    batch_size: Annotated[int, typer.Option(help="seed nodes per mini-batch")] = model_default(Workload, "batch_size"),
    fanouts: Annotated[str, typer.Option(help="neighbours sampled per hop, -1 = all")] = ",".join(
        map(str, model_default(Workload, "fanouts"))
    ),
    hidden_dim: Annotated[int, typer.Option(help="hidden width of the GNN (every method)")] = model_default(
        Workload, "hidden_dim"
    ),
    cache_policy: Annotated[
        str, typer.Option(help="how every feature cache ranks rows: degree or presample")
    ] = model_default(Workload, "cache_policy"),
    learner_cache: Annotated[
        str,
        typer.Option(
            help="feature rows the learner keeps in RAM (never sent): auto (sized from its free RAM, as "
            "DistributedGraphLoader does by default), none, or GiB (the loader's learner_cache)"
        ),
    ] = model_default(Workload, "learner_cache"),
    gpu_cache_gib: Annotated[
        str,
        typer.Option(
            help="feature rows each training GPU keeps in its memory (never sent or copied): 0 or none (off, "
            "as DistributedGraphLoader's device_cache by default), auto (what the model and the largest batch "
            "leave free), or GiB"
        ),
    ] = "0",
    wire_dtype: Annotated[
        str,
        typer.Option(
            help="feature precision on the link: float32 (exact), float16 or bfloat16 (half the bytes, lossy), "
            "or auto (float16 where it is cheaper)"
        ),
    ] = model_default(Workload, "wire_dtype"),
    sampling: Annotated[
        str,
        typer.Option(
            help="who samples the batches of a two-level cluster: memory (the memory machines send compact "
            "frames), learner (the learner holds the graph's CSC and asks only for the rows it lacks), or auto "
            "(both priced, the cheaper kept)"
        ),
    ] = model_default(Workload, "sampling"),
    shard_layout: Annotated[
        str,
        typer.Option(
            help="how feature rows are dealt to the memory machines (`remotegnn serve --layout`): striped (runs of "
            "about 64 MiB of the feature file dealt in turn: each copies and reads only its own part), range (one "
            "run each) or modulo (row v on machine v % k: each reads most of the file to fill its caches)"
        ),
    ] = model_default(Workload, "shard_layout"),
    flows: Annotated[
        int,
        typer.Option(
            help="TCP flows each memory machine streams over (`remotegnn launch --flows`): AWS carries at most "
            "10 Gbit/s per flow in a placement group, so one flow caps a faster memory machine"
        ),
    ] = model_default(Workload, "flows"),
    gpus: Annotated[
        Optional[int],
        typer.Option(
            help="at most this many GPUs of the learner train, one data-parallel rank each (`remotegnn launch "
            "--learners`); default: every GPU the learner has"
        ),
    ] = None,
    learner_machines: Annotated[
        int,
        typer.Option(
            help="GPU machines that learn side by side, data-parallel, fed by the same memory machines (two-level "
            "plans only)"
        ),
    ] = model_default(Workload, "learner_machines"),
    method: Annotated[
        str,
        typer.Option(
            help="sampled (mini-batches streamed to a GPU learner), or full-graph training on GPU-less workers "
            "holding a partition each: standard (boundary exchanges every round) or retexo (one per layer); or "
            "slicegcn: each worker the whole graph and a column slice of the features"
        ),
    ] = model_default(PlanRequest, "method"),
    gnn: Annotated[
        Optional[str],
        typer.Option(help="full-graph methods: gcn, sage or gat (default: sage; slicegcn trains gcn only)"),
    ] = None,
    layers: Annotated[int, typer.Option(help="full-graph methods: message-passing layers K")] = model_default(
        FullGraphJob, "layers"
    ),
    heads: Annotated[int, typer.Option(help="full-graph methods: GAT's heads on hidden layers")] = model_default(
        FullGraphJob, "heads"
    ),
    rounds: Annotated[
        int,
        typer.Option(
            help="full-graph methods: rounds R (RETEXO: per layer; the RETEXO paper uses 100; slicegcn: epochs)"
        ),
    ] = model_default(FullGraphJob, "rounds"),
    classes: Annotated[
        Optional[int], typer.Option(help="full-graph methods: output classes (default: the dataset's)")
    ] = None,
    workers: Annotated[
        Optional[int],
        typer.Option(
            help="full-graph methods: the number of workers n (default: every n from 2 to --max-memory-nodes)"
        ),
    ] = None,
    boundary_rows: Annotated[
        Optional[int],
        typer.Option(help="full-graph methods: halo rows summed over workers, measured (default: random placement)"),
    ] = None,
    partition: Annotated[
        Optional[Path],
        typer.Option(help="full-graph methods: partition.json of `fullgraph partition`: its workers and boundary rows"),
    ] = None,
    workers_in: Annotated[
        str,
        typer.Option(
            help="full-graph methods: where the workers are: zone (one AZ), zones (an AZ each), regions (a region "
            "each) or internet; sets the transfer price and latency"
        ),
    ] = model_default(FullGraphJob, "workers_in"),
    feature_fusion: Annotated[
        bool,
        typer.Option(
            "--feature-fusion",
            help="slicegcn: the master sends each worker a fused feature slice every epoch and takes its gradient back",
        ),
    ] = False,
    solver: Annotated[str, typer.Option(help="enumerate (vectorised) or milp (CBC; same optimum)")] = model_default(
        PlanRequest, "solver"
    ),
    top: Annotated[int, typer.Option(help="plans to show")] = model_default(PlanRequest, "top"),
    as_json: Annotated[bool, typer.Option("--json", help="print the recommendation as JSON")] = False,
    plot: Annotated[Optional[Path], typer.Option(help="write the cost-vs-time frontier as a PNG")] = None,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="write the plan JSON for `provision up`")
    ] = None,
    snapshot: Annotated[Optional[Path], typer.Option(envvar="MEMORYBRIDGE_SNAPSHOT", help=SNAPSHOT_HELP)] = None,
    calibration: Annotated[
        Optional[Path], typer.Option(help="pipeline-model coefficients JSON (`planner calibrate`)")
    ] = None,
) -> None:
    """Recommend the cheapest cluster that trains DATASET within the budget, with the runners-up.\f

    Long because typer declares every option in the signature; the options reach the request by
    their names (planner.cli.request), and the body only answers.
    """
    options = dict(locals())  # taken first: every option by its parameter name, and nothing else
    from contracts.calibration import DEFAULT_COEFFICIENTS, load_coefficients
    from contracts.plan import write_plan
    from planner.cli.request import plan_request
    from planner.solver.recommend import recommend as run_recommend

    request = plan_request(options)
    coefficients = load_coefficients(calibration) if calibration else DEFAULT_COEFFICIENTS
    rec = run_recommend(request, catalog=load_catalog(snapshot), coefficients=coefficients)
    if as_json:
        emit_json(rec)
    else:
        out.print(render.recommendation(rec, top))
    if plot:
        from planner.cli.plot import frontier_png

        frontier_png(rec, plot)
        err.print(f"frontier plot written to {plot}")
    if not rec.feasible:
        if not as_json:
            err.print("[bold red]error:[/] " + infeasible_text(rec), highlight=False, soft_wrap=True)
        raise typer.Exit(1)
    if output:
        write_plan(rec, output)
        err.print(f"plan written to {output} (plan id {rec.plan_id})")


@app.command()
@handle_errors
def instances(
    gpu: Annotated[
        Optional[bool], typer.Option("--gpu/--no-gpu", help="only GPU types (--no-gpu: only GPU-less types)")
    ] = None,
    family: Annotated[Optional[str], typer.Option(help="only these families, comma-separated")] = None,
    min_memory_gib: Annotated[Optional[float], typer.Option(help="only types with at least this much RAM, GiB")] = None,
    arch: Annotated[Optional[str], typer.Option(help="only x86_64 or only arm64 types")] = None,
    all_types: Annotated[bool, typer.Option("--all", help="include types without a price")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the instance types as JSON")] = False,
    snapshot: Annotated[Optional[Path], typer.Option(envvar="MEMORYBRIDGE_SNAPSHOT", help=SNAPSHOT_HELP)] = None,
) -> None:
    """List instance types of the price snapshot with specs and prices (the same filters as GET /v1/instances)."""
    from planner.catalog.selection import InstanceFilter, select_instances

    try:
        criteria = InstanceFilter(
            gpu=gpu, families=csv_option(family), min_memory_gib=min_memory_gib, arch=arch, include_unpriced=all_types
        )
    except ValidationError as exc:
        raise usage_from_validation(exc, {"families": "--family", "include_unpriced": "--all"}) from None
    catalog = load_catalog(snapshot)
    chosen = select_instances(catalog, criteria)
    if as_json:
        emit_json(chosen)
    else:
        out.print(render.instances_table(chosen))
        out.print(render.snapshot_line(catalog.info()))


@app.command()
@handle_errors
def datasets(
    as_json: Annotated[bool, typer.Option("--json", help="print the built-in profiles as JSON")] = False,
    schema: Annotated[bool, typer.Option("--schema", help="print the dataset-profile JSON schema")] = False,
) -> None:
    """List the built-in dataset profiles (or print the profile schema for --dataset-file)."""
    from contracts.profile import DatasetProfile
    from planner.datasets.builtin import BUILTIN

    if schema:
        sys.stdout.write(json.dumps(DatasetProfile.model_json_schema(), indent=2) + "\n")
    elif as_json:
        emit_json(list(BUILTIN.values()))
    else:
        out.print(render.datasets_table(list(BUILTIN.values())))


@app.command()
@handle_errors
def explain(
    plan_file: Annotated[Path, typer.Argument(help="a plan JSON written by `planner recommend -o`")],
    as_json: Annotated[bool, typer.Option("--json", help="print the plan as JSON")] = False,
) -> None:
    """Explain a plan: where an epoch's time goes, what bounds it, and the alternatives."""
    from contracts.plan import read_plan

    rec = read_plan(plan_file)
    if as_json:
        emit_json(rec)
        return
    out.print(render.recommendation(rec, rec.request.top))
    if rec.chosen:
        out.print(render.stage_bars(rec.chosen))
        once = (
            "the graph and the feature slices loaded"
            if rec.request.method == "slicegcn"
            else "partitions loaded and one-time exchanges"
            if rec.chosen.layout == "partitioned"
            else "structure and caches loaded once"
        )
        out.print(f"Start-up ({once}): {render.duration(rec.chosen.startup_seconds)}")
        for line in render.data_path_lines(rec.chosen, rec.request.workload.cache_policy):
            out.print(line, highlight=False)


@app.command()
@handle_errors
def calibrate(
    runs: Annotated[
        list[Path],
        typer.Option(
            "--from",
            help="a runs file of `testbed run`, a job record of `provision run`, or a GPU's measured "
            "steps (benchmarks/gpu_steps.py) (repeatable; more files may follow, as a shell glob gives "
            "them: --from runs/*.json)",
        ),
    ],
    more: Annotated[
        Optional[list[Path]], typer.Argument(help="more runs files or job records", show_default=False)
    ] = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="coefficients JSON for `recommend --calibration`")
    ] = Path("calibration.json"),
    as_json: Annotated[bool, typer.Option("--json", help="print what was fitted as JSON")] = False,
) -> None:
    """Fit the pipeline model's coefficients from measured runs (testbed runs, cluster jobs) and write them to --output.

    A cluster job's learner step rate is fitted under its GPU's name (gpu_tflops.T4, ...), so your
    own jobs refine the model for the instance types you use; a GPU steps file fits that GPU's
    compute and memory rates (gpu_tflops.H100, gpu_memory_gbps.H100) and the step overhead.
    """
    from foundation.fileio import write_model
    from planner.calibration.fit import fit
    from planner.calibration.runs import load_inputs

    measured, gpu_steps = load_inputs(*runs, *(more or []))
    report = fit(measured, gpu_steps=gpu_steps)
    write_model(output, report.coefficients)
    if as_json:
        emit_json(report)
    else:
        for value in report.fitted:
            out.print(
                f"{value.name} = {value.value:.4g} (default {value.default:.4g})"
                + (f" from runs {value.runs}" if value.runs else "")
                + f": {value.how}",
                highlight=False,
            )
        for index, why in report.skipped.items():
            err.print(f"run {index} skipped: {why}", highlight=False)
        out.print(f"kept at defaults: {', '.join(report.kept_default)}", highlight=False)
    err.print(f"calibration written to {output}; use it with `planner recommend --calibration {output}`")


@app.command()
@handle_errors
def serve(
    host: Annotated[str, typer.Option(help="address to listen on (0.0.0.0 for every interface)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port")] = 8000,
    snapshot: Annotated[Optional[Path], typer.Option(envvar="MEMORYBRIDGE_SNAPSHOT", help=SNAPSHOT_HELP)] = None,
) -> None:
    """Serve these answers as a REST API (FastAPI app api.app:app under uvicorn; docs at /docs)."""
    import os

    import uvicorn

    if snapshot is not None:
        load_catalog(snapshot)  # a broken snapshot fails here, with the usual one-line error
        os.environ["MEMORYBRIDGE_SNAPSHOT"] = str(snapshot)  # the app reads the snapshot from here
    uvicorn.run("api.app:app", host=host, port=port)


@pricing_app.command("show")
@handle_errors
def pricing_show(
    as_json: Annotated[
        bool, typer.Option("--json", help="print the snapshot's metadata, age, volume and transfer prices as JSON")
    ] = False,
    snapshot: Annotated[Optional[Path], typer.Option(envvar="MEMORYBRIDGE_SNAPSHOT", help=SNAPSHOT_HELP)] = None,
) -> None:
    """Show the snapshot's sources, age and contents."""
    catalog = load_catalog(snapshot)
    if as_json:
        sys.stdout.write(
            json.dumps(
                {
                    "meta": catalog.snapshot.meta.model_dump(mode="json"),
                    "info": catalog.info().model_dump(mode="json"),
                    "volumes": [v.model_dump(mode="json") for v in catalog.snapshot.volumes],
                    "transfer": catalog.transfer.model_dump(mode="json"),
                },
                indent=2,
            )
            + "\n"
        )
    else:
        out.print(render.snapshot_summary(catalog.snapshot, catalog.info()))


@pricing_app.command("build")
@handle_errors
def pricing_build(
    prices_csv: Annotated[
        Path, typer.Option(help="CSV price table (instance_type, ondemand_usd_per_hour, spot_usd_per_hour_min)")
    ],
    retrieved_on: Annotated[str, typer.Option(help="date the prices were retrieved, YYYY-MM-DD")],
    output: Annotated[Path, typer.Option("--output", "-o", help="snapshot file to write")],
    specs: Annotated[
        str, typer.Option(help="spec source: moto (bundled, offline) or aws (live describe_instance_types)")
    ] = "moto",
    region: Annotated[str, typer.Option(help="AWS region the prices are for")] = "us-east-1",
    spot_advisor: Annotated[
        Optional[str],
        typer.Option(
            help="AWS Spot Instance Advisor data (a saved spot-advisor-data.json, or its URL): each type's spot "
            "interruption band, retrieved on --retrieved-on"
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=SNAPSHOT_META_HELP)] = False,
) -> None:
    """Build a snapshot offline from a spec source and a CSV price table (same inputs, same bytes)."""
    from planner.catalog.sources import offline_snapshot

    try:
        day = dt.date.fromisoformat(retrieved_on)
    except ValueError:
        raise UsageError(f"--retrieved-on: {retrieved_on!r} is not a date like 2026-11-01") from None
    ec2 = _client("ec2", region) if specs == "aws" else None
    snap = offline_snapshot(prices_csv, day, region=region, specs=specs, ec2_client=ec2, spot_advisor=spot_advisor)
    write_snapshot(snap, output)
    _report_snapshot(snap, output, as_json)


@pricing_app.command("refresh")
@handle_errors
def pricing_refresh(
    region: Annotated[str, typer.Option(help="AWS region to price")] = "us-east-1",
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="default: ~/.memorybridge/pricing/aws-REGION.json")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help=SNAPSHOT_META_HELP)] = False,
) -> None:
    """Rebuild the snapshot live from AWS (needs credentials); use it with --snapshot or MEMORYBRIDGE_SNAPSHOT."""
    from planner.catalog.pricelist import PRICE_LIST_ENDPOINT_REGION
    from planner.catalog.sources import live_snapshot

    target = output or DEFAULT_REFRESH_DIR / f"aws-{region}.json"
    with err.status(f"reading instance types, prices and spot prices for {region} from AWS..."):
        snap = live_snapshot(
            region, _client("ec2", region), _client("pricing", PRICE_LIST_ENDPOINT_REGION), dt.date.today()
        )
    write_snapshot(snap, target)
    _report_snapshot(snap, target, as_json)


def _client(service: str, region: str):
    import boto3

    return boto3.client(service, region_name=region)


def _report_snapshot(snap, path: Path, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"path": str(path), "meta": snap.meta.model_dump(mode="json")}, indent=2) + "\n")
    else:
        out.print(f"wrote {path}: {snap.meta.notes[-1]}", soft_wrap=True)


def main() -> None:
    process.start()
    app()


if __name__ == "__main__":
    main()
