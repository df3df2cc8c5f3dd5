"""`remotegnn fetch`: copy a dataset from S3 onto this machine, verified."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

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
    as_json: Annotated[bool, typer.Option("--json", help="print what was done as JSON")] = False,
) -> None:
    """Copy a RemoteGNN dataset from S3, check every checksum, then give it its name.

    Example: remotegnn fetch s3://my-bucket/datasets/papers100M /data/datasets/papers100M
    """
    import boto3

    from remotegnn.store.fetch import S3Credentials
    from remotegnn.store.fetch import fetch as copy

    if credentials_stdin:
        try:
            given = S3Credentials.model_validate_json(sys.stdin.read())
        except ValidationError as exc:
            raise UsageError(f"--credentials-stdin: not the credentials JSON: {exc.errors()[0]['msg']}") from None
        client = boto3.client("s3", **given.model_dump(exclude_none=True))
    else:
        client = boto3.client("s3")
    done = copy(client, source, destination)
    if as_json:
        emit_json(done)
        return
    out.print(done.sentence(), soft_wrap=True)
