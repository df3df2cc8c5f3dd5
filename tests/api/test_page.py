"""The cost explorer and the API's docs in a real browser: Debian's Chromium driven by Playwright,
against a real `planner serve` process. What each test expects comes from the API itself, asked over HTTP with the
same request the page sends, never from figures copied into the test.

Screenshots of the page at a laptop's and a phone's width are written to out/screenshots/ for a
person to look at.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import httpx
import pytest

from contracts.plan import RANKING_RULE, read_plan
from foundation.units import SECONDS_PER_HOUR, duration, usd

expect = pytest.importorskip("playwright.sync_api", reason="needs the playwright package").expect

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "out" / "screenshots"
WIDTHS = {"laptop": (1366, 900), "phone": (390, 844)}
ANSWER_TIMEOUT_MS = 60_000  # a first pricing on a loaded 2-core machine


PAGE_WORKLOAD = {
    "epochs": 10,
    "gpus": None,
    "gpu_cache_gib": "0",
    "learner_machines": 1,
    "sampling": "auto",
    "shard_layout": "striped",
}
"""The workload the page sends with its default controls."""


def page_request(budget: float | None, **extra) -> dict:
    """The body the page sends with its default controls and ``budget``."""
    body = {
        "dataset": "papers100M",
        "workload": dict(PAGE_WORKLOAD),
        "constraints": {"budget_usd": budget, "deadline_hours": None, "max_hourly_usd": None},
        "filters": {"max_memory_gib": None, "gpu_families": None, "memory_families": None},
        "spot": False,
        "ena_express": False,
        "top": 10,
    }
    body.update(extra)
    return body


def answers(page) -> int:
    return int(page.evaluate("document.body.dataset.answers || '0'"))


def wait_for_answer(page, after: int) -> None:
    """Wait until the page has handled an answer newer than ``after`` (answered or refused)."""
    page.wait_for_function(
        f"Number(document.body.dataset.answers || 0) > {after}", timeout=ANSWER_TIMEOUT_MS, polling="raf"
    )


def set_field(page, selector: str, value: str) -> None:
    before = answers(page)
    page.fill(selector, value)
    wait_for_answer(page, before)


def table_rows(page) -> list[dict]:
    """Each ranked row as the page shows it: cost in dollars, and whether it is marked over the limits."""
    return page.eval_on_selector_all(
        "#plans tbody tr",
        """rows => rows.map(r => ({
            learner: r.cells[1].innerText,
            cost: Number(r.cells[7].innerText.replace(/[$,]/g, '')),
            over: r.classList.contains('over'),
        }))""",
    )


@pytest.fixture
def page(browser, explorer_url):
    context = browser.new_context(viewport={"width": 1366, "height": 900}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # Chromium logs each 4xx answer as a console error; a refused request is expected here, a script error is not.
    page.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource")
            else None
        ),
    )
    page.goto(explorer_url + "/")
    page.wait_for_function("Number(document.body.dataset.answers || 0) >= 1", timeout=ANSWER_TIMEOUT_MS)
    yield page
    context.close()
    assert errors == [], f"the page logged errors: {errors}"


def test_the_page_loads_with_a_recommendation_and_screenshots_at_two_widths(browser, explorer_url, api):
    expected = api.post("/v1/recommendations", json=page_request(50)).json()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name, (width, height) in WIDTHS.items():
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.goto(explorer_url + "/")
        page.wait_for_function("Number(document.body.dataset.answers || 0) >= 1", timeout=ANSWER_TIMEOUT_MS)
        headline = page.inner_text("#verdict .headline")
        assert headline.startswith(expected["chosen"]["learner"]["instance_type"]), headline
        assert usd(expected["chosen"]["total_usd"]) in headline
        assert page.locator("#plans tbody tr").count() >= 2
        assert page.locator("#plans tbody tr").first.locator(".badge.chosen").inner_text() == "recommended"
        assert page.locator("#frontier svg circle.point.chosen").count() == 1
        assert page.locator("#stages .stage-bar.bottleneck").count() == 1
        assert expected["snapshot"]["retrieved_on"] in page.inner_text("#snapshot")
        # Readable at this width: the page itself never scrolls sideways (the wide table scrolls in its box).
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name}: the page is {overflow}px wider than the screen"
        page.screenshot(path=str(SCREENSHOTS / f"explorer-{name}.png"), full_page=True)
        context.close()
    assert (SCREENSHOTS / "explorer-phone.png").stat().st_size > 0


def test_changing_the_budget_updates_the_table(page, api):
    cheapest = api.post("/v1/recommendations", json=page_request(50)).json()["cheapest_feasible_usd"]
    tight = round(cheapest * 1.05, 2)  # room for the cheapest plan and few others
    set_field(page, "#budget", str(tight))
    rows = table_rows(page)
    assert rows, "no plan shown"
    assert all(r["cost"] <= tight or r["over"] for r in rows), rows
    assert any(r["over"] for r in rows) or len(rows) < 10
    expected = api.post("/v1/recommendations", json=page_request(tight)).json()
    fitting = [r for r in rows if not r["over"]]
    assert len(fitting) == 1 + sum(p["fits"] for p in expected["alternatives"][:9])
    assert page.inner_text("#verdict .headline").startswith(expected["chosen"]["learner"]["instance_type"])

    # The slider moves the budget too, by keyboard: End is its top, $10,000.
    before = answers(page)
    page.focus("#budget-slider")
    page.keyboard.press("End")
    wait_for_answer(page, before)
    assert float(page.input_value("#budget")) == 10000
    assert not any(r["over"] for r in table_rows(page))


def test_gpus_and_learner_machines_reach_the_request_and_the_table_says_what_trains(page, api):
    default = api.post("/v1/recommendations", json=page_request(50)).json()["chosen"]
    ranks = default["learner_ranks"]  # every GPU of a multi-GPU learner trains by default
    assert (f"{ranks} train" in table_rows(page)[0]["learner"]) == (ranks > 1)
    one = page_request(50, workload={**PAGE_WORKLOAD, "gpus": 1})
    expected = api.post("/v1/recommendations", json=one).json()["chosen"]
    set_field(page, "#gpus", "1")
    assert page.inner_text("#verdict .headline").startswith(expected["learner"]["instance_type"])
    assert " train)" not in table_rows(page)[0]["learner"]
    two = page_request(50, workload={**PAGE_WORKLOAD, "gpus": 1, "learner_machines": 2})
    expected = api.post("/v1/recommendations", json=two).json()["chosen"]
    set_field(page, "#learner-machines", "2")
    assert table_rows(page)[0]["learner"].startswith(f"2× {expected['learner']['instance_type']}")


def test_the_gpu_cache_reaches_the_request_and_a_bad_size_is_marked_at_its_control(page, api):
    workload = {**PAGE_WORKLOAD, "gpu_cache_gib": "auto"}
    expected = api.post("/v1/recommendations", json=page_request(50, workload=workload)).json()
    assert (
        expected["request"]["workload"]["gpu_cache_gib"] == "auto"
        and expected["chosen"]["data_path"]["gpu_cache_gib"] > 0
    )
    set_field(page, "#gpu-cache", "auto")
    assert page.inner_text("#verdict .headline").startswith(expected["chosen"]["learner"]["instance_type"])
    assert page.inner_text("#gpu-cache-error") == ""

    refused = api.post("/v1/recommendations", json=page_request(50, workload={**workload, "gpu_cache_gib": "-1"}))
    assert refused.status_code == 422 and refused.json()["errors"][0]["loc"] == ["body", "workload", "gpu_cache_gib"]
    set_field(page, "#gpu-cache", "-1")
    assert refused.json()["errors"][0]["msg"] in page.inner_text("#gpu-cache-error")
    assert page.get_attribute("#gpu-cache", "aria-invalid") == "true"


def test_who_samples_reaches_the_request_and_the_plan_says_it(page, api):
    workload = {**PAGE_WORKLOAD, "sampling": "learner"}
    expected = api.post("/v1/recommendations", json=page_request(50, workload=workload)).json()
    assert expected["chosen"]["data_path"]["sampling"] in ("learner", None)  # None: a single machine
    before = answers(page)
    page.select_option("#sampling", "learner")
    wait_for_answer(page, before)
    assert page.inner_text("#verdict .headline").startswith(expected["chosen"]["learner"]["instance_type"])
    assert page.inner_text("#sampling-error") == ""


def test_the_shard_layout_reaches_the_request(page, api):
    workload = {**PAGE_WORKLOAD, "shard_layout": "modulo"}
    expected = api.post("/v1/recommendations", json=page_request(50, workload=workload)).json()
    assert expected["request"]["workload"]["shard_layout"] == "modulo"
    before = answers(page)
    page.select_option("#shard-layout", "modulo")
    wait_for_answer(page, before)
    assert page.inner_text("#verdict .headline").startswith(expected["chosen"]["learner"]["instance_type"])
    assert page.inner_text("#shard-layout-error") == ""


def test_an_infeasible_budget_shows_the_reason_and_the_cheapest_feasible_cost(page, api):
    set_field(page, "#budget", "0.05")
    expected = api.post("/v1/recommendations", json=page_request(0.05)).json()
    assert expected["feasible"] is False
    verdict = page.inner_text("#verdict")
    assert "No plan fits" in verdict and expected["reason"] in verdict
    assert usd(expected["cheapest_feasible_usd"]) in page.inner_text("#cheapest")
    assert page.get_attribute("#budget", "aria-invalid") == "true"
    assert page.is_disabled("#download")

    # The advice is a button that sets the budget to the least that fits.
    advice = expected["infeasibility"]["advice"][0]
    assert advice["field"] == "constraints.budget_usd"
    before = answers(page)
    page.get_by_role("button", name="raise the budget").click()
    wait_for_answer(page, before)
    assert float(page.input_value("#budget")) == pytest.approx(advice["value"])
    assert "No plan fits" not in page.inner_text("#verdict")
    assert not page.is_disabled("#download")


def test_a_refused_field_is_marked_next_to_its_control(page, api):
    set_field(page, "#budget", "-5")
    refused = api.post("/v1/recommendations", json=page_request(-5))
    assert refused.status_code == 422
    message = refused.json()["errors"][0]["msg"]
    assert message in page.inner_text("#budget-error")
    assert page.get_attribute("#budget", "aria-invalid") == "true"
    assert page.is_hidden("#request-error")

    set_field(page, "#epochs", "2.5")  # the budget stays refused; the epochs are refused too
    assert page.inner_text("#epochs-error")
    set_field(page, "#budget", "50")
    set_field(page, "#epochs", "3")
    assert page.inner_text("#budget-error") == "" and page.inner_text("#epochs-error") == ""
    assert "3 epochs" in page.inner_text("#verdict .headline")


def test_profile_upload_errors_are_shown_and_a_good_profile_is_planned(page, api):
    def upload(name: str, content: bytes) -> int:
        before = answers(page)
        page.set_input_files("#profile-file", files=[{"name": name, "mimeType": "application/json", "buffer": content}])
        return before

    upload("broken.json", b"{ not json")  # refused in the page: no request is sent
    expect(page.locator("#profile-file-error")).to_contain_text("is not JSON")

    profile = api.get("/v1/datasets/products").json()
    bad = {**profile, "name": "my-graph", "num_nodes": -1}
    before = upload("bad.json", json.dumps(bad).encode())
    wait_for_answer(page, before)
    error = page.inner_text("#profile-file-error")
    assert "profile.num_nodes" in error, error

    before = upload("good.json", json.dumps({**profile, "name": "my-graph"}).encode())
    wait_for_answer(page, before)
    assert page.inner_text("#profile-file-error") == ""
    assert "my-graph" in page.inner_text("#verdict .headline")
    assert page.input_value("#dataset") != "papers100M"


def test_the_downloaded_plan_is_a_plan_file(page, tmp_path):
    set_field(page, "#budget", "20")
    with page.expect_download() as download:
        page.click("#download")
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    plan = read_plan(path)  # what `provision up --plan` reads
    assert plan.feasible and plan.chosen is not None
    assert plan.request.constraints.budget_usd == 20
    assert plan.chosen.label.split(" ")[0] in page.inner_text("#verdict .headline")


def test_a_plan_is_chosen_by_keyboard_and_its_stages_are_shown(page):
    page.focus("#plans tbody tr:nth-child(2) button.pick")
    page.keyboard.press("Enter")
    assert page.inner_text("#stages-plan").startswith("Plan 2")
    assert page.get_attribute("#plans tbody tr:nth-child(2) button.pick", "aria-pressed") == "true"
    learner = page.inner_text("#plans tbody tr:nth-child(2) td:nth-child(2)").split(" ")[0]
    assert learner in page.inner_text("#stages-plan")
    assert page.locator("#stages .stage-bar").count() >= 2


def test_a_small_graphs_plans_read_apart_as_the_cli_prints_them_under_the_stated_ranking(page, api):
    before = answers(page)
    page.select_option("#dataset", "arxiv")
    wait_for_answer(page, before)
    expected = api.post("/v1/recommendations", json=page_request(50, dataset="arxiv")).json()
    ranked = [expected["chosen"], *(p for p in expected["alternatives"] if p["fits"])][:9]
    cells = page.eval_on_selector_all(
        "#plans tbody tr", "rows => rows.map(r => ({total: r.cells[6].innerText, cost: r.cells[7].innerText}))"
    )[: len(ranked)]
    assert [c["cost"] for c in cells] == [usd(p["total_usd"]) for p in ranked]
    assert [c["total"] for c in cells] == [duration(p["total_hours"] * SECONDS_PER_HOUR) for p in ranked]
    # A fraction of a cent apart still reads apart: costs 1% apart show different figures (two plans
    # may still agree to the three digits shown).
    for (a, cell_a), (b, cell_b) in itertools.combinations(zip(ranked, cells, strict=True), 2):
        if abs(a["total_usd"] - b["total_usd"]) >= 0.01 * min(a["total_usd"], b["total_usd"]):
            assert cell_a["cost"] != cell_b["cost"]
    assert "$0.00" not in {c["cost"] for c in cells}
    assert " ".join(page.inner_text("#ranking").split()).lower() == f"ranked {RANKING_RULE}.".lower()


def test_a_stale_snapshot_is_flagged(browser, stale_explorer_url):
    page = browser.new_page()
    page.goto(stale_explorer_url + "/")
    page.wait_for_function("Number(document.body.dataset.answers || 0) >= 1", timeout=ANSWER_TIMEOUT_MS)
    snapshot = page.locator("#snapshot")
    assert "Older than 30 days" in snapshot.inner_text()
    assert "stale" in (snapshot.get_attribute("class") or "")
    page.close()


@pytest.fixture(scope="module")
def api(explorer_url):
    with httpx.Client(base_url=explorer_url, timeout=60.0) as client:
        yield client


def test_the_api_docs_render_with_no_network_but_this_server(browser, explorer_url):
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    elsewhere: list[str] = []

    def this_server_only(route) -> None:
        if route.request.url.startswith(explorer_url):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort("internetdisconnected")

    context.route("**/*", this_server_only)
    page = context.new_page()
    page.goto(explorer_url + "/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text(
        "memorybridge planner API", timeout=ANSWER_TIMEOUT_MS
    )
    expect(page.locator(".swagger-ui .opblock-summary-path", has_text="/v1/recommendations")).to_be_visible()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "api-docs.png"))
    context.close()
    assert elsewhere == [], f"/docs asked for {elsewhere}"
