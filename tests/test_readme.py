"""The README's commands work as written: every shell line in it is either run here, word for word
in a scratch directory, or named with the test that runs it and why it cannot run here.

The chains are run as a user pastes them (one bash per block, stopping at the first failure),
so a README that drifts from the code fails here rather than in a new user's terminal.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

from testbed.state import STATE_DIR_ENV
from tests.testbed.conftest import root_support  # noqa: F401  (the testbed chain needs it)

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
CHAIN_TIMEOUT_S = 600

# The README's lines not run here, each with why and where it is covered instead (by its first words).
ELSEWHERE = {
    "bash scripts/run.sh": "reinstalls the package into the .venv this suite runs from; its job, "
    "`planner recommend --dataset papers100M --budget 50`, runs in the planner chain below",
    "bash scripts/test.sh": "the suite itself: CI runs it (.ci/run)",
    "provision up": "needs an AWS account: docs/provisioning.md's runs against moto are tests/provisioning's",
    "provision run": "needs an AWS account (tests/provisioning/job/test_runner.py runs it on moto and the testbed)",
    "provision status": "needs an AWS account (tests/provisioning run it against moto)",
    "provision down": "needs an AWS account (tests/provisioning run it against moto)",
    "fullgraph slicegcn train": "needs root and PINCH's kernel programs: tests/fullgraph/slicegcn run it so",
}


def shell_blocks() -> list[list[str]]:
    """The README's ```bash blocks, as command lines (continuations joined, comments dropped)."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL)
    result = []
    for block in blocks:
        lines = []
        for line in block.replace("\\\n", " ").splitlines():
            command = re.split(r"\s+#", line, maxsplit=1)[0].strip()
            if command and not command.startswith("#"):
                lines.append(command)
        result.append(lines)
    return result


def block_starting(words: str) -> list[str]:
    (block,) = [b for b in shell_blocks() if b[0].startswith(words)]
    return block


# What the chains below run: the lines of a block (by the first words of its first line) up to a count.
PLANNER, REMOTEGNN, FULLGRAPH, TESTBED = (
    ("planner recommend -d papers100M", None),
    ("remotegnn convert", None),
    ("fullgraph partition", 1),  # its second line: ELSEWHERE
    ("remotegnn synth data/rmat", None),
)


def lines_of(chain: tuple[str, int | None]) -> list[str]:
    words, count = chain
    return block_starting(words)[:count]


def test_every_readme_command_is_run_here_or_named_with_its_test():
    run = [line for chain in (PLANNER, REMOTEGNN, FULLGRAPH, TESTBED) for line in lines_of(chain)]
    unaccounted = [
        line
        for block in shell_blocks()
        for line in block
        if line not in run and not any(line.startswith(words) for words in ELSEWHERE)
    ]
    assert not unaccounted, f"README lines no test runs: {unaccounted}"


def scratch(tmp_path: Path) -> dict[str, str]:
    """A directory laid out as the checkout the README speaks from (its .venv and examples), and
    the environment its commands run in."""
    for name in (".venv", "examples", "benchmarks"):
        (tmp_path / name).symlink_to(REPO / name)
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def run_block(lines: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", "\n".join(lines)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=CHAIN_TIMEOUT_S,
    )


def cora_like(path: Path) -> None:
    """A small PyG graph saved as the README says ``cora.pt`` is (``data.to_dict()``; Cora itself
    would need a download)."""
    generator = torch.Generator().manual_seed(0)
    nodes = 400
    split = torch.rand(nodes, generator=generator)
    data = Data(
        x=torch.randn(nodes, 16, generator=generator),
        edge_index=torch.randint(0, nodes, (2, 3000), generator=generator),
        y=torch.randint(0, 4, (nodes,), generator=generator),
        train_mask=split < 0.6,
        val_mask=(split >= 0.6) & (split < 0.8),
        test_mask=split >= 0.8,
    )
    torch.save(data.to_dict(), path)


@pytest.mark.slow
@pytest.mark.usefixtures("mpi")
def test_the_planner_remotegnn_and_fullgraph_chains_run_as_written(tmp_path):
    env = scratch(tmp_path)
    planner = run_block(lines_of(PLANNER), tmp_path, env)
    assert planner.returncode == 0, planner.stderr[-3000:]
    assert json.loads((tmp_path / "plan.json").read_text())["chosen"] and (tmp_path / "frontier.png").stat().st_size
    cora_like(tmp_path / "cora.pt")
    remotegnn = run_block(lines_of(REMOTEGNN), tmp_path, env)
    assert remotegnn.returncode == 0, remotegnn.stderr[-3000:]
    assert (tmp_path / "cora.json").is_file() and (tmp_path / "progress.jsonl").read_text().strip()
    snippet = re.search(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert snippet is not None
    loader = subprocess.run(
        [sys.executable, "-c", snippet.group(1) + "\nprint(next(iter(loader)))"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=CHAIN_TIMEOUT_S,
    )
    assert loader.returncode == 0 and "Data(" in loader.stdout, loader.stderr[-3000:]
    fullgraph = run_block(lines_of(FULLGRAPH), tmp_path, env)
    assert fullgraph.returncode == 0, fullgraph.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.usefixtures("root_support", "mpi")
def test_the_testbed_chain_calibrates_the_planner_as_written(tmp_path):
    env = {**scratch(tmp_path), STATE_DIR_ENV: str(tmp_path / "testbeds")}  # `down --all`: this test's alone
    chain = lines_of(TESTBED)
    try:
        testbed = run_block(chain[:-1], tmp_path, env)
    finally:
        run_block(chain[-1:], tmp_path, env)  # testbed down, whatever happened
    assert testbed.returncode == 0, testbed.stdout[-3000:] + testbed.stderr[-3000:]
    assert json.loads((tmp_path / "calibration.json").read_text())
