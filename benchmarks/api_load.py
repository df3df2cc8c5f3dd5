#!/usr/bin/env python
"""Load on the REST API: a real uvicorn process and N concurrent clients posting /v1/recommendations.

Two modes, each for a bounded time (--duration seconds):

- ``identical``: every client posts the same request (the dashboard case). After one untimed
  request the answer is in the API's response cache, so this measures the HTTP path plus a
  cache lookup.
- ``distinct``: every request has its own budget (50 USD plus a per-request cent fraction), so
  no answer is in the response cache (a user dragging a budget slider). The candidates' pricing
  does not depend on the budget: the server priced them for the first request and answers each
  new budget by filtering and ranking them again.

And in-process (``new_workload_in_process``, --new-workloads N): N requests whose workload was
never priced (each its own batch size and epochs), so each prices the whole candidate grid, with
``target_met`` for the slowest under 150 ms.

Prints one JSON document (and writes it atomically with --output FILE): parameters, machine and,
per mode, requests, requests/s, latency percentiles (ms) and errors, plus ``target_met`` (p99 under
100 ms and zero errors) for a person to read. Nothing here asserts on time. The clients run on the
same machine as the server and take CPU from it; the figures include that.

Run: ``.venv/bin/python benchmarks/api_load.py [--clients 8] [--duration 10] [--output api_load.json]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import sys
import threading
import time
from pathlib import Path

import common
import httpx
import numpy as np
from api_server import free_port, serving, uvicorn_command

REPO = Path(__file__).resolve().parents[1]
P99_TARGET_MS = 100.0
NEW_WORKLOAD_TARGET_MS = 150.0  # in-process, a workload whose pricing is not cached


def run_mode(base: str, make_body, clients: int, duration_s: float, timeout_s: float) -> dict:
    """``clients`` threads, each with its own keep-alive connection, posting until the deadline."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    lock = threading.Lock()
    start_gate = threading.Barrier(clients + 1)
    deadline = [0.0]

    def client(slot: int) -> None:
        with httpx.Client(base_url=base, timeout=timeout_s) as http:
            start_gate.wait()
            while time.perf_counter() < deadline[0]:
                body = make_body()
                began = time.perf_counter()
                try:
                    response = http.post(
                        "/v1/recommendations", content=body, headers={"content-type": "application/json"}
                    )
                    ok = response.status_code == 200
                    problem = None if ok else f"HTTP {response.status_code}: {response.text[:200]}"
                except httpx.HTTPError as exc:
                    problem = f"{type(exc).__name__}: {exc}"
                elapsed = time.perf_counter() - began
                if problem is None:
                    latencies[slot].append(elapsed)
                else:
                    with lock:
                        errors.append(problem)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    began = time.perf_counter()
    deadline[0] = began + duration_s
    start_gate.wait()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    samples = np.array([x for per_client in latencies for x in per_client]) * 1000.0
    done = len(samples)
    figures = {
        "requests": done + len(errors),
        "ok": done,
        "errors": len(errors),
        "error_examples": sorted(set(errors))[:3],
        "wall_s": round(wall, 3),
        "requests_per_s": round(done / wall, 2) if wall > 0 else None,
    }
    if done:
        figures["latency_ms"] = {
            "p50": round(float(np.percentile(samples, 50)), 2),
            "p90": round(float(np.percentile(samples, 90)), 2),
            "p99": round(float(np.percentile(samples, 99)), 2),
            "max": round(float(samples.max()), 2),
            "mean": round(float(samples.mean()), 2),
        }
    figures["target_met"] = bool(done and not errors and figures["latency_ms"]["p99"] < P99_TARGET_MS)
    return figures


def new_workloads(request: dict, count: int) -> dict:
    """In-process: ``count`` requests, each with a workload not priced before (its own batch size
    and epochs), so each one prices the whole candidate grid: what a user's first question about
    a new dataset or workload costs, without HTTP."""
    from contracts.plan import PlanRequest
    from planner.catalog.snapshot import load_catalog
    from planner.solver.recommend import recommend

    catalog = load_catalog()
    recommend(PlanRequest.model_validate(request), catalog=catalog)  # imports, catalog columns: once per process
    seconds = []
    for k in range(1, count + 1):
        workload = {**request["workload"], "batch_size": 1024 + 8 * k, "epochs": request["workload"]["epochs"] + k}
        fresh = PlanRequest.model_validate({**request, "workload": workload})
        began = time.perf_counter()
        recommend(fresh, catalog=catalog)
        seconds.append(time.perf_counter() - began)
    ms = np.array(seconds) * 1000.0
    return {
        "requests": count,
        "latency_ms": {
            "p50": round(float(np.percentile(ms, 50)), 1),
            "max": round(float(ms.max()), 1),
            "mean": round(float(ms.mean()), 1),
        },
        "target_ms": NEW_WORKLOAD_TARGET_MS,
        "target_met": bool(ms.max() < NEW_WORKLOAD_TARGET_MS),
    }


def machine() -> dict:
    return common.machine(httpx=httpx.__version__, note="clients and server share this machine's CPUs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per mode (default 10)")
    parser.add_argument("--modes", default="identical,distinct", help="comma-separated: identical, distinct")
    parser.add_argument("--new-workloads", type=int, default=20, help="in-process requests each pricing anew")
    parser.add_argument("--dataset", default="papers100M")
    parser.add_argument("--budget", type=float, default=50.0)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--server-workers", type=int, default=1, help="uvicorn worker processes (default 1)")
    parser.add_argument("--timeout", type=float, default=60.0, help="per-request timeout, s")
    parser.add_argument("--output", type=Path, help="also write the JSON to this file")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(modes) - {"identical", "distinct"}
    if unknown:
        parser.error(f"unknown modes: {', '.join(sorted(unknown))}")

    request = {"dataset": args.dataset, "workload": {"epochs": args.epochs}, "constraints": {"budget_usd": args.budget}}
    identical = json.dumps(request).encode()
    counter = itertools.count(1)
    counter_lock = threading.Lock()

    def distinct_body() -> bytes:
        with counter_lock:
            n = next(counter)
        body = {**request, "constraints": {"budget_usd": round(args.budget + n / 1e4, 4)}}
        return json.dumps(body).encode()

    port = free_port()
    figures: dict = {}
    with serving(uvicorn_command(port, workers=args.server_workers), port, cwd=REPO) as base:
        first = httpx.post(
            f"{base}/v1/recommendations",
            content=identical,
            timeout=args.timeout,
            headers={"content-type": "application/json"},
        )
        figures["first_request_ms"] = round(first.elapsed.total_seconds() * 1000, 1)
        snapshot = first.json().get("snapshot") if first.status_code == 200 else None
        for mode in modes:
            make_body = (lambda: identical) if mode == "identical" else distinct_body
            figures[mode] = run_mode(base, make_body, args.clients, args.duration, args.timeout)

    if args.new_workloads > 0:
        figures["new_workload_in_process"] = new_workloads(request, args.new_workloads)

    result = {
        "benchmark": "api_load",
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "parameters": {
            "endpoint": "POST /v1/recommendations",
            "request": request,
            "distinct_requests": "budget_usd = budget + n / 10000 for the n-th request (never cached)",
            "clients": args.clients,
            "duration_s_per_mode": args.duration,
            "server": f"uvicorn api.app:app, {args.server_workers} worker(s), 127.0.0.1",
            "snapshot": snapshot,
            "p99_target_ms": P99_TARGET_MS,
        },
        "machine": machine(),
        "figures": figures,
    }
    return common.emit(result, args.output)


if __name__ == "__main__":
    sys.exit(main())
