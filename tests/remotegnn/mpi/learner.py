"""The learner side of the MPI tests, run by `remotegnn launch` (not collected by pytest).

    python learner.py SCENARIO OUT_DIR DATASET [OPTIONS_JSON]
    python learner.py plan OUT_DIR PLAN.json

PLAN.json: {NAME: [SCENARIO, DATASET, OPTIONS]}, scenarios run one after another in one job, each
writing to OUT_DIR/NAME (see conftest.run_scenarios).

OPTIONS_JSON: extra loader options for the MPI loader (e.g. a learner cache, a wire dtype), and
``reference``: the dataset the local loader of ``compare`` reads (default DATASET; the original of
a reordered DATASET, whose batches must be the same).
Writes OUT_DIR/learner<index>.json with what the test checks. Scenarios:
- compare: two shuffled epochs over MPI, each batch compared field by field with the local
  transport's batch for the same seed (only with one learner rank, which sees every seed); the
  local loader has no caches and only the MPI loader's wire dtype, so caches must change nothing;
- seeds: two epochs, the seeds each learner rank saw (the test checks they are disjoint);
- early: leave epoch 0 after one batch, then read epoch 1 whole; exit without closing;
- kill-worker: SIGKILL one of the memory rank's worker processes, then read: the server's error
  must reach us as a PipelineError;
- hold: read one batch, print a READY line with the memory rank's pid and this learner's, then
  keep reading (the test kills one of them);
- fail-at-start: exit with an error once MPI is initialised, before any loader;
- raise-mid-epoch: read two batches, then raise (both print a FAILING line with the time first);
- leave-mid-epoch: read two batches, then exit 0 with the loader's receives still posted;
- link: a link loader with binary negatives over MPI, each batch compared with the local
  transport's (the memory ranks and the learner must agree on every batch's endpoints);
- hetero: a heterogeneous dataset (paper/author) with fanouts per edge type over MPI, each
  batch's per-type fields compared with the local transport's;
- resume / resume-link / resume-hetero: epochs 0 and 1 read whole by one loader (node, link with
  negatives, or heterogeneous with fanouts per edge type), then by a second that stops two batches
  into epoch 1 and a third restored from its state;
- modes: two epochs from a loader whose memory ranks sample (sampling="memory") and one that
  samples itself (OPTIONS_JSON's sampling, else `launch --sampling`'s), compared field by field,
  with both loaders' stats.
The MPI loaders of link, hetero and resume take OPTIONS_JSON too.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import torch

from remotegnn.link_loader import DistributedLinkLoader
from remotegnn.loader import DistributedGraphLoader
from remotegnn.mpi.world import world
from remotegnn.server import PipelineError, ServerOptions
from remotegnn.store import GraphDataset

ARGS = dict(
    num_neighbors=[10, 5],
    input_nodes="train",
    batch_size=64,
    shuffle=True,
    seed=3,
    zero_copy=False,
    timeout=30,
    edge_ids=True,
)
SERVER = {"batch_creators": 1, "vector_loaders": 1}
FIELDS = ("n_id", "e_id", "edge_index", "input_id", "x", "y", "train_mask")


def server_pids() -> tuple[int, list[int]]:
    """(this job's memory rank's pid, its pipeline workers' pids), found through /proc."""

    def cmdline(pid: str) -> str:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return ""
        return b" ".join(argv[1:6]).decode()  # python's arguments (mpiexec's own argv holds them too)

    def parent(pid: str) -> str:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except OSError:
            return ""

    serving = [p for p in os.listdir("/proc") if p.isdigit() and cmdline(p) == "-m mpi4py -m remotegnn.cli.main serve"]
    (rank,) = [p for p in serving if parent(p) == str(os.getppid())]  # started by our mpiexec, not another job's
    return int(rank), [int(p) for p in serving if parent(p) == rank]


def compare(loader, out: dict) -> None:
    wire = {k: v for k, v in options.items() if k == "wire_dtype"}
    server = ServerOptions(**SERVER)
    local = DistributedGraphLoader(reference, transport="local", learner_cache=None, server=server, **ARGS, **wire)
    mismatches, batches = [], 0
    for epoch in range(2):
        rows = 0  # feature rows of the epoch's batches (the last epoch's are checked against the stats)
        for b, (remote, mine) in enumerate(zip(loader, local, strict=True)):
            batches += 1
            rows += len(mine.n_id)
            for field in FIELDS:
                if not torch.equal(remote[field], mine[field]):
                    mismatches.append(f"epoch {epoch} batch {b}: {field}")
            for field in ("batch_size", "num_sampled_nodes", "num_sampled_edges"):
                if remote[field] != mine[field]:
                    mismatches.append(f"epoch {epoch} batch {b}: {field}")
    local.close()
    out.update(
        batches=batches,
        mismatches=mismatches,
        stats=loader.last_stats.model_dump(),
        caches=[c.model_dump() for c in loader.caches],
        rows=rows,
        local_stats=local.last_stats.model_dump(),
    )


def modes(loader, out: dict) -> None:
    """``loader`` samples as OPTIONS_JSON or the launch says; a second loader leaves it to the memory ranks."""
    theirs = DistributedGraphLoader(loader_path, server=server, **ARGS, **{**options, "sampling": "memory"})
    mismatches, batches = [], 0
    for epoch in range(2):
        for b, (mine, memory) in enumerate(zip(loader, theirs, strict=True)):
            batches += 1
            mismatches += [f"epoch {epoch} batch {b}: {f}" for f in FIELDS if not torch.equal(mine[f], memory[f])]
    out.update(
        batches=batches,
        mismatches=mismatches,
        modes=[theirs.sampling, loader.sampling],
        stats=loader.last_stats.model_dump(),
        memory_stats=theirs.last_stats.model_dump(),
    )
    theirs.close()


def seeds(loader, out: dict) -> None:
    out["epochs"] = [[int(v) for batch in loader for v in batch.n_id[: batch.batch_size]] for _ in range(2)]
    out["len"] = len(loader)


def early(loader, out: dict) -> None:
    for batch in loader:
        out["first"] = batch.n_id[: batch.batch_size].tolist()
        break
    out["epoch1"] = [int(v) for batch in loader for v in batch.n_id[: batch.batch_size]]
    out["stats_epoch"] = loader.last_stats.epoch


def kill_worker(loader, out: dict) -> None:
    _, workers = server_pids()
    os.kill(workers[0], signal.SIGKILL)
    try:
        for _ in range(3):
            for _ in loader:
                pass
        out["error"] = None
    except PipelineError as exc:
        out["error"] = str(exc)


def hold(loader, out: dict) -> None:
    rank, _ = server_pids()
    iterator = iter(loader)
    next(iterator)
    print("READY " + json.dumps({"server": rank, "learner": os.getpid()}), flush=True)
    while True:  # until the job is torn down
        for _ in loader:
            pass


def failing() -> None:
    """Say when this learner fails (``time.monotonic`` is the host's clock, so the test can time
    the job's end from it)."""
    print(f"FAILING {time.monotonic()}", flush=True)


def raise_mid_epoch(loader, out: dict) -> None:
    for index, _ in enumerate(loader):
        if index == 2:
            failing()
            raise RuntimeError("the training step failed mid-epoch")


def leave_mid_epoch(loader, out: dict) -> None:
    for index, _ in enumerate(loader):
        if index == 2:
            sys.exit(0)  # the loader is not closed: its receives are still posted


LINK_FIELDS = ("n_id", "e_id", "edge_index", "x", "input_id", "edge_label_index", "edge_label")


def link(server: ServerOptions, out: dict) -> None:
    edges = torch.from_numpy(GraphDataset.open(loader_path).edge_index()[:, :500])
    common = dict(
        edge_label_index=edges,
        neg_sampling_ratio=1.5,
        batch_size=64,
        shuffle=True,
        seed=3,
        zero_copy=False,
        edge_ids=True,
    )
    remote = DistributedLinkLoader(loader_path, [5, 3], server=server, timeout=30, **common, **options)
    local = DistributedLinkLoader(loader_path, [5, 3], transport="local", learner_cache=None, server=server, **common)
    mismatches, batches = [], 0
    for epoch in range(2):
        for b, (theirs, mine) in enumerate(zip(remote, local, strict=True)):
            batches += 1
            mismatches += [f"epoch {epoch} batch {b}: {f}" for f in LINK_FIELDS if not torch.equal(theirs[f], mine[f])]
    remote.close()
    local.close()
    out.update(batches=batches, mismatches=mismatches)


def hetero(server: ServerOptions, out: dict) -> None:
    fanouts = {("paper", "cites", "paper"): [3, 2], ("author", "writes", "paper"): [2, 2]}
    common = dict(input_nodes="paper", batch_size=16, shuffle=True, seed=5, zero_copy=False, server=server)
    remote = DistributedGraphLoader(loader_path, fanouts, timeout=30, **common, **options)
    local = DistributedGraphLoader(loader_path, fanouts, transport="local", learner_cache=None, **common)
    mismatches, batches = [], 0
    for theirs, mine in zip(remote, local, strict=True):
        batches += 1
        for key in mine.node_types + mine.edge_types:
            for field, value in mine[key].items():
                same = torch.equal(theirs[key][field], value) if torch.is_tensor(value) else theirs[key][field] == value
                if not same:
                    mismatches.append(f"batch {batches}: {key} {field}")
    remote.close()
    local.close()
    out.update(batches=batches, mismatches=mismatches)


HETERO_FANOUTS = {("paper", "cites", "paper"): [3, 2], ("author", "writes", "paper"): [2, 2]}


def resume(server: ServerOptions, out: dict, kind: str) -> None:
    link = kind == "link"
    if link:
        edges = torch.from_numpy(GraphDataset.open(loader_path).edge_index()[:, :500])
        args = dict(edge_label_index=edges, neg_sampling_ratio=1.0, batch_size=64, shuffle=True, seed=3)

        def make():
            return DistributedLinkLoader(
                loader_path, [5, 3], server=server, timeout=30, zero_copy=False, **args, **options
            )
    elif kind == "hetero":
        args = dict(input_nodes="paper", batch_size=16, shuffle=True, seed=5, zero_copy=False, timeout=30)

        def make():
            return DistributedGraphLoader(loader_path, HETERO_FANOUTS, server=server, **args, **options)
    else:

        def make():
            return DistributedGraphLoader(loader_path, server=server, **ARGS, **options)

    def key(batch) -> list:
        if kind == "hetero":
            paper = batch["paper"]
            return [paper.n_id.tolist(), paper.n_id[: paper.batch_size].tolist(), float(paper.x.sum())]
        label = batch.edge_label_index.tolist() if link else batch.n_id[: batch.batch_size].tolist()
        return [batch.n_id.tolist(), label, float(batch.x.sum())]

    whole = make()
    out["expected"] = [[key(b) for b in whole] for _ in range(2)][1]
    whole.close()
    stopped = make()
    list(stopped)
    out["got"] = []
    for batch in stopped:
        out["got"].append(key(batch))
        if len(out["got"]) == 2:
            state = json.loads(json.dumps(stopped.state_dict()))
            break
    stopped.close()
    restored = make()
    restored.load_state_dict(state)
    out["got"] += [key(b) for b in restored]
    out["state"] = state
    restored.close()


def run(scenario: str, out_dir: Path, dataset: str, raw_options: dict) -> None:
    """Run one scenario over ``dataset`` and write this learner's result to ``out_dir``; the
    scenarios read the loader options from this module's globals, set here."""
    global loader_path, options, reference, server
    loader_path, options = dataset, dict(raw_options)
    reference = options.pop("reference", loader_path)
    server = ServerOptions(**SERVER, **{k: options.pop(k) for k in list(options) if k in ServerOptions.model_fields})
    result = {"scenario": scenario, "learner": world().learner_index, "learners": world().learners}
    path = out_dir / f"learner{result['learner']}.json"
    if scenario in ("resume", "resume-link", "resume-hetero"):
        resume(server, result, kind=scenario.removeprefix("resume").lstrip("-") or "node")
        path.write_text(json.dumps(result))
        return
    if scenario == "fail-at-start":
        failing()
        sys.exit("the training script failed before its first loader")
    if scenario in ("link", "hetero"):
        {"link": link, "hetero": hetero}[scenario](server, result)
        path.write_text(json.dumps(result))
        return
    loader = DistributedGraphLoader(loader_path, server=server, **ARGS, **options)
    scenarios = {
        "compare": compare,
        "modes": modes,
        "seeds": seeds,
        "early": early,
        "kill-worker": kill_worker,
        "hold": hold,
        "raise-mid-epoch": raise_mid_epoch,
        "leave-mid-epoch": leave_mid_epoch,
    }
    scenarios[scenario](loader, result)
    if scenario != "early":
        loader.close()
    path.write_text(json.dumps(result))


if __name__ == "__main__":
    scenario, out_dir = sys.argv[1], Path(sys.argv[2])
    if scenario == "plan":  # several scenarios in turn, each writing to OUT_DIR/NAME
        for name, (kind, dataset, raw_options) in json.loads(Path(sys.argv[3]).read_text()).items():
            (out_dir / name).mkdir(exist_ok=True)
            run(kind, out_dir / name, dataset, raw_options)
    else:
        run(scenario, out_dir, sys.argv[3], json.loads(sys.argv[4]) if len(sys.argv) > 4 else {})
