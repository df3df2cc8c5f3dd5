"""The notice agent, run as the boot script runs it (``python -m provisioning.notice_agent``),
against a stand-in for EC2's instance metadata service that speaks IMDSv2 as AWS documents it:
a token from PUT, refused without one (401), ``spot/instance-action`` 404 until AWS schedules the
interruption. (moto has no metadata service; this one is an HTTP server on a local port.)"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from contracts.interruption import InterruptionNotice
from foundation.fileio import read_model
from provisioning import notice_agent

INSTANCE_ID = "i-0123456789abcdef0"
WAIT_S = 20.0  # generous: the agent polls every 0.05 s here


class MetadataService:
    """IMDSv2 for one instance; ``action`` is the scheduled interruption (None: not yet); each token
    is good for ``token_uses`` requests, then refused, as an expired one is."""

    def __init__(self, token_uses: int = 1000):
        self.action: dict | None = None
        self.token_uses = token_uses
        self.tokens: dict[str, int] = {}
        self.refused = 0
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                if self.path != notice_agent.TOKEN_PATH or not self.headers.get(notice_agent.TOKEN_TTL_HEADER):
                    return self._send(400, "")
                token = f"token-{len(service.tokens)}"
                service.tokens[token] = service.token_uses
                self._send(200, token)

            def do_GET(self) -> None:
                token = self.headers.get(notice_agent.TOKEN_HEADER, "")
                if service.tokens.get(token, 0) <= 0:
                    service.refused += 1
                    return self._send(401, "")
                service.tokens[token] -= 1
                if self.path == notice_agent.INSTANCE_ID_PATH:
                    return self._send(200, INSTANCE_ID)
                if self.path == notice_agent.ACTION_PATH and service.action is not None:
                    return self._send(200, json.dumps(service.action))
                self._send(404, "")

            def _send(self, code: int, body: str) -> None:
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def service():
    running = MetadataService(token_uses=3)  # the agent must renew its token several times
    yield running
    running.close()


@pytest.fixture
def agent(service, tmp_path):
    notice = tmp_path / "var" / "interruption.json"
    argv = [sys.executable, "-m", "provisioning.notice_agent", "--metadata-url", service.url]
    process = subprocess.Popen([*argv, "--notice-file", str(notice), "--poll-s", "0.05"], stderr=subprocess.PIPE)
    yield process, notice
    process.kill()
    process.wait()


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"no {what} after {WAIT_S} s"
        time.sleep(0.05)


def test_the_agent_writes_the_notice_when_aws_schedules_it_and_again_when_it_changes(service, agent):
    process, notice = agent
    wait_for(lambda: service.refused >= 2, "token renewal")  # polls go on, no notice yet, tokens expire
    assert not notice.exists() and process.poll() is None
    service.action = {"action": "terminate", "time": "2026-11-27T04:02:00Z"}
    wait_for(notice.exists, "notice file")
    written = read_model(notice, InterruptionNotice, "notice")
    assert (written.instance_id, written.action, written.time.isoformat()) == (
        INSTANCE_ID, "terminate", "2026-11-27T04:02:00+00:00"
    )  # fmt: skip
    assert notice.stat().st_mode & 0o777 == 0o644  # readable by the login user that `provision run` uses
    service.action = {"action": "stop", "time": "2026-11-27T04:03:00Z"}
    wait_for(lambda: read_model(notice, InterruptionNotice, "notice").action == "stop", "changed notice")
    assert [p.name for p in notice.parent.iterdir()] == [notice.name]  # atomic: no temp file left


def test_an_unreachable_service_is_logged_and_tried_again_until_stopped(tmp_path, caplog):
    service = MetadataService()
    url = service.url
    service.close()  # nothing listens there now
    stop = threading.Event()
    args = (notice_agent.Metadata(url), tmp_path / "interruption.json", 0.01, stop)
    watcher = threading.Thread(target=notice_agent.watch, args=args, daemon=True)
    with caplog.at_level(logging.ERROR, logger=notice_agent.log.name):
        watcher.start()
        wait_for(lambda: len(caplog.records) >= 2, "second failed look")
        stop.set()
        watcher.join(timeout=WAIT_S)
    assert not watcher.is_alive() and not (tmp_path / "interruption.json").exists()
    assert "instance metadata:" in caplog.records[0].getMessage()
