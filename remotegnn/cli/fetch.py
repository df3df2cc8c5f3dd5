"""`remotegnn fetch`: copy a dataset from S3 onto this machine, verified."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError

from foundation.cli import emit_json, handle_errors, handle_interrupts, out
from foundation.errors import UsageError
from remotegnn.cli.app import app


@app.command()
@handle_errors
@handle_interrupts
def fetch(
    source: Annotated[str, typer.Argument(help="s3://BUCKET/PREFIX, the prefix holding the dataset's meta.json")],
    destination: Annotated[Path, typer.Argument(help="dataset directory to create (or keep, when intact)")],
    credentials_stdin: Annotated[
        bool,
        typer.Option(
            "--credentials-stdin",
            help="read AWS credentials as JSON from standard input (as `provision run` sends them) instead of "
            "the standard chain (environment, instance role)",
        ),
    ] = False,
    shard: Annotated[
        Optional[int],
        typer.Option(
            help="copy only this memory machine's part (0 to K-1): every structure file, and of the features only "
            "its rows, at their offsets in a sparse file of full length; shard.json says which part"
        ),
    ] = None,
    shards: Annotated[
        Optional[int], typer.Option(help="with --shard: the number of memory machines K the rows are dealt to")
    ] = None,
    layout: Annotated[
        Optional[str],
        typer.Option(
            help="with --shard: how the rows are dealt, striped (default), range or modulo; as `remotegnn serve "
            "--layout`, see `remotegnn shards`"
        ),
    ] = None,
    structure_only: Annotated[
        bool,
        typer.Option(
            "--structure-only",
            help="copy the structure and none of the feature rows (a learner that samples its own batches)",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print what was done as JSON")] = False,
) -> None:
    """Copy a RemoteGNN dataset from S3, check every checksum, then give it its name.

    With --shard I --shards K, only memory machine I's part: the structure files whole and its
    feature rows, read by ranged GETs; the part is checked by the object's size, its ETag on every
    read and the exact ranges S3 answers, and the digest of what was written is kept in shard.json
    (meta.json's covers the whole file). What is already there and intact is kept: the same part,
    or a whole copy (which holds every part); otherwise the structure files found intact are kept
    and the rest is copied. A whole fetch over a part copies the features again.

    Examples:
      remotegnn fetch s3://my-bucket/datasets/papers100M /data/datasets/papers100M
      remotegnn fetch s3://my-bucket/datasets/papers100M /data/datasets/papers100M --shard 1 --shards 4
    """
    from remotegnn.store.fetch import Part, S3Credentials
    from remotegnn.store.fetch import fetch as copy

    part = Part.of_options(shard, shards, layout, structure_only)
    import boto3

    if credentials_stdin:
        try:
            given = S3Credentials.model_validate_json(sys.stdin.read())
        except ValidationError as exc:
            raise UsageError(f"--credentials-stdin: not the credentials JSON: {exc.errors()[0]['msg']}") from None
        client = boto3.client("s3", **given.model_dump(exclude_none=True))
    else:
        client = boto3.client("s3")
    done = copy(client, source, destination, part)
    if as_json:
        emit_json(done)
        return
    out.print(done.sentence(), soft_wrap=True)
