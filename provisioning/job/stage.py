"""Putting the dataset on every data machine's volume, checked against its own checksums.

The source is a RemoteGNN dataset directory (``meta.json`` lists every file with its size and
checksum): a local directory, copied over ssh with rsync, or an S3 prefix, which each machine
copies itself with ``remotegnn fetch`` (the data never passes through this computer). Either way
the copy lands beside the destination, is verified there by ``remotegnn info --verify`` against
the source's ``meta.json``, and only then is renamed into place: a machine never holds a
half-copied dataset under the dataset's name. A destination that already holds the same, intact
dataset is left as it is.

From S3, each memory machine of several copies only its part (``remotegnn fetch --shard I
--shards K --layout L``): every structure file and the feature rows memory rank I serves in the
job's layout (``contracts.shards``), at their offsets in a sparse file; memory machine I is the
I-th in the state file, as it is the I-th memory host of the hostfile and so memory rank I. A
learner that samples its own batches reads the structure and none of the rows, so it copies the
structure alone (``--structure-only``). Machines that turn out to share one disk for the
datasets (a shared volume, or the testbed's namespaces of one computer) each get the whole
dataset there instead: their parts would replace one another at the one path. A local source is
copied whole with rsync (it has no ranges to ask for; each memory machine serves its own rows of
it all the same).

S3 credentials: the machines use the caller's current AWS credentials, sent on the ssh
connection's standard input (never in a command line, a file or the machine's environment), or
with ``--s3-credentials instance`` their own instance role.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from contracts.cluster import NodeState
from contracts.shards import DEFAULT_LAYOUT, ShardLayoutName
from contracts.staging import FetchResult
from foundation.errors import UsageError, format_validation_error
from foundation.partial import PARTIAL_SUFFIX
from foundation.units import SECONDS_PER_HOUR
from provisioning.errors import ProvisioningError
from provisioning.job.models import MachineLayout
from provisioning.job.remote import Remote, RemoteError

COPY_TIMEOUT_S = 6 * SECONDS_PER_HOUR  # papers100M's 57 GB at gp3's 125 MB/s baseline takes ~8 min; leave room
S3Credentials = Literal["caller", "instance"]
DISK_MARK = ".memorybridge-disk-"  # in the datasets directory, for a moment: which machines share it


class StagingError(ProvisioningError):
    """The dataset could not be put on a machine intact; nothing was trained."""


@dataclass(frozen=True)
class DatasetSource:
    """Where the dataset comes from: ``s3://bucket/prefix`` or a local dataset directory."""

    uri: str

    @classmethod
    def parse(cls, text: str) -> DatasetSource:
        if text.startswith("s3://"):
            bucket, _, prefix = text[len("s3://") :].partition("/")
            if not bucket or not prefix.strip("/"):
                raise UsageError(f"--dataset {text}: give s3://BUCKET/PREFIX, the prefix holding meta.json")
            return cls(text.rstrip("/"))
        path = Path(text).expanduser()
        if not (path / "meta.json").is_file():
            raise UsageError(
                f"--dataset {text}: not a RemoteGNN dataset directory (no meta.json); convert it with "
                "`remotegnn convert`, or give an s3:// prefix"
            )
        return cls(str(path.resolve()))

    @property
    def is_s3(self) -> bool:
        return self.uri.startswith("s3://")

    @property
    def name(self) -> str:
        return self.uri.rstrip("/").rsplit("/", 1)[-1]

    def local_files(self) -> dict:
        """The local source's ``files`` entries of meta.json (what a copy must match)."""
        return json.loads((Path(self.uri) / "meta.json").read_text())["files"]


def data_nodes(remote: Remote, learner_samples: bool = False) -> list[NodeState]:
    """The machines that hold the dataset: the memory machines, or the learner when it is alone,
    and the learner too when it samples its own batches (it opens the dataset the memory machines
    serve, at the same path; it reads only the structure and labels of it)."""
    memory = [n for n in remote.state.nodes if n.role == "memory"]
    learner = [n for n in remote.state.nodes if n.role == "learner"]
    return memory + learner if memory and learner_samples else memory or learner


def destination(layout: MachineLayout, source: DatasetSource) -> str:
    return f"{layout.datasets_dir}/{source.name}"


def stage(
    remote: Remote,
    layout: MachineLayout,
    source: DatasetSource,
    report: Callable[[str], None],
    credentials: str | None = None,
    *,
    learner_samples: bool = False,
    shard_layout: ShardLayoutName = DEFAULT_LAYOUT,
) -> str:
    """Put ``source`` on every data machine (``learner_samples``: the learner too); return its path
    there. ``credentials`` is the JSON that ``remotegnn fetch --credentials-stdin`` reads (S3 with
    the caller's credentials). From S3 each memory machine of several gets its part in
    ``shard_layout`` (see the module's docstring)."""
    target = destination(layout, source)
    nodes = data_nodes(remote, learner_samples)
    if not source.is_s3:
        for node in nodes:
            _copy(remote, layout, node, source, target, report)
        return target
    parts = fetch_parts(nodes, shard_layout)
    if any(part.options for part in parts.values()):
        shared = shared_disks(remote, layout, nodes)
        if shared:
            report(
                f"{', '.join(sorted(shared))} share one disk for {layout.datasets_dir}: each gets the whole dataset "
                "there (their parts would replace one another)"
            )
            parts = {name: FetchPart() if name in shared else part for name, part in parts.items()}
    for node in nodes:
        _fetch(remote, layout, node, source, target, credentials, report, parts[node.node])
    return target


@dataclass(frozen=True)
class FetchPart:
    """What of the dataset one machine copies: all of it (``index`` None, not ``structure_only``),
    memory machine ``index``'s part of ``count``, or the structure alone."""

    index: int | None = None
    count: int = 1
    layout: ShardLayoutName = DEFAULT_LAYOUT
    structure_only: bool = False

    @property
    def options(self) -> list[str]:
        """`remotegnn fetch`'s options for it."""
        if self.structure_only:
            return ["--structure-only", "--shards", str(self.count), "--layout", self.layout]
        if self.index is None:
            return []
        return ["--shard", str(self.index), "--shards", str(self.count), "--layout", self.layout]

    def matches(self, done: FetchResult) -> bool:
        """``done`` is this part, or a whole copy (which holds every part)."""
        if done.shard is None and not done.structure_only:
            return True
        if self.structure_only:
            return done.structure_only
        return (done.shard, done.shards, done.layout) == (self.index, self.count, self.layout)


def fetch_parts(nodes: list[NodeState], shard_layout: ShardLayoutName) -> dict[str, FetchPart]:
    """Node -> what it fetches from S3: memory machine i of k > 1 its part i, a learner beside
    memory machines (one that samples) the structure alone, a machine alone the whole dataset."""
    memory = [n for n in nodes if n.role == "memory"]
    count = len(memory)
    parts = {}
    for node in nodes:
        if count > 1 and node.role == "memory":
            parts[node.node] = FetchPart(memory.index(node), count, shard_layout)
        elif memory and node.role == "learner":
            parts[node.node] = FetchPart(count=max(1, count), layout=shard_layout, structure_only=True)
        else:
            parts[node.node] = FetchPart()
    return parts


def shared_disks(remote: Remote, layout: MachineLayout, nodes: list[NodeState]) -> set[str]:
    """The nodes whose datasets directory another of ``nodes`` sees too: each leaves a mark there
    and lists the marks it finds (two ssh commands a machine)."""
    token = secrets.token_hex(6)
    prefix = f"{DISK_MARK}{token}-"
    directory = shlex.quote(layout.datasets_dir)
    shared: set[str] = set()
    try:
        for node in nodes:
            mark = shlex.quote(f"{layout.datasets_dir}/{prefix}{node.node}")
            listed = remote.run(node, f"mkdir -p {directory} && touch {mark} && ls -a {directory}").split()
            seen = {name[len(prefix) :] for name in listed if name.startswith(prefix)} - {node.node}
            if seen:
                shared |= seen | {node.node}
    except RemoteError as exc:
        raise StagingError(f"{exc}; nothing was trained") from None
    finally:
        for node in nodes:
            try:
                remote.run(node, f"rm -f {directory}/{shlex.quote(prefix)}*")
            except RemoteError:
                pass  # a mark left behind is a few bytes under a name no dataset has
    return shared


def _remote_files(remote: Remote, layout: MachineLayout, node: NodeState, path: str) -> dict | None:
    """The ``files`` of the dataset at ``path`` on ``node`` after checking every checksum; None if
    there is no intact dataset there."""
    command = f"{shlex.quote(layout.bin_dir + '/remotegnn')} info {shlex.quote(path)} --verify --json"
    try:
        return json.loads(remote.run(node, command, timeout_s=COPY_TIMEOUT_S))["files"]
    except (RemoteError, ValueError, KeyError):
        return None


def _copy(
    remote: Remote,
    layout: MachineLayout,
    node: NodeState,
    source: DatasetSource,
    target: str,
    report: Callable[[str], None],
) -> None:
    expected = source.local_files()
    if _remote_files(remote, layout, node, target) == expected:
        report(f"{node.node}: {target} is already there and verified")
        return
    # Always this one name, so a copy cut short is resumed by the next (rsync sends what differs);
    # `remotegnn fetch` and the other writers on the machine name it as the target's partial
    # output, with the command that removes it.
    partial = target + PARTIAL_SUFFIX
    report(f"{node.node}: copying {source.uri} to {target}")
    remote.run(node, f"mkdir -p {shlex.quote(layout.datasets_dir)}")
    remote.rsync(f"{source.uri}/", f"{remote.target(node)}:{partial}/", COPY_TIMEOUT_S)
    found = _remote_files(remote, layout, node, partial)
    if found != expected:
        remote.run(node, f"rm -rf {shlex.quote(partial)}")
        raise StagingError(
            f"{node.node}: the copy of {source.uri} at {target} does not match its meta.json "
            f"({'a checksum differs' if found else 'a file is missing or damaged'}); it was removed and "
            "nothing was trained"
        )
    remote.run(node, f"rm -rf {shlex.quote(target)} && mv {shlex.quote(partial)} {shlex.quote(target)}")
    report(f"{node.node}: {target} copied and verified")


def _fetch(
    remote: Remote,
    layout: MachineLayout,
    node: NodeState,
    source: DatasetSource,
    target: str,
    credentials: str | None,
    report: Callable[[str], None],
    part: FetchPart | None = None,
) -> None:
    part = part or FetchPart()
    what = (
        " (the structure alone)"
        if part.structure_only
        else f" (part {part.index} of {part.count}, {part.layout})"
        if part.index is not None
        else ""
    )
    report(f"{node.node}: fetching {source.uri}{what} to {target}")
    command = [layout.bin_dir + "/remotegnn", "fetch", source.uri, target, *part.options, "--json"]
    if credentials is not None:
        command.append("--credentials-stdin")
    try:
        said = remote.run(node, shlex.join(command), stdin=credentials, timeout_s=COPY_TIMEOUT_S)
    except RemoteError as exc:
        raise StagingError(f"{exc}; nothing was trained") from None
    try:
        done = FetchResult.model_validate_json(said)
    except ValidationError as exc:
        raise StagingError(
            f"{node.node}: `remotegnn fetch` did not say what it did ({format_validation_error(exc)}); "
            "is the machine's MemoryBridge this version?"
        ) from None
    if not part.matches(done):
        raise StagingError(
            f"{node.node}: `remotegnn fetch` was asked for {what.strip(' ()') or 'the whole dataset'} and says it "
            f"holds {done.part or 'the whole dataset'}; nothing was trained"
        )
    report(f"{node.node}: {done.sentence()}")


def caller_credentials(region: str) -> str:
    """The caller's current AWS credentials as the JSON `remotegnn fetch --credentials-stdin` reads.

    The S3 endpoint is AWS's unless AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL) names another, as boto3
    itself reads them; the machines then use the same one.
    """
    from provisioning.aws import default_session

    found = default_session().get_credentials()
    if found is None:
        raise UsageError(
            "an s3:// dataset is copied with your AWS credentials, and none were found; configure them, "
            "or give the machines an instance role and pass --s3-credentials instance"
        )
    frozen = found.get_frozen_credentials()
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    return json.dumps(
        {
            "aws_access_key_id": frozen.access_key,
            "aws_secret_access_key": frozen.secret_key,
            "aws_session_token": frozen.token,
            "region_name": region,
            "endpoint_url": endpoint,
        }
    )
