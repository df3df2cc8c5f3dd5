"""The `planner` CLI as users run it: a real process, its output, its exit codes and its files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contracts.plan import Recommendation, read_plan
from foundation.units import duration
from planner.catalog.build import write_snapshot
from planner.catalog.snapshot import load_catalog
from planner.datasets.builtin import builtin_profile

PLANNER = [sys.executable, "-m", "planner.cli.main"]


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*PLANNER, *args], capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )


def test_main_job_prints_a_papers100m_recommendation():
    result = run("recommend", "--dataset", "papers100M", "--budget", "50")
    assert result.returncode == 0, result.stderr
    assert "Recommended:" in result.stdout and "Bottleneck:" in result.stdout
    assert "snapshot of 2026-11-01" in result.stdout
    # Both layouts are on show: among the ranked rows, or as the best of their layout.
    assert " alone " in result.stdout and re.search(r" \+ \d+x ", result.stdout)


def test_json_output_is_a_recommendation():
    result = run("recommend", "-d", "products", "--budget", "5", "--epochs", "3", "--json")
    assert result.returncode == 0, result.stderr
    rec = Recommendation.model_validate_json(result.stdout)
    assert rec.feasible and rec.chosen.total_usd <= 5 and rec.request.workload.epochs == 3


def test_plan_file_plot_and_explain(tmp_path):
    plan, png = tmp_path / "plan.json", tmp_path / "frontier.png"
    result = run(
        "recommend", "-d", "papers100M", "--budget", "50", "--max-memory-gib", "64", "-o", str(plan), "--plot", str(png)
    )
    assert result.returncode == 0, result.stderr
    rec = read_plan(plan)
    assert rec.chosen.layout == "two-level"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    explained = run("explain", str(plan))
    assert explained.returncode == 0
    assert "per-epoch time by stage" in explained.stdout and rec.chosen.bottleneck in explained.stdout
    assert Recommendation.model_validate_json(run("explain", str(plan), "--json").stdout) == rec


def test_infeasible_budget_exits_1_naming_cost_and_fix(tmp_path):
    plan = tmp_path / "plan.json"
    result = run("recommend", "-d", "papers100M", "--budget", "0.05", "-o", str(plan))
    assert result.returncode == 1
    assert "Raise --budget to at least" in result.stderr and "Traceback" not in result.stderr
    assert "constraints.budget_usd" not in result.stdout + result.stderr  # the CLI speaks in options
    assert not plan.exists()  # nothing to provision, nothing written


@pytest.mark.parametrize("flows", [1, 4])
def test_a_fast_memory_machine_is_priced_at_its_flows_times_the_per_flow_cap(flows):
    argv = ["-d", "igb260m", "--epochs", "1", "--gpu-families", "g6", "--memory-families", "r6in"]
    argv += ["--max-memory-nodes", "1", "--learner-cache", "none", "--flows", str(flows), "--json"]
    chosen = Recommendation.model_validate_json(run("recommend", *argv).stdout).chosen
    assert chosen.layout == "two-level" and chosen.data_path.flows == flows
    assert 0 < chosen.data_path.link_gbit_per_s <= (flows + 1) / 2 * 10 <= flows * 10
    if flows == 1:  # 500 TB of rows an epoch over one 10 Gbit/s flow: the link binds, and says why
        assert chosen.bottleneck == "network" and "1 TCP flow at AWS's 10 Gbit/s per flow" in chosen.explanation


def test_ena_express_is_priced_and_named_where_both_machines_support_it():
    argv = ["-d", "papers100M", "--gpu-families", "p5", "--memory-families", "r6in", "--max-memory-nodes", "1"]
    argv += ["--learner-cache", "none", "--exclude", "r6in.large,r6in.xlarge,r6in.2xlarge,r6in.4xlarge", "--json"]
    plain = Recommendation.model_validate_json(run("recommend", *argv).stdout)
    fast = Recommendation.model_validate_json(run("recommend", *argv, "--ena-express").stdout)
    assert fast.request.ena_express and not plain.request.ena_express
    slow, quick = plain.two_level, fast.two_level  # p5.48xlarge + r6in.8xlarge (50 Gbit/s) either way
    assert slow is not None and quick is not None and slow.label == quick.label
    assert not slow.data_path.ena_express and slow.data_path.link_gbit_per_s == 10
    assert "and so does --ena-express (both types support it)" in slow.explanation
    assert quick.data_path.ena_express and quick.data_path.link_gbit_per_s == 25
    assert "1 TCP flow at ENA Express's 25 Gbit/s per flow" in quick.explanation
    assert quick.epoch_seconds == pytest.approx(slow.epoch_seconds * 10 / 25)
    assert quick.usd_per_hour == slow.usd_per_hour


def test_infeasible_json_names_request_fields_not_options():
    result = run("recommend", "-d", "papers100M", "--budget", "50", "--deadline", "0.001", "--json")
    assert result.returncode == 1
    rec = Recommendation.model_validate_json(result.stdout)
    assert rec.infeasibility.code == "deadline" and rec.infeasibility.binding == "constraints.deadline_hours"
    assert "Raise constraints.deadline_hours to at least" in rec.infeasibility.detail
    assert "--" not in rec.reason + rec.infeasibility.model_dump_json()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--budget", "-5"], "--budget"),
        (["--epochs", "0"], "--epochs"),
        (["--fanouts", "15,x"], "--fanouts"),
        (["--gpu-families", "g4dm"], "Did you mean"),
        (["--memory-families", "g5"], "GPU family"),
        (["--model", "magic"], "model"),
        (["--arch", "sparc"], "arch"),
    ],
)
def test_nonsense_exits_2_with_the_reason(args, message):
    result = run("recommend", "-d", "papers100M", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_dataset_name_and_file_are_exclusive(tmp_path):
    assert run("recommend").returncode == 2
    profile = tmp_path / "mine.json"
    profile.write_text(builtin_profile("arxiv").model_copy(update={"name": "mygraph"}).model_dump_json())
    both = run("recommend", "-d", "arxiv", "--dataset-file", str(profile))
    assert both.returncode == 2
    mine = run("recommend", "--dataset-file", str(profile), "--json")
    assert mine.returncode == 0, mine.stderr
    assert Recommendation.model_validate_json(mine.stdout).profile.name == "mygraph"


def test_bad_profile_file_exits_1_naming_the_field(tmp_path):
    profile = tmp_path / "bad.json"
    profile.write_text(json.dumps({**builtin_profile("arxiv").model_dump(mode="json"), "num_train": -3}))
    result = run("recommend", "--dataset-file", str(profile))
    assert result.returncode == 1 and "num_train" in result.stderr


def test_stale_snapshot_is_shown(tmp_path):
    old = load_catalog().snapshot
    snapshot = old.model_copy(
        update={"meta": old.meta.model_copy(update={"retrieved_on": old.meta.retrieved_on.replace(year=2025)})}
    )
    path = write_snapshot(snapshot, tmp_path / "old.json")
    result = run("recommend", "-d", "arxiv", env={"MEMORYBRIDGE_SNAPSHOT": str(path)})
    assert result.returncode == 0
    assert "STALE" in result.stdout and "days old" in result.stdout


def test_listing_commands():
    gpus = json.loads(run("instances", "--gpu", "--json").stdout)
    assert gpus and all(i["gpu_count"] > 0 and i["price_provenance"] for i in gpus)
    family = run("instances", "--family", "r8g")
    assert family.returncode == 0 and "r8g.2xlarge" in family.stdout
    assert run("instances", "--family", "r9z").returncode == 2
    names = {d["name"] for d in json.loads(run("datasets", "--json").stdout)}
    assert {"papers100M", "mag240m", "friendster", "products", "arxiv", "reddit"} <= names
    schema = json.loads(run("datasets", "--schema").stdout)
    assert "cache_curves" in schema["properties"]
    shown = json.loads(run("pricing", "show", "--json").stdout)
    assert shown["meta"]["region"] == "us-east-1"


def test_instances_filter_by_gpu_memory_and_architecture_as_the_api_does():
    """The listing's filters are GET /v1/instances' own: GPU-less arm64 types of 512 GiB or more, priced."""
    listed = run("instances", "--no-gpu", "--arch", "arm64", "--min-memory-gib", "512", "--json")
    assert listed.returncode == 0, listed.stderr
    expected = [
        i.name
        for i in load_catalog().snapshot.instances
        if i.price_provenance and not i.has_gpu and i.arch == "arm64" and i.memory_gib >= 512
    ]
    assert expected and [i["name"] for i in json.loads(listed.stdout)] == expected


@pytest.mark.parametrize(
    "args, message",
    [
        (["--arch", "sparc"], "--arch: Input should be 'x86_64' or 'arm64'"),
        (["--min-memory-gib", "-1"], "--min-memory-gib: Input should be greater than or equal to 0"),
        (["--family", "r8g,r9z"], "unknown family 'r9z'"),
    ],
)
def test_bad_instances_filters_exit_2_in_one_line(args, message):
    result = run("instances", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_help_explains_the_commands():
    result = run("--help")
    for command in ("recommend", "instances", "datasets", "explain", "pricing"):
        assert command in result.stdout
    assert "--budget" in run("recommend", "--help").stdout


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "planner"
    assert script.exists()
    assert subprocess.run([str(script), "datasets"], capture_output=True, timeout=60).returncode == 0


def test_learner_cache_and_wire_options_reach_the_json_and_explain(tmp_path):
    plan = tmp_path / "plan.json"
    result = run(
        "recommend", "-d", "papers100M", "--budget", "50", "--max-memory-gib", "64", "--wire-dtype", "float16",
        "--learner-cache", "20", "--gpu-cache-gib", "2", "--json", "-o", str(plan),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rec = Recommendation.model_validate_json(result.stdout)
    assert rec.request.workload.learner_cache == 20.0 and rec.request.workload.wire_dtype == "float16"
    path = rec.chosen.data_path
    assert path.learner_cache_gib == pytest.approx(20.0) and path.wire_dtype == "float16"
    assert json.loads(result.stdout)["chosen"]["data_path"]["served_by_learner"] == path.served_by_learner
    explained = run("explain", str(plan))
    assert explained.returncode == 0, explained.stderr
    assert "On the link per epoch:" in explained.stdout and "as float16" in explained.stdout
    assert "Feature reads served (degree policy): GPU cache" in explained.stdout
    # The batch priced and the GPU's cache: what the JSON says, in words.
    batch = rec.chosen.batch
    assert rec.request.workload.gpu_cache_gib == 2.0 and path.gpu_cache_gib == pytest.approx(2.0)
    assert json.loads(result.stdout)["chosen"]["batch"]["input_nodes"] == batch.input_nodes > 0
    assert f"Batch: {batch.input_nodes:,.0f} distinct nodes (every hop), {batch.edges:,.0f} sampled edges" in (
        explained.stdout
    )
    assert f"GPU cache: 2.0 GiB per GPU of {path.gpu_cache_free_gib:.1f} GiB free" in explained.stdout
    assert f"Host to GPU per epoch: {batch.host_to_device_gb_per_epoch:,.1f} GB" in explained.stdout


def test_the_sampling_mode_reaches_the_json_and_explain_says_what_crosses_the_link(tmp_path):
    plan = tmp_path / "plan.json"
    args = ("recommend", "-d", "papers100M", "--budget", "50", "--max-memory-gib", "64", "--json", "-o", str(plan))
    result = run(*args, "--sampling", "learner")
    assert result.returncode == 0, result.stderr
    rec = Recommendation.model_validate_json(result.stdout)
    path = rec.chosen.data_path
    assert rec.request.workload.sampling == "learner" and rec.chosen.layout == "two-level"
    assert path.sampling == "learner" and path.learner_csc_gib > 0
    assert path.wire_gb_per_epoch == pytest.approx(path.wire_feature_gb_per_epoch + path.wire_id_gb_per_epoch, abs=2e-3)
    explained = run("explain", str(plan)).stdout
    assert "Sampling: the learner samples" in explained
    assert f"row requests {path.wire_id_gb_per_epoch:,.1f} GB" in explained
    assert f"its CSC takes {path.learner_csc_gib:.1f} GiB more" in explained


def test_the_shard_layout_reaches_the_json_and_explain_says_what_each_memory_machine_reads_and_copies(tmp_path):
    plans = {layout: tmp_path / f"{layout}.json" for layout in ("striped", "modulo")}
    args = ("recommend", "-d", "mag240m", "--max-memory-gib", "64", "--json")
    recs = {}
    for layout, plan in plans.items():
        result = run(*args, "-o", str(plan), *(["--shard-layout", layout] if layout == "modulo" else []))
        assert result.returncode == 0, result.stderr
        recs[layout] = Recommendation.model_validate_json(result.stdout)
    striped, modulo = recs["striped"], recs["modulo"]
    assert striped.request.workload.shard_layout == "striped" and modulo.request.workload.shard_layout == "modulo"
    assert striped.chosen.layout == modulo.chosen.layout == "two-level" and striped.chosen.memory.count > 1
    path = striped.chosen.data_path
    assert path.shard_layout == "striped" and modulo.chosen.data_path.shard_layout == "modulo"
    profile = builtin_profile("mag240m")
    part = (profile.structure_bytes + profile.feature_bytes / striped.chosen.memory.count) / 1e9
    assert path.staged_gb_per_machine == pytest.approx(part, abs=0.07)
    assert modulo.chosen.data_path.staged_gb_per_machine == pytest.approx(profile.total_bytes / 1e9, abs=1e-3)
    assert striped.chosen.startup_seconds < modulo.chosen.startup_seconds
    explained = run("explain", str(plans["striped"])).stdout
    assert (
        f"Start-up: each memory machine reads {path.startup_read_gb_per_machine:,.1f} GB from its volume in "
        f"{duration(path.startup_read_seconds)}; staging copies each {path.staged_gb_per_machine:,.1f} GB (striped "
        "shards:" in " ".join(explained.split())
    )
    assert 0 < path.startup_fixed_seconds < path.startup_read_seconds < striped.chosen.startup_seconds
    assert f"choosing the caches take {duration(path.startup_fixed_seconds)}" in " ".join(explained.split())
    assert "(modulo shards: row v on machine v % k)" in " ".join(run("explain", str(plans["modulo"])).stdout.split())


def test_a_pinned_volume_is_every_plans_volume():
    result = run("recommend", "-d", "papers100M", "--max-memory-gib", "64", "--volume", "gp3:125:3000", "--json")
    assert result.returncode == 0, result.stderr
    rec = Recommendation.model_validate_json(result.stdout)
    assert (rec.request.filters.volume_mbps, rec.request.filters.volume_iops) == (125, 3000)
    for plan in [rec.chosen, *rec.alternatives, rec.single_machine, rec.two_level]:
        assert (plan.volume.throughput_mbps, plan.volume.iops) == (125, 3000)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--volume-mbps", "2000"], "--volume-mbps: Input should be less than or equal to 1000"),
        (["--volume-mbps", "1000", "--volume-iops", "3000"], "--volume-mbps: gp3 gives at most 0.25 MB/s"),
        (["--volume-iops", "100"], "--volume-iops:"),
        (["--volume", "gp3:125"], "--volume: 'gp3:125' is not TYPE:MBPS:IOPS"),
        (["--volume", "io2:125:3000"], "--volume:"),
        (["--volume", "gp3:2000:16000"], "--volume: Input should be less than or equal to 1000"),
        (["--volume", "gp3:125:3000", "--volume-mbps", "125"], "not both"),
        (["--learner-cache", "lots"], "--learner-cache: 'lots' is not auto, none or a size in GiB"),
        (["--gpu-cache-gib", "-1"], "--gpu-cache-gib: '-1' is not auto, none or a size in GiB"),
        (["--gpu-cache-gib", "5000"], "--gpu-cache-gib: '5000' is not auto, none or a size in GiB"),
        (["--wire-dtype", "int8"], "--wire-dtype:"),
        (["--sampling", "both"], "--sampling: Input should be 'auto', 'memory' or 'learner'"),
        (["--shard-layout", "rows"], "--shard-layout: Input should be 'striped', 'range' or 'modulo'"),
        (["--max-memory-nodes", "17"], "--max-memory-nodes:"),
    ],
)
def test_bad_data_path_and_volume_options_exit_2_in_one_line(args, message):
    result = run("recommend", "-d", "papers100M", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory) -> tuple[Path, Path]:
    """A real graph's profile (`remotegnn profile`'s model) and a real random partition of it in 3 parts."""
    from foundation.fileio import write_model
    from fullgraph.partitioner import write_partition
    from remotegnn.profile import profile_dataset
    from remotegnn.store import GraphDataset
    from remotegnn.synth import SynthSpec, synth

    root = tmp_path_factory.mktemp("partitioned")
    spec = SynthSpec(nodes=1_500, edges=8_000, dim=16, classes=5, seed=2, train=0.3, val=0.2, test=0.5)
    synth(spec, root / "graph", progress=False)
    graph = GraphDataset.open(root / "graph")
    write_partition(graph, root / "parts", 3, "random", seed=0)
    profile = write_model(root / "profile.json", profile_dataset(graph, fanouts=(5, 5), batch_size=64).profile)
    return profile, root / "parts" / "partition.json"


def test_a_partition_file_prices_retexo_on_its_workers(partitioned, tmp_path):
    profile, partition = partitioned
    measured = json.loads(partition.read_text())
    args = ("recommend", "--dataset-file", str(profile), "--method", "retexo", "--partition", str(partition))
    result = run(*args, "--json")
    assert result.returncode == 0, result.stderr
    rec = Recommendation.model_validate_json(result.stdout)
    path = rec.chosen.full_graph
    assert rec.chosen.layout == "partitioned" and rec.chosen.learner is None and rec.chosen.memory.count == 3
    assert path.workers == 3 and path.boundary_rows == measured["boundary_rows"] and path.boundary_measured
    assert {m.method for m in path.methods} == {"standard", "retexo"}

    plan = tmp_path / "plan.json"
    human = run(*args, "--workers-in", "regions", "-o", str(plan))
    assert human.returncode == 0, human.stderr
    assert "gamma =" in human.stdout and "standard" in human.stdout and "transfer" in human.stdout
    assert "a region each" in human.stdout
    explained = run("explain", str(plan))
    assert "per-round time by stage" in explained.stdout and "one-time exchanges" in explained.stdout


def test_a_partition_file_and_a_worker_count_are_exclusive(partitioned):
    profile, partition = partitioned
    both = run(
        "recommend",
        "--dataset-file",
        str(profile),
        "--method",
        "retexo",
        "--partition",
        str(partition),
        "--workers",
        "2",
    )
    assert both.returncode == 2 and "not both" in both.stderr and "Traceback" not in both.stderr
    manifest = json.loads(partition.read_text())
    del manifest["boundary_rows"]
    broken = partition.parent / "broken.json"
    broken.write_text(json.dumps(manifest))
    missing = run("recommend", "--dataset-file", str(profile), "--method", "retexo", "--partition", str(broken))
    assert missing.returncode == 1 and "boundary_rows: Field required" in missing.stderr
    assert "Traceback" not in missing.stderr
    manifest["boundary_rows"], manifest["parts"] = 10, 40  # a partition the planner cannot price
    broken.write_text(json.dumps(manifest))
    many = run("recommend", "--dataset-file", str(profile), "--method", "retexo", "--partition", str(broken))
    assert many.returncode == 2 and "40 parts; the planner prices 2 to 16 workers" in many.stderr


def test_full_graph_options_are_checked_by_name():
    result = run("recommend", "-d", "arxiv", "--method", "retexo", "--workers-in", "moon")
    assert result.returncode == 2 and "--workers-in" in result.stderr
    unlabelled = run("recommend", "-d", "friendster", "--method", "standard")
    assert unlabelled.returncode == 2 and "classes" in unlabelled.stderr


def test_pricing_show_lists_the_transfer_prices():
    shown = run("pricing", "show")
    assert "Data transfer: same AZ $0/GB, across AZs $0.01/GB each way" in shown.stdout
    as_json = json.loads(run("pricing", "show", "--json").stdout)
    assert as_json["transfer"]["internet_egress_usd_per_gb"] == 0.09


def test_slicegcn_is_priced_end_to_end_with_json_and_as_a_table():
    args = ("recommend", "-d", "papers100M", "--method", "slicegcn", "--budget", "50")
    result = run(*args, "--json")
    assert result.returncode == 0, result.stderr
    rec = Recommendation.model_validate_json(result.stdout)
    assert rec.request.method == "slicegcn" and rec.request.full_graph.gnn == "gcn"
    assert not rec.request.full_graph.feature_fusion
    path = rec.chosen.full_graph
    assert rec.chosen.layout == "partitioned" and path.method == "slicegcn" and rec.chosen.total_usd <= 50
    assert path.transfer_gb_per_round > 0 and "slicegcn" in {m.method for m in path.methods}
    fused = Recommendation.model_validate_json(run(*args, "--feature-fusion", "--workers", "4", "--json").stdout)
    assert fused.request.full_graph.feature_fusion and fused.chosen.full_graph.workers == 4
    human = run(*args, "--feature-fusion")
    assert human.returncode == 0, human.stderr
    assert "slicegcn, gcn 2 layers, 100 rounds, feature fusion" in human.stdout and "* slicegcn" in human.stdout


def test_slicegcn_options_that_do_not_apply_are_refused_by_name():
    fusion = run("recommend", "-d", "arxiv", "--method", "retexo", "--feature-fusion")
    assert fusion.returncode == 2 and "feature fusion applies to method slicegcn only" in fusion.stderr
    sage = run("recommend", "-d", "arxiv", "--method", "slicegcn", "--gnn", "sage")
    assert sage.returncode == 2 and "trains a GCN" in sage.stderr and "Traceback" not in sage.stderr


def test_a_small_graphs_plans_print_distinct_nonzero_costs_and_times_and_the_ranking_rule(tmp_path):
    plan = tmp_path / "plan.json"
    result = run("recommend", "-d", "arxiv", "--budget", "5", "-o", str(plan))
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if re.search(r"\$0\.\d+\s+gpu\s*$", line)]
    costs = [row[-2] for row in rows]
    totals = [" ".join(row[-4:-2]) for row in rows]
    assert len(rows) >= 5 and len(set(costs)) == len(costs), result.stdout
    assert "$0.00" not in costs and not any(total.startswith("0 ") for total in totals), result.stdout
    assert "ranked cheaper first, then faster, then cheaper per hour, then fewer machines" in " ".join(
        result.stdout.split()
    )
    explained = run("explain", str(plan))
    chosen = read_plan(plan).chosen
    assert f"Recommended: {chosen.label}  {costs[0]} in {totals[0]}" in explained.stdout
    bottleneck = duration(chosen.stages[chosen.bottleneck])
    assert bottleneck != "0 s" and re.search(rf"{chosen.bottleneck}\W+{re.escape(bottleneck)}", explained.stdout)


def test_a_dataset_name_in_any_case_is_the_same_plan():
    ids = {}
    for name in ("papers100M", "papers100m", "PAPERS100M"):
        result = run("recommend", "-d", name, "--budget", "50", "--gpu-families", "g4dn", "--json")
        assert result.returncode == 0, result.stderr
        rec = Recommendation.model_validate_json(result.stdout)
        assert rec.request.dataset == "papers100M"
        ids[name] = rec.plan_id
    assert len(set(ids.values())) == 1, ids


def test_an_unknown_dataset_exits_2_naming_it_with_close_matches():
    result = run("recommend", "-d", "paper100m", "--budget", "50")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "unknown dataset 'paper100m'. Did you mean papers100M?" in result.stderr
