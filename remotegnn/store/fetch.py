"""Copying a dataset from S3 onto this machine, verified before it takes the dataset's name.

Run on a memory machine (``remotegnn fetch s3://BUCKET/PREFIX DST``, which ``provision run`` calls
over ssh), so the data goes from S3 to the volume directly. Only the files ``meta.json`` lists are
read; the copy is made in a hidden partial directory beside ``DST`` (as every dataset is written,
:class:`foundation.partial.PartialDirectory`), every checksum is checked against that
``meta.json``, and only then is it renamed to ``DST``. A ``DST`` that already holds the same,
intact dataset is kept.

A part (:class:`Part`: ``--shard I --shards K --layout L``, or ``--structure-only``) copies every
structure file whole and of the feature file only the .npy header and machine I's rows
(``contracts.shards``), by ranged GETs, into a sparse file of full length
(:mod:`remotegnn.store.part`), and records which part it is in ``shard.json``. What is checked:

- the structure files, by meta.json's digests, as for a whole copy;
- the feature part: meta.json's digest covers the whole file, so it cannot check a part, and S3
  offers no digest of a byte range (an ETag or checksum is the whole object's, or a multipart
  upload's parts', which do not line up with the rows). So the object's size must be meta.json's,
  every GET names the ETag the first one saw (``If-Match``: all ranges come from one version of
  the object, never half of one upload and half of the next), each answer must be exactly the
  range asked for, and the .npy header must describe meta.json's array; over the network the
  bytes are as sound as HTTPS (or the endpoint's transport) makes them. The digest of the bytes
  written is then recorded in ``shard.json`` and checks the part from there on (`remotegnn info
  --verify`, a re-fetch), as meta.json's digests check a whole copy.

Already there: a whole intact copy satisfies every request (any part of it is there); a part
satisfies only the same part. Whatever else is asked, the structure files already there intact
are kept (hard-linked into the new copy) and only the rest is read from S3; the feature file is
read again unless it already is what was asked for. A whole fetch over a part sees its
``shard.json`` and copies the whole feature file: a part is never taken for the whole.
"""

from __future__ import annotations

import collections
import errno
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Final, cast

import numpy as np
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import Field, ValidationError

from contracts.dataset import DatasetMeta, FileEntry
from contracts.shards import DEFAULT_LAYOUT, SHARD_LAYOUTS, ShardLayoutName, ShardManifest
from contracts.staging import FetchResult
from foundation.errors import UsageError
from foundation.fileio import write_model
from foundation.models import StrictModel
from foundation.partial import PartialDirectory
from remotegnn.errors import DatasetError
from remotegnn.store.part import (
    FEATURES,
    SHARD_FILE,
    Block,
    blocks,
    coalesce,
    held_digest,
    held_ranges,
    manifest_of,
    structure_bytes,
    total,
)
from remotegnn.store.reader import GraphDataset
from remotegnn.store.writer import file_digest

META = "meta.json"
READ_GAP: Final = 2**20
"""Runs of a part at most this far apart are read in one GET and the bytes between dropped: a GET
waits tens of milliseconds for its first byte, about what one connection reads of 1 MiB."""
WRITE_GAP: Final = 4095
"""Held bytes at most this far apart are written in one write, zeros between: a gap this short holds
no whole 4 KiB block, so it could not have stayed a hole anyway."""
WORKERS: Final = 8  # ranged GETs at a time (botocore's pool holds 10 connections)
HEADER_PROBE: Final = 4096  # the first GET of the feature file: its .npy header, which is 128 bytes as written
NPY_MAGIC: Final = b"\x93NUMPY"


class S3Credentials(StrictModel):
    """What ``--credentials-stdin`` reads: credentials handed over for this copy only (never stored)."""

    aws_access_key_id: str = Field(min_length=1)
    aws_secret_access_key: str = Field(min_length=1)
    aws_session_token: str | None = None
    region_name: str | None = None
    endpoint_url: str | None = Field(None, description="an S3-compatible endpoint instead of AWS's")


@dataclass(frozen=True)
class Part:
    """What of the feature rows a fetch copies: machine ``index``'s of ``count``, dealt in
    ``layout``; or none of them (``index`` None: the structure alone, for a learner that samples)."""

    layout: ShardLayoutName = DEFAULT_LAYOUT
    count: int = 1
    index: int | None = None

    @classmethod
    def of_options(cls, shard: int | None, shards: int | None, layout: str | None, structure_only: bool) -> Part | None:
        """The part `remotegnn fetch`'s options ask for (None: the whole dataset); a UsageError
        naming the option that is wrong."""
        if layout is not None and layout not in SHARD_LAYOUTS:
            raise UsageError(f"--layout: {layout!r} is not a layout; give one of {', '.join(SHARD_LAYOUTS)}")
        if shards is not None and shards < 1:
            raise UsageError(f"--shards: give the number of memory machines, at least 1 (got {shards})")
        if structure_only:
            if shard is not None:
                raise UsageError("--structure-only copies none of the rows: leave out --shard")
            return cls(cast(ShardLayoutName, layout or DEFAULT_LAYOUT), shards or 1, None)
        if shard is None:
            if shards is not None or layout is not None:
                raise UsageError(
                    f"--{'shards' if shards is not None else 'layout'}: give --shard I too (the memory machine whose "
                    "rows to copy), or leave out --shards and --layout for the whole dataset"
                )
            return None
        if shards is None:
            raise UsageError("--shard: give --shards K too, the number of memory machines the rows are dealt to")
        if not 0 <= shard < shards:
            raise UsageError(f"--shard: {shard} is not one of the {shards} memory machines (0 to {shards - 1})")
        return cls(cast(ShardLayoutName, layout or DEFAULT_LAYOUT), shards, shard)

    def manifest(self, meta: DatasetMeta) -> ShardManifest:
        """The ``shard.json`` of this part of ``meta``'s dataset, without its digest."""
        return manifest_of(meta, self.layout, self.count).model_copy(
            update={"index": self.index, "structure_only": self.index is None}
        )


def parse_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` -> (bucket, prefix without a trailing slash)."""
    if not uri.startswith("s3://"):
        raise DatasetError(f"{uri} is not an s3:// URI (s3://BUCKET/PREFIX, the prefix holding meta.json)")
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    prefix = prefix.strip("/")
    if not bucket or not prefix:
        raise DatasetError(f"{uri}: give s3://BUCKET/PREFIX, the prefix holding meta.json")
    return bucket, prefix


def fetch(client, uri: str, destination: Path, part: Part | None = None) -> FetchResult:
    """Copy the dataset at ``uri`` (or ``part`` of it) to ``destination`` with the boto3 S3
    ``client``; what was done."""
    bucket, prefix = parse_uri(uri)
    try:
        raw = client.get_object(Bucket=bucket, Key=f"{prefix}/{META}")["Body"].read()
    except (BotoCoreError, ClientError) as exc:  # no such bucket or key, access denied, no endpoint
        raise DatasetError(f"cannot read {uri}/{META}: {exc}") from None
    try:
        meta = DatasetMeta.model_validate_json(raw)
    except ValidationError as exc:
        raise DatasetError(f"{uri}/{META} is not a RemoteGNN dataset's meta.json: {exc.errors()[0]['msg']}") from None
    wanted = None if part is None else part.manifest(meta)
    there = _Found.look(destination, meta, wanted)
    if there.satisfies():
        return _result(uri, destination, meta, there.manifest, copied=False, fetched=0)
    source = _Source(client, bucket, prefix, uri)
    fetched = 0
    with PartialDirectory(destination) as partial:
        if there.features == "whole":  # kept whole: a part of it is there, and more
            wanted = None
        elif there.features == "same":  # kept, with its digest
            wanted = there.manifest
        for role, entry in meta.files.items():
            target = partial.path / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            if role in there.intact and _link(destination / entry.path, target):
                continue
            if role == FEATURES and wanted is not None:
                read, digest = source.part(entry, target, wanted)
                wanted = wanted.model_copy(update={"features_blake2b": digest})
                fetched += read
                continue
            source.whole(entry, target)
            fetched += entry.bytes
            if file_digest(target) != entry.blake2b:
                raise DatasetError(
                    f"{partial.path / entry.path}: checksum mismatch, the file is corrupt; {uri}/{entry.path} does "
                    "not match its meta.json"
                )
        (partial.path / META).write_bytes(raw)
        if wanted is not None:
            write_model(partial.path / SHARD_FILE, wanted)
        dataset = GraphDataset.open(partial.path)  # sizes, .npy headers, bounds; and shard.json read back
        if dataset.shard_manifest() != wanted:
            raise DatasetError(f"{partial.path / SHARD_FILE} does not read back as written")
        partial.commit()
    return _result(uri, destination, meta, wanted, copied=True, fetched=fetched)


def _result(
    uri: str, destination: Path, meta: DatasetMeta, manifest: ShardManifest | None, *, copied: bool, fetched: int
) -> FetchResult:
    whole = sum(entry.bytes for entry in meta.files.values())
    result = FetchResult(
        source=uri,
        destination=str(destination),
        copied=copied,
        files=len(meta.files),
        bytes=whole,
        dataset_bytes=whole,
        fetched_bytes=fetched,
    )
    if manifest is None or not manifest.staged:
        return result
    header = meta.files[FEATURES].bytes - meta.num_nodes * meta.row_bytes
    return result.model_copy(
        update={
            "bytes": structure_bytes(meta) + total(held_ranges(manifest, header)),
            "shard": manifest.index,
            "shards": manifest.layout.count,
            "layout": manifest.layout.layout,
            "structure_only": manifest.structure_only,
        }
    )


def _link(existing: Path, target: Path) -> bool:
    """Put ``existing`` (verified) at ``target``: a hard link, else a copy; False if neither can."""
    try:
        os.link(existing, target)
        return True
    except OSError:
        pass
    try:
        shutil.copyfile(existing, target)
        return True
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        target.unlink(missing_ok=True)
        return False


@dataclass
class _Found:
    """What ``destination`` already holds of the dataset: the files intact, and of the features:
    ``whole``, ``same`` (the part asked for) or None."""

    intact: set[str]
    features: str | None
    manifest: ShardManifest | None
    roles: set[str]

    @classmethod
    def look(cls, destination: Path, meta: DatasetMeta, wanted: ShardManifest | None) -> _Found:
        """Check what is there against ``meta`` (every digest of what could be kept)."""
        nothing = cls(set(), None, None, set(meta.files))
        try:
            there = GraphDataset.open(destination)
            if there.meta != meta:
                return nothing
            manifest = there.shard_manifest()
        except DatasetError:
            return nothing
        intact = {
            role
            for role, entry in meta.files.items()
            if role != FEATURES and file_digest(destination / entry.path) == entry.blake2b
        }
        features_path = destination / meta.files[FEATURES].path
        features = None
        if manifest is None:
            if file_digest(features_path) == meta.files[FEATURES].blake2b:
                features = "whole"
        elif (
            wanted is not None
            and manifest.model_copy(update={"features_blake2b": None}) == wanted
            and held_digest(features_path, held_ranges(manifest, there.features_offset)) == manifest.features_blake2b
        ):
            features = "same"
        if features is not None:
            intact.add(FEATURES)
        return cls(intact, features, manifest, set(meta.files))

    def satisfies(self) -> bool:
        return self.features is not None and self.intact >= self.roles


class _Source:
    """The dataset's objects in S3."""

    def __init__(self, client, bucket: str, prefix: str, uri: str):
        self.client, self.bucket, self.prefix, self.uri = client, bucket, prefix, uri

    def whole(self, entry: FileEntry, target: Path) -> None:
        try:
            self.client.download_file(self.bucket, f"{self.prefix}/{entry.path}", str(target))
        except (BotoCoreError, ClientError) as exc:
            raise DatasetError(f"cannot copy {self.uri}/{entry.path}: {exc}") from None

    def part(self, entry: FileEntry, target: Path, manifest: ShardManifest) -> tuple[int, str]:
        """Write the header and ``manifest``'s rows of the feature file ``entry`` at their offsets
        in a sparse ``target`` of full length; (bytes read, digest of the bytes held)."""
        key, where = f"{self.prefix}/{entry.path}", f"{self.uri}/{entry.path}"
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=key)
        except (BotoCoreError, ClientError) as exc:
            raise DatasetError(f"cannot read {where}: {exc}") from None
        size, etag = int(head["ContentLength"]), head["ETag"]
        if size != entry.bytes:
            raise DatasetError(f"{where} has {size:,} bytes but its meta.json says {entry.bytes:,}")
        start = self._get(key, where, etag, size, 0, min(HEADER_PROBE, size))
        header = _header_bytes(start, where, size)
        if header > len(start):
            start = self._get(key, where, etag, size, 0, header)
        read = len(start)
        ranges = held_ranges(manifest, header)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.ftruncate(fd, size)  # all holes: reads as zeros, takes no disk
            os.pwrite(fd, start[:header], 0)
            rest = ranges.copy()
            rest[0, 0] = max(rest[0, 0], header)
            rest = rest[rest[:, 1] > rest[:, 0]]
            read += self._blocks(key, where, etag, size, fd, rest)
            os.fsync(fd)
        finally:
            os.close(fd)
        return read, held_digest(target, ranges)

    def _blocks(self, key: str, where: str, etag: str, size: int, fd: int, ranges: np.ndarray) -> int:
        """Read every block of ``ranges``, WORKERS at a time, writing what each holds; bytes read.

        The threads start before any of them reads, and every one that started is waited for
        whatever happens (an error, Ctrl-C, another Ctrl-C meanwhile): a block under way writes into
        ``fd``, which the caller closes next (and a new file may take its number), and into the
        partial directory, which goes next. A thread pool would not do: Ctrl-C while it starts a
        thread leaves that thread out of the ones it waits for."""
        todo = collections.deque(blocks(ranges, READ_GAP))
        total = sum(block.stop - block.start for block in todo)
        failures: list[BaseException] = []
        go, stop = threading.Event(), threading.Event()

        def copy() -> None:
            go.wait()
            while not stop.is_set():
                try:
                    block = todo.popleft()
                except IndexError:
                    return
                try:
                    _write(fd, block, self._get(key, where, etag, size, block.start, block.stop))
                except BaseException as exc:  # the first error stops the others, and the caller raises it
                    failures.append(exc)
                    stop.set()

        workers = [threading.Thread(target=copy, name=f"fetch-{i}") for i in range(min(WORKERS, len(todo)))]
        try:
            for worker in workers:
                worker.start()
            go.set()
            for worker in workers:
                worker.join()
        except BaseException:
            stop.set()  # the blocks not yet started are dropped
            go.set()
            _join_despite_interrupts(workers)
            raise
        if failures:
            raise failures[0]
        return total

    def _get(self, key: str, where: str, etag: str, size: int, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)`` of the object as it was when ``etag`` was read."""
        try:
            answer = self.client.get_object(
                Bucket=self.bucket, Key=key, Range=f"bytes={start}-{stop - 1}", IfMatch=etag
            )
            data = answer["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                raise DatasetError(f"{where} was replaced while it was being copied; fetch again") from None
            raise DatasetError(f"cannot copy {where}: {exc}") from None
        except BotoCoreError as exc:
            raise DatasetError(f"cannot copy {where}: {exc}") from None
        said = answer.get("ContentRange")
        if len(data) != stop - start or said != f"bytes {start}-{stop - 1}/{size}":
            raise DatasetError(
                f"{where}: asked for bytes {start:,} to {stop:,} and got {len(data):,} bytes ({said}); the copy stops"
            )
        return data


def _header_bytes(start: bytes, where: str, size: int) -> int:
    """The length of the .npy header at the start of the feature file."""
    if not start.startswith(NPY_MAGIC) or len(start) < 12 or start[6] not in (1, 2, 3):
        raise DatasetError(f"{where} does not start with a .npy header")
    length = 10 + int.from_bytes(start[8:10], "little") if start[6] == 1 else 12 + int.from_bytes(start[8:12], "little")
    if length >= size:
        raise DatasetError(f"{where}: its .npy header claims {length:,} of its {size:,} bytes")
    return length


def _join_despite_interrupts(threads: list[threading.Thread]) -> None:
    """Wait for every thread of ``threads`` that started; another Ctrl-C meanwhile does not cut the
    wait short (the caller is already on its way out with the first)."""
    for thread in threads:
        while thread.is_alive():
            try:
                thread.join()
            except KeyboardInterrupt:
                continue


def _write(fd: int, block: Block, data: bytes) -> None:
    """Write the held bytes of ``block`` (read as ``data``) at their offsets; holes stay holes."""
    if block.whole:
        os.pwrite(fd, data, block.start)
        return
    buf = np.frombuffer(data, dtype=np.uint8).copy()
    buf[~block.mask()] = 0  # only between held bytes written together (WRITE_GAP), which stay zeros
    for lo, hi in (coalesce(block.held, WRITE_GAP) - block.start).tolist():
        os.pwrite(fd, buf.data[lo:hi], block.start + lo)
