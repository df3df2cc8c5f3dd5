"""The cost explorer's files and the API's documentation pages as the server serves them: from
this server only (the browser tests in test_page.py drive them)."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

from api.app import WEB_DIR, app

REPO = Path(__file__).resolve().parents[2]
# Any absolute URL: the page must load nothing from elsewhere (it works offline).
ABSOLUTE_URL = re.compile(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", re.IGNORECASE)
SVG_NAMESPACE = "http://www.w3.org/2000/svg"  # a name, never fetched


def web_files() -> list[Path]:
    return sorted(p for p in WEB_DIR.rglob("*") if p.is_file())


def test_the_page_and_its_assets_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assets = re.findall(r'(?:src|href)="(static/[^"]+)"', page.text)
    assert {Path(a).suffix for a in assets} == {".css", ".js"}
    for asset in assets:
        response = client.get("/" + asset)
        assert response.status_code == 200, asset
        assert response.content == (WEB_DIR / asset).read_bytes()
    missing = client.get("/static/nothing.js")
    assert missing.status_code == 404 and missing.json()["detail"]


def test_the_page_loads_nothing_from_elsewhere():
    for path in web_files():
        text = path.read_text().replace(SVG_NAMESPACE, "")
        assert not ABSOLUTE_URL.search(text), f"{path.name} names an external resource: {ABSOLUTE_URL.search(text)}"


def test_every_page_file_ships_in_the_package():
    """The wheel carries what package-data names: every file of the page must match a pattern."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["api"]
    package = WEB_DIR.parent
    for path in web_files():
        relative = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), f"{relative} is not in package-data"


# The content type each asset of the API's documentation page must be served with.
ASSET_TYPES = {".js": "text/javascript", ".css": "text/css", ".png": "image/png"}


def test_the_api_docs_load_their_scripts_and_styles_from_this_server(client):
    page = "/docs"
    response = client.get(page)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert not ABSOLUTE_URL.search(response.text), f"{page} names an external resource"
    assets = re.findall(r'(?:src|href)="(/[^"]+)"', response.text)
    assert {Path(a).suffix for a in assets} >= {".js"}, assets
    for asset in assets:
        served = client.get(asset)
        assert served.status_code == 200, asset
        assert served.headers["content-type"].startswith(ASSET_TYPES[Path(asset).suffix]), asset
        assert len(served.content) > 0, asset
    spec = re.search(r"""url: ['"]([^'"]+)['"]""", response.text)
    assert spec and client.get(spec.group(1)).json()["info"]["title"] == app.title
    assert client.get("/redoc").status_code == 404  # ReDoc's bundle would fetch its logo from elsewhere
