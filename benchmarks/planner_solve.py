#!/usr/bin/env python
"""How long the planner takes to answer one recommendation, in-process and through the CLI.

Prints one JSON document (and writes it atomically with --output FILE):

- parameters: the request and the size of the candidate set;
- machine: where it ran;
- figures:
  1. full-catalog ``recommend`` with the pipeline model: median and min over --repeats runs after one
     warm-up, each pricing the grid anew, split into "evaluate" (build the candidate grid, price
     every cluster, rank what the constraints do not change, apply the constraints) and
     "ranking" (pick, describe); and ``constraint_change``, the same request with another budget
     answered from the cached pricing;
  2. the same with the paper model;
  3. the MILP solver (``solver="milp"``) against enumeration for a few constraint sets: end-to-end
     time, solver-only time, the number of MILP columns left after dominance pruning, and whether
     both chose the same cluster;
  4. ``planner recommend ... --json`` as a subprocess, interpreter start-up included.
- targets: booleans against the goals (in-process < 1 s, CLI < 2 s). Nothing here asserts on time.

Run: ``.venv/bin/python benchmarks/planner_solve.py [--repeats 5] [--output results.json]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import common

IN_PROCESS_TARGET_S = 1.0
CLI_TARGET_S = 2.0


def _stats(samples: list[float]) -> dict:
    return {"median_s": round(statistics.median(samples), 4), "min_s": round(min(samples), 4), "runs": len(samples)}


def _error(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__}: {exc} (at {Path(frame.filename).name}:{frame.lineno})"


def _timed(func: Callable[[], object], repeats: int) -> tuple[list[float], object]:
    """Run ``func`` once to warm up, then ``repeats`` times; the samples and the last result."""
    result = func()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = func()
        samples.append(time.perf_counter() - start)
    return samples, result


def _choice(plan) -> dict | None:
    return None if plan is None else {"label": plan.label, "total_usd": plan.total_usd, "total_hours": plan.total_hours}


class _SplitTimer:
    """Times Solution.__init__ (evaluate) inside recommend() by swapping in a timing subclass."""

    def __init__(self, module):
        self.module = module
        self.original = getattr(module, "Solution", None)
        self.last_evaluate_s: float | None = None

    def __enter__(self):
        if self.original is None:
            return self
        timer = self

        class TimedSolution(self.original):
            def __init__(self, *args, **kwargs):
                start = time.perf_counter()
                super().__init__(*args, **kwargs)
                timer.last_evaluate_s = time.perf_counter() - start

        self.module.Solution = TimedSolution
        return self

    def __exit__(self, *exc):
        if self.original is not None:
            self.module.Solution = self.original


def bench_recommend(request, catalog, repeats: int) -> dict:
    """Full-catalog recommend(): total, evaluate and rank times, and the candidate count."""
    from contracts.calibration import DEFAULT_COEFFICIENTS
    from planner.solver import pricing
    from planner.solver import recommend as rec_module

    sol = rec_module.Solution(request, catalog, DEFAULT_COEFFICIENTS)
    out: dict = {
        "model": request.model,
        "candidates": len(sol.clusters),
        "feasible_candidates": int(sol.ev.feasible.sum()),
    }
    total, evaluate, constraint_change = [], [], []
    forget = getattr(pricing, "forget_priced", lambda: None)
    with _SplitTimer(rec_module) as split:
        rec = rec_module.recommend(request, catalog=catalog)  # warm-up
        for repeat in range(repeats):
            forget()  # each run prices the grid, as a new dataset or workload would
            start = time.perf_counter()
            rec = rec_module.recommend(request, catalog=catalog)
            total.append(time.perf_counter() - start)
            if split.last_evaluate_s is not None:
                evaluate.append(split.last_evaluate_s)
            # then only the constraints change (a user trying budgets): the pricing is reused
            budget = (request.constraints.budget_usd or 1.0) * (1 + (repeat + 1) / 1000)
            changed = request.model_copy(
                update={"constraints": request.constraints.model_copy(update={"budget_usd": budget})}
            )
            start = time.perf_counter()
            rec_module.recommend(changed, catalog=catalog)
            constraint_change.append(time.perf_counter() - start)
    out["total"] = _stats(total)
    out["constraint_change"] = _stats(constraint_change)
    if len(evaluate) == len(total):
        out["evaluate"] = _stats(evaluate)
        out["ranking"] = _stats([t - e for t, e in zip(total, evaluate)])
        out["split_note"] = (
            "each run prices anew (the pricing cache emptied first); evaluate = Solution(): grid, "
            "pricing of every cluster and the rankings constraints do not change, constraint mask; "
            "ranking = the rest of recommend(): pick, describe; constraint_change = the same request "
            "with another budget right after, answered from the cached pricing"
        )
    out["chosen"] = _choice(rec.chosen)
    return out


def bench_milp(base_request, catalog, repeats: int) -> dict:
    """MILP against enumeration for a few constraint sets (same candidates, pipeline model)."""
    from contracts.calibration import DEFAULT_COEFFICIENTS
    from contracts.plan import Constraints
    from planner.solver import milp
    from planner.solver.recommend import Solution, recommend

    budget = base_request.constraints.budget_usd
    enum_rec = recommend(base_request, catalog=catalog)
    # Tight enough to bind: the chosen plan's time and price, a little below, so the answer changes.
    chosen = enum_rec.chosen
    deadline = round(chosen.total_hours * 0.9, 4) if chosen else 1.0
    hourly = round(chosen.usd_per_hour * 0.9, 4) if chosen else 1.0
    cases = {
        "budget": Constraints(budget_usd=budget),
        "budget+deadline": Constraints(budget_usd=budget, deadline_hours=deadline),
        "budget+max_hourly": Constraints(budget_usd=budget, max_hourly_usd=hourly),
    }
    sol = Solution(base_request, catalog, DEFAULT_COEFFICIENTS)
    out: dict = {"model": base_request.model, "candidates": len(sol.clusters)}
    try:
        samples, columns = _timed(lambda: milp.candidate_columns(sol.ev, sol.grid), repeats)
        out["milp_columns"] = int(len(columns))
        out["candidate_columns"] = _stats(samples)
    except Exception as exc:  # report, do not crash the benchmark
        out["milp_columns"] = None
        out["candidate_columns_error"] = _error(exc)
    out["cases"] = []
    for name, constraints in cases.items():
        case: dict = {"case": name, "constraints": constraints.model_dump(exclude_none=True)}
        # Per solver: the pick alone (Solution.best() on an evaluated set), then a whole recommend.
        for solver, pick_key in (("enumerate", "enumerate_pick"), ("milp", "milp_solve")):
            req = base_request.model_copy(update={"constraints": constraints, "solver": solver})
            try:
                samples, _ = _timed(Solution(req, catalog, DEFAULT_COEFFICIENTS).best, repeats)
                case[pick_key] = _stats(samples)
                samples, rec = _timed(lambda r=req: recommend(r, catalog=catalog), repeats)
                case[f"{solver}_recommend"] = _stats(samples)
                case[f"{solver}_choice"] = _choice(rec.chosen)
            except Exception as exc:  # report, do not crash the benchmark
                case[f"{solver}_error"] = _error(exc)
        if "enumerate_choice" in case and "milp_choice" in case:
            a, b = case["enumerate_choice"], case["milp_choice"]
            case["same_choice"] = (a is None and b is None) or (
                a is not None and b is not None and a["label"] == b["label"] and a["total_usd"] == b["total_usd"]
            )
        else:
            case["same_choice"] = None
        out["cases"].append(case)
    return out


def bench_cli(dataset: str, budget: float, epochs: int, repeats: int) -> dict:
    """Wall time of `planner recommend --dataset D --budget B --json` as a fresh process."""
    exe = Path(sys.executable).parent / "planner"
    planner = str(exe) if exe.exists() else shutil.which("planner")
    if planner is None:
        return {"error": "no `planner` executable next to this Python or on PATH (pip install -e .)"}
    argv = [planner, "recommend", "--dataset", dataset, "--budget", f"{budget:g}", "--json"]
    if epochs != 10:
        argv += ["--epochs", str(epochs)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}

    def run() -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, env=env, check=False)

    samples, result = _timed(run, repeats)
    out = {"command": " ".join(["planner", *argv[1:]]), **_stats(samples), "returncode": result.returncode}
    try:
        chosen = json.loads(result.stdout).get("chosen")
        out["chosen_label"] = None if chosen is None else _cli_label(chosen)
    except json.JSONDecodeError:
        out["stderr_tail"] = result.stderr[-500:]
    return out


def _cli_label(chosen: dict) -> str:
    memory = chosen.get("memory")
    tail = f" + {memory['count']}x {memory['instance_type']}" if memory else " alone"
    return chosen["learner"]["instance_type"] + tail


def machine() -> dict:
    return common.machine()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per figure, after one warm-up (default 5)")
    parser.add_argument("--output", type=Path, help="also write the JSON here (atomically)")
    parser.add_argument("--dataset", default="papers100M", help="built-in dataset (default papers100M)")
    parser.add_argument("--budget", type=float, default=50.0, help="budget in USD (default 50)")
    parser.add_argument("--epochs", type=int, default=10, help="training epochs (default 10)")
    parser.add_argument("--skip-cli", action="store_true", help="skip the subprocess CLI figure")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    from planner.catalog.snapshot import load_catalog

    start = time.perf_counter()
    catalog = load_catalog()  # first load in this process: parse and validate the shipped snapshot
    catalog_load_s = time.perf_counter() - start

    from contracts.calibration import DEFAULT_COEFFICIENTS
    from contracts.plan import Constraints, PlanRequest
    from planner.solver.recommend import Solution

    pipeline_req = PlanRequest(
        dataset=args.dataset, constraints=Constraints(budget_usd=args.budget), workload={"epochs": args.epochs}
    )
    paper_req = pipeline_req.model_copy(update={"model": "paper"})
    sol = Solution(pipeline_req, catalog, DEFAULT_COEFFICIENTS)
    grid = sol.grid
    parameters = {
        "dataset": args.dataset,
        "budget_usd": args.budget,
        "epochs": args.epochs,
        "repeats": args.repeats,
        "snapshot": {
            "region": catalog.snapshot.meta.region,
            "retrieved_on": str(catalog.snapshot.meta.retrieved_on),
            "instance_types": len(catalog.snapshot.instances),
        },
        "candidates": len(sol.clusters),
        "learner_types": len(grid.learners),
        "memory_types": len(grid.memories),
        "volume_options": [{"mbps": t, "iops": i} for t, i in grid.volumes],
        "k_max": int(grid.counts.max()) if len(grid.counts) else 0,
        "k_max_paper_model": 1,
    }

    figures: dict = {"catalog_first_load_s": round(catalog_load_s, 4)}
    figures["pipeline_recommend"] = bench_recommend(pipeline_req, catalog, args.repeats)
    figures["paper_recommend"] = bench_recommend(paper_req, catalog, args.repeats)
    figures["milp_vs_enumerate"] = bench_milp(pipeline_req, catalog, args.repeats)
    if not args.skip_cli:
        figures["cli"] = bench_cli(args.dataset, args.budget, args.epochs, args.repeats)

    cli = figures.get("cli", {})
    result = {
        "benchmark": "planner_solve",
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "parameters": parameters,
        "machine": machine(),
        "figures": figures,
        "targets": {
            "in_process_target_s": IN_PROCESS_TARGET_S,
            "in_process_pipeline_under_target": figures["pipeline_recommend"]["total"]["median_s"]
            < IN_PROCESS_TARGET_S,
            "in_process_paper_under_target": figures["paper_recommend"]["total"]["median_s"] < IN_PROCESS_TARGET_S,
            "cli_target_s": CLI_TARGET_S,
            "cli_under_target": (cli["median_s"] < CLI_TARGET_S) if "median_s" in cli else None,
        },
    }
    return common.emit(result, args.output)


if __name__ == "__main__":
    sys.exit(main())
