"""The `planner` CLI as users run it: a real process, its output, its exit codes and its files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from planner.catalog.build import write_snapshot
from planner.catalog.snapshot import load_catalog
from planner.datasets.builtin import builtin_profile
from planner.plan import Recommendation, read_plan

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
        "--learner-cache", "20", "--json", "-o", str(plan),
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
    assert "Feature reads served (degree policy): learner cache" in explained.stdout


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
        (["--wire-dtype", "int8"], "--wire-dtype:"),
        (["--max-memory-nodes", "17"], "--max-memory-nodes:"),
    ],
)
def test_bad_data_path_and_volume_options_exit_2_in_one_line(args, message):
    result = run("recommend", "-d", "papers100M", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
