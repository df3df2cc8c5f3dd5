"""Copying a dataset from S3 onto this machine, verified before it takes the dataset's name.

Run on a memory machine (``remotegnn fetch s3://BUCKET/PREFIX DST``, which ``provision run`` calls
over ssh), so the data goes from S3 to the volume directly. Only the files ``meta.json`` lists are
read; the copy is made in a hidden partial directory beside ``DST`` (as every dataset is written,
:class:`foundation.partial.PartialDirectory`), every checksum is checked against that
``meta.json``, and only then is it renamed to ``DST``. A ``DST`` that already holds the same,
intact dataset is kept.
"""

from __future__ import annotations

from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contracts.staging import FetchResult
from foundation.partial import PartialDirectory
from remotegnn.errors import DatasetError
from remotegnn.store.meta import DatasetMeta
from remotegnn.store.reader import GraphDataset

META = "meta.json"


class S3Credentials(BaseModel):
    """What ``--credentials-stdin`` reads: credentials handed over for this copy only (never stored)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    aws_access_key_id: str = Field(min_length=1)
    aws_secret_access_key: str = Field(min_length=1)
    aws_session_token: str | None = None
    region_name: str | None = None
    endpoint_url: str | None = Field(None, description="an S3-compatible endpoint instead of AWS's")


def parse_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` -> (bucket, prefix without a trailing slash)."""
    if not uri.startswith("s3://"):
        raise DatasetError(f"{uri} is not an s3:// URI (s3://BUCKET/PREFIX, the prefix holding meta.json)")
    bucket, _, prefix = uri[len("s3://") :].partition("/")
    prefix = prefix.strip("/")
    if not bucket or not prefix:
        raise DatasetError(f"{uri}: give s3://BUCKET/PREFIX, the prefix holding meta.json")
    return bucket, prefix


def fetch(client, uri: str, destination: Path) -> FetchResult:
    """Copy the dataset at ``uri`` to ``destination`` with the boto3 S3 ``client``; what was done."""
    bucket, prefix = parse_uri(uri)
    try:
        raw = client.get_object(Bucket=bucket, Key=f"{prefix}/{META}")["Body"].read()
    except (BotoCoreError, ClientError) as exc:  # no such bucket or key, access denied, no endpoint
        raise DatasetError(f"cannot read {uri}/{META}: {exc}") from None
    try:
        meta = DatasetMeta.model_validate_json(raw)
    except ValidationError as exc:
        raise DatasetError(f"{uri}/{META} is not a RemoteGNN dataset's meta.json: {exc.errors()[0]['msg']}") from None
    size = sum(entry.bytes for entry in meta.files.values())
    done = FetchResult(source=uri, destination=str(destination), copied=False, files=len(meta.files), bytes=size)
    if _intact(destination, meta):
        return done
    with PartialDirectory(destination) as partial:
        for entry in meta.files.values():
            target = partial.path / entry.path
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                client.download_file(bucket, f"{prefix}/{entry.path}", str(target))
            except (BotoCoreError, ClientError) as exc:
                raise DatasetError(f"cannot copy {uri}/{entry.path}: {exc}") from None
        (partial.path / META).write_bytes(raw)
        GraphDataset.open(partial.path, verify=True)
        partial.commit()
    return done.model_copy(update={"copied": True})


def _intact(path: Path, meta: DatasetMeta) -> bool:
    if not path.is_dir():
        return False
    try:
        return GraphDataset.open(path, verify=True).meta == meta
    except DatasetError:
        return False
