"""docs/provisioning.md's "Try it without AWS" works as written.

Its shell blocks run in one bash, line after line, as a user pastes them into one terminal of a
machine without AWS credentials, configuration or SSH key; each line must end as the docs say. The
moto server the docs start is this suite's (the same server with the same setting), so the lines
that start and stop it are the only ones not run word for word.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from provisioning.bringup import AWS_CHECKS
from provisioning.models import DryRun
from provisioning.tags import CLUSTER
from tests.provisioning.conftest import plain_client, reset_moto

DOCS = Path(__file__).resolve().parents[2] / "docs" / "provisioning.md"
SECTION = "## Try it without AWS"
DOCUMENTED_ENDPOINT = "http://127.0.0.1:5050"
STOPPED_AT_PLACEMENT_GROUPS = (
    f"error: DescribePlacementGroups: {DOCUMENTED_ENDPOINT} answered something that is not EC2's XML"
)
SHELL_TIMEOUT_S = 300

# Every line of the section's shell blocks (comments dropped): its exit status and what its output says.
EXPECTED = {
    "planner recommend -d papers100M --budget 50 -o plan.json": (0, "plan written to plan.json"),
    "provision up --plan plan.json --name try1 --dry-run": (0, "AWS was not asked (no AWS credentials found)"),
    "provision up --plan plan.json --name try1 --dry-run --json > try1-dry-run.json": (0, ""),
    "until curl -s -o /dev/null http://127.0.0.1:5050/; do sleep 0.2; done": (0, ""),
    "export AWS_ENDPOINT_URL=http://127.0.0.1:5050 AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing "
    "AWS_DEFAULT_REGION=us-east-1": (0, ""),
    "ssh-keygen -q -t ed25519 -N '' -f try-key": (0, ""),
    "provision status": (0, "no memorybridge clusters in us-east-1"),
    "provision up --plan plan.json --name try1 --ssh-key try-key.pub --dry-run": (1, STOPPED_AT_PLACEMENT_GROUPS),
    "provision up --plan plan.json --name try1 --ssh-key try-key.pub --yes": (1, STOPPED_AT_PLACEMENT_GROUPS),
    "provision status try1": (1, STOPPED_AT_PLACEMENT_GROUPS),
    "provision down try1 --yes": (1, STOPPED_AT_PLACEMENT_GROUPS),
}
# The suite's moto server already runs, with this setting, and stays for the other tests.
MOTO_START = "MOTO_EC2_ENABLE_INSTANCE_TYPE_VALIDATION=true moto_server -p 5050 > moto.log 2>&1 &"
MOTO_STOP = "kill %1"


def documented_lines() -> list[str]:
    """The section's ```bash lines, in order (continuations joined, comments dropped)."""
    text = DOCS.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text[start : end if end > 0 else None], flags=re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            command = re.split(r"\s+#", line, maxsplit=1)[0].strip()
            if command:
                lines.append(command)
    return lines


def new_users_environment(home: Path) -> dict[str, str]:
    """This process's environment less anything AWS or MemoryBridge, with an empty home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MEMORYBRIDGE_"))}
    env["HOME"] = str(home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["AWS_EC2_METADATA_DISABLED"] = "true"  # not an EC2 machine: do not wait for its metadata service
    return env


@pytest.mark.slow
def test_the_documented_commands_run_against_moto_and_end_as_the_docs_say(moto_server, tmp_path):
    lines = documented_lines()
    assert [line for line in lines if line not in (MOTO_START, MOTO_STOP)] == list(EXPECTED)
    assert lines.index(MOTO_START) < lines.index("provision status") and lines[-1] == MOTO_STOP
    reset_moto(moto_server)  # a user's new server holds no other cluster's tags, which `provision status` lists
    home = tmp_path / "home"
    home.mkdir()
    script = []
    for number, line in enumerate(lines):
        command = ":" if line in (MOTO_START, MOTO_STOP) else line.replace(DOCUMENTED_ENDPOINT, moto_server)
        script.append(f"{{ {command} ; }} > out.{number} 2> err.{number}; echo $? > status.{number}")
    subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=tmp_path,
        env=new_users_environment(home),
        timeout=SHELL_TIMEOUT_S,
        check=True,
    )

    for number, line in enumerate(lines):
        if line in (MOTO_START, MOTO_STOP):
            continue
        said = (tmp_path / f"out.{number}").read_text() + (tmp_path / f"err.{number}").read_text()
        said = said.replace(moto_server, DOCUMENTED_ENDPOINT)
        exit_code, words = EXPECTED[line]
        assert int((tmp_path / f"status.{number}").read_text()) == exit_code, f"{line}\n{said}"
        assert words in said and "Traceback" not in said, f"{line}\n{said}"
        errors = [s for s in said.splitlines() if s.startswith("error:")]
        assert len(errors) == (exit_code != 0), f"{line}\n{said}"

    dry = DryRun.model_validate_json((tmp_path / "try1-dry-run.json").read_text())
    assert dry.existing is None and dry.not_checked == list(AWS_CHECKS)
    assert {r.kind for r in dry.creates.resources} == {
        "instance",
        "volume",
        "security-group",
        "placement-group",
        "key-pair",
    }
    state_dir = home / ".memorybridge" / "clusters"
    assert not state_dir.exists() or list(state_dir.iterdir()) == []  # the failed up left no state, no wheel
    ec2 = plain_client(moto_server)
    tagged = [{"Name": f"tag:{CLUSTER}", "Values": ["try1"]}]
    assert ec2.describe_security_groups(Filters=tagged)["SecurityGroups"] == []
    assert ec2.describe_key_pairs(Filters=tagged)["KeyPairs"] == []
