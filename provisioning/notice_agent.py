"""The notice agent: on a spot machine, watches the instance metadata for AWS's two-minute
warning and writes it where `provision run` looks (``contracts.interruption``).

The boot script of `provision up` starts it on every spot machine as a systemd service:

    /opt/memorybridge/bin/python -m provisioning.notice_agent

It speaks IMDSv2 (a session token from ``PUT /latest/api/token``, renewed when refused, then
``GET /latest/meta-data/spot/instance-action``, which answers 404 until AWS schedules the
interruption), polls every ``POLL_S`` seconds as AWS advises, and writes the notice atomically,
with the instance's id, whenever it appears or changes. An unreachable metadata service is logged
and tried again: the agent never exits on its own.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from contracts.interruption import NOTICE_FILE, InterruptionNotice
from foundation.fileio import write_model

log = logging.getLogger("memorybridge.notice_agent")

METADATA_URL: Final = "http://169.254.169.254"
TOKEN_PATH: Final = "/latest/api/token"
INSTANCE_ID_PATH: Final = "/latest/meta-data/instance-id"
ACTION_PATH: Final = "/latest/meta-data/spot/instance-action"
TOKEN_TTL_HEADER: Final = "X-aws-ec2-metadata-token-ttl-seconds"
TOKEN_HEADER: Final = "X-aws-ec2-metadata-token"
TOKEN_TTL_S: Final = 21_600  # the longest IMDSv2 allows; a refused token is renewed anyway
POLL_S: Final = 5.0  # AWS advises checking for the notice every 5 seconds
REQUEST_TIMEOUT_S: Final = 2.0
NOT_FOUND, UNAUTHORIZED = 404, 401
NOTICE_MODE: Final = 0o644  # the agent runs as root; `provision run` reads the notice as the login user


class Metadata:
    """Instance metadata over IMDSv2, at ``url``."""

    def __init__(self, url: str = METADATA_URL):
        self.url = url.rstrip("/")
        self._token: str | None = None

    def get(self, path: str) -> str | None:
        """The text at ``path``, or None where the service answers 404 (nothing there yet)."""
        try:
            return self._get(path)
        except urllib.error.HTTPError as exc:
            if exc.code != UNAUTHORIZED:
                raise
            self._token = None  # expired: a new token, and one more try
            return self._get(path)

    def _get(self, path: str) -> str | None:
        request = urllib.request.Request(self.url + path, headers={TOKEN_HEADER: self._session()})
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                return response.read().decode()
        except urllib.error.HTTPError as exc:
            if exc.code == NOT_FOUND:
                return None
            raise

    def _session(self) -> str:
        if self._token is None:
            request = urllib.request.Request(
                self.url + TOKEN_PATH, method="PUT", headers={TOKEN_TTL_HEADER: str(TOKEN_TTL_S)}
            )
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                self._token = response.read().decode()
        return self._token


def notice_now(metadata: Metadata, instance_id: str) -> InterruptionNotice | None:
    """The interruption AWS has scheduled for this instance, if any."""
    text = metadata.get(ACTION_PATH)
    if text is None:
        return None
    return InterruptionNotice(instance_id=instance_id, **json.loads(text))


def watch(metadata: Metadata, notice_file: Path, poll_s: float = POLL_S, stop: threading.Event | None = None) -> None:
    """Poll until ``stop`` is set (never, as a service), writing each new notice to ``notice_file``."""
    stop = stop or threading.Event()
    instance_id: str | None = None
    written: tuple[str, str] | None = None
    while not stop.is_set():
        try:
            instance_id = instance_id or metadata.get(INSTANCE_ID_PATH)
            notice = notice_now(metadata, instance_id) if instance_id else None
            if notice is not None and (notice.action, notice.time.isoformat()) != written:
                write_model(notice_file, notice)
                notice_file.chmod(NOTICE_MODE)
                written = (notice.action, notice.time.isoformat())
                log.warning("AWS will %s %s at %s", notice.action, instance_id, notice.time.isoformat())
        except (OSError, ValueError, ValidationError) as exc:  # unreachable, or an answer not as documented
            log.error("instance metadata: %s; trying again in %g s", exc, poll_s)
        stop.wait(poll_s)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m provisioning.notice_agent",
        description="Watch this spot instance's metadata for AWS's interruption notice and write it to a file "
        "that `provision run` reads, so the job can checkpoint before the machine goes.",
    )
    parser.add_argument("--metadata-url", default=METADATA_URL, help="the instance metadata service")
    parser.add_argument("--notice-file", type=Path, default=Path(NOTICE_FILE), help="where the notice is written")
    parser.add_argument("--poll-s", type=float, default=POLL_S, help="seconds between two looks")
    args = parser.parse_args(argv)
    if args.poll_s <= 0:
        parser.error(f"--poll-s {args.poll_s}: give a positive number of seconds")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    args.notice_file.parent.mkdir(parents=True, exist_ok=True)
    watch(Metadata(args.metadata_url), args.notice_file, args.poll_s)


if __name__ == "__main__":
    main()
