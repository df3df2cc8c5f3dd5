"""Checkpoints: a job stopped mid-epoch and restored into fresh objects ends with the parameters
an uninterrupted one has (CPU, real loaders); the last two are kept; an unreadable newest falls
back to the older; a file that would run code when unpickled is refused without running it."""

from __future__ import annotations

import pickle

import pytest
import torch
import torch.nn.functional as F
from torch_geometric.nn import GraphSAGE

from foundation.errors import InputFileError, UsageError
from remotegnn.checkpoint import Checkpointer
from remotegnn.loader import DistributedGraphLoader
from tests.remotegnn.test_loader import FAST


class Job:
    """A small GraphSAGE training job: the model, its optimizer and its loader, built from scratch."""

    def __init__(self, rmat):
        torch.manual_seed(0)
        self.loader = DistributedGraphLoader(
            rmat.path, [4, 3], input_nodes="train", batch_size=40, shuffle=True, seed=5, zero_copy=False, **FAST
        )
        self.model = GraphSAGE(rmat.meta.feature_dim, 16, num_layers=2, out_channels=4, dropout=0.5)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.01)

    def train(self, steps: int, checkpoints: Checkpointer | None = None) -> int:
        """Up to ``steps`` training steps over as many epochs as that takes; the steps taken."""
        taken = 0
        while taken < steps:
            for batch in self.loader:
                self.optimizer.zero_grad()
                out = self.model(batch.x, batch.edge_index)[: batch.batch_size]  # dropout draws from torch's RNG
                F.cross_entropy(out, batch.y[: batch.batch_size]).backward()
                self.optimizer.step()
                taken += 1
                if checkpoints is not None:
                    checkpoints.step(self.model, self.optimizer, {"train": self.loader})
                if taken == steps:
                    return taken
        return taken

    def parameters(self) -> list[torch.Tensor]:
        return [p.detach().clone() for p in self.model.parameters()]

    def close(self) -> None:
        self.loader.close()


def test_a_job_restored_mid_epoch_ends_with_the_uninterrupted_parameters(rmat, tmp_path):
    whole = Job(rmat)
    per_epoch = len(whole.loader)
    total = 2 * per_epoch + 3
    whole.train(total)
    expected = whole.parameters()
    whole.close()

    stopped = Job(rmat)
    checkpoints = Checkpointer(tmp_path, every_batches=4)
    stopped.train(per_epoch + 5, checkpoints)  # the last save: step 4k, part-way through epoch 1
    stopped.close()
    saved_at = checkpoints.steps - (checkpoints.steps % 4)
    assert per_epoch < saved_at < 2 * per_epoch

    resumed = Job(rmat)  # fresh objects, other initial weights drawn from the same seed
    again = Checkpointer(tmp_path, every_batches=4)
    assert again.restore(resumed.model, resumed.optimizer, {"train": resumed.loader}) == {}
    assert again.steps == saved_at
    resumed.train(total - saved_at, again)
    assert all(torch.equal(a, b) for a, b in zip(resumed.parameters(), expected, strict=True))
    resumed.close()


def test_the_last_two_are_kept_and_an_unreadable_newest_falls_back_to_the_older(rmat, tmp_path):
    job = Job(rmat)
    checkpoints = Checkpointer(tmp_path, every_batches=2)
    job.train(7, checkpoints)
    assert [p.name for p in checkpoints.saved()] == ["checkpoint-000000004.pt", "checkpoint-000000006.pt"]
    checkpoints.saved()[-1].write_bytes(b"half a checkpoint")
    with pytest.warns(UserWarning, match=r"cannot be read \(.*\); trying an older checkpoint"):
        Checkpointer(tmp_path).restore(job.model, job.optimizer, {"train": job.loader})
    assert job.loader.state_dict()["batches_yielded"] == 4 % len(job.loader)
    job.close()


class RunsCode:
    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path('ran').write_text('yes')",))


def test_a_file_that_would_run_code_is_refused_unrun(rmat, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "checkpoint-000000001.pt").write_bytes(pickle.dumps({"kind": RunsCode()}))
    job = Job(rmat)
    with pytest.warns(UserWarning, match="weights_only"), pytest.raises(InputFileError, match="no checkpoint could be"):
        Checkpointer(tmp_path / "ckpt").restore(job.model, job.optimizer, {"train": job.loader})
    assert not (tmp_path / "ran").exists()
    job.close()


def test_no_checkpoint_changes_nothing(rmat, tmp_path):
    job = Job(rmat)
    before = job.parameters()
    assert Checkpointer(tmp_path / "none-yet").restore(job.model, job.optimizer, {"train": job.loader}) is None
    assert all(torch.equal(a, b) for a, b in zip(job.parameters(), before, strict=True))
    job.close()


@pytest.mark.parametrize(
    ("options", "named"),
    [({"every_batches": 0}, "every_batches"), ({"every_seconds": -1}, "every_seconds"), ({"keep": 0}, "keep")],
)
def test_bad_settings_are_named(tmp_path, options, named):
    with pytest.raises(UsageError, match=named):
        Checkpointer(tmp_path, **options)


def test_a_requested_checkpoint_is_saved_at_the_next_step_and_the_request_removed(rmat, tmp_path, monkeypatch):
    """What `provision run` does at a spot machine's two-minute warning: the request file named in
    the environment appears, the next step saves, and its removal says the save is done."""
    from remotegnn import checkpoint

    monkeypatch.setattr(checkpoint, "REQUEST_POLL_S", 0.0)
    request = tmp_path / "checkpoint-now"
    monkeypatch.setenv("MEMORYBRIDGE_CHECKPOINT_REQUEST", str(request))
    job = Job(rmat)
    checkpoints = Checkpointer(tmp_path / "ckpt", every_batches=1000)
    job.train(3, checkpoints)
    assert checkpoints.saved() == []
    request.touch()
    job.train(1, checkpoints)
    assert [p.name for p in checkpoints.saved()] == ["checkpoint-000000004.pt"] and not request.exists()
    job.train(2, checkpoints)
    assert len(checkpoints.saved()) == 1  # one request, one save
    job.close()


class Position:
    """The least a Checkpointer needs of a loader: a state that says where it is."""

    def __init__(self) -> None:
        self.at = 0

    def state_dict(self) -> dict:
        return {"at": self.at}

    def load_state_dict(self, state) -> None:
        self.at = int(state["at"])


def _two_ranks(rank: int, root: str, out: str) -> None:
    """One of two gloo ranks: only rank 0 is asked for a checkpoint; both must save at that step,
    each in its own directory, and restore the same step."""
    import json
    from pathlib import Path

    import torch.distributed as dist

    from remotegnn import checkpoint

    checkpoint.REQUEST_POLL_S = 0.0
    dist.init_process_group("gloo", store=dist.FileStore(f"{root}/store", 2), rank=rank, world_size=2)
    request = Path(root) / "checkpoint-now"
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    position = Position()
    saver = Checkpointer(Path(root) / "ckpt", every_batches=1000, request_file=request if rank == 0 else None)
    for step in range(1, 7):
        position.at = step
        if rank == 0 and step == 4:
            request.touch()
        dist.barrier()
        saver.step(model, optimizer, {"train": position})
    fresh = Position()
    restored = Checkpointer(Path(root) / "ckpt", every_batches=1000)
    restored.restore(model, optimizer, {"train": fresh})
    result = {"saved": [p.name for p in saver.saved()], "dir": saver.directory.name, "restored": fresh.at}
    Path(out, f"rank{rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group()


def test_data_parallel_ranks_save_together_and_restore_the_same_step(tmp_path):
    """A request that only one rank sees still makes every rank save at that step, in its own
    rank-R directory, and both restore that step (gloo, two processes)."""
    import json

    import torch.multiprocessing as mp

    mp.spawn(_two_ranks, args=(str(tmp_path), str(tmp_path)), nprocs=2, join=True)
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["dir"] for r in results] == ["rank-0", "rank-1"]
    assert [r["saved"] for r in results] == [["checkpoint-000000004.pt"]] * 2
    assert [r["restored"] for r in results] == [4, 4]
