"""The REST API in-process: each endpoint answers what the planner computes, errors have one shape."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from api.app import MAX_BODY_BYTES, SNAPSHOT_HEADER
from api.cache import ResponseCache
from contracts.calibration import DEFAULT_COEFFICIENTS
from contracts.plan import PlanRequest, Recommendation
from planner.datasets.builtin import BUILTIN
from planner.solver.estimate import Estimate, EstimateRequest, estimate
from planner.solver.recommend import recommend

SMALL_FILTERS = {"gpu_families": ["g4dn", "g5"], "memory_families": ["r8g", "x2gd"]}


def plan_body(**kw) -> dict:
    body = {"dataset": "papers100M", "filters": SMALL_FILTERS, "constraints": {"budget_usd": 50}}
    body.update(kw)
    return body


def assert_error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"detail", "suggestions", "errors"} and body["detail"]
    return body


# ------------------------------------------------------------------------------- service, catalog


def test_families_are_the_priced_ones_and_every_one_is_a_valid_filter(client, catalog, fresh_cache):
    response = client.get("/v1/families")
    assert response.status_code == 200 and response.headers[SNAPSHOT_HEADER] == catalog.sha256
    families = response.json()
    priced = [i for i in catalog.snapshot.instances if i.price_provenance]
    assert sum(f["types"] for f in families) == len(priced)
    assert [f["name"] for f in families] == sorted({i.family for i in priced})
    for family in families:
        members = [i for i in priced if i.family == family["name"]]
        assert family["gpu"] == members[0].has_gpu and all(i.has_gpu == family["gpu"] for i in members)
        assert family["max_memory_gib"] == max(i.memory_gib for i in members)
    gpu = [f["name"] for f in families if f["gpu"]]
    memory = [f["name"] for f in families if not f["gpu"]]
    assert gpu and memory
    every = {"dataset": "products", "filters": {"gpu_families": gpu, "memory_families": memory, "max_memory_nodes": 1}}
    assert client.post("/v1/recommendations", json=every).status_code == 200


def test_healthz_reports_the_snapshot_and_its_age(client, catalog):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["snapshot"]["age_days"] == (dt.date.today() - catalog.snapshot.meta.retrieved_on).days
    assert body["snapshot"]["sha256"] == catalog.sha256 == response.headers[SNAPSHOT_HEADER]


def test_pricing_shows_the_snapshot_metadata(client, catalog):
    body = client.get("/v1/pricing").json()
    assert body["meta"] == catalog.snapshot.meta.model_dump(mode="json")
    assert body["info"]["sha256"] == catalog.sha256
    assert {v["name"] for v in body["volumes"]} >= {"gp3"}
    assert body["transfer"] == catalog.transfer.model_dump(mode="json")


def test_instance_filters_match_the_catalog(client, catalog):
    params = {"gpu": "true", "family": ["g4dn", "g5"], "min_memory_gib": 32, "arch": "x86_64", "limit": 500}
    body = client.get("/v1/instances", params=params).json()
    expected = [
        i.name
        for i in catalog.snapshot.instances
        if i.price_provenance and i.has_gpu and i.family in ("g4dn", "g5") and i.memory_gib >= 32 and i.arch == "x86_64"
    ]
    assert [i["name"] for i in body["items"]] == expected and body["total"] == len(expected) > 0
    assert body["snapshot"]["sha256"] == catalog.sha256
    cpu_only = client.get("/v1/instances", params={"gpu": "false", "limit": 500}).json()
    assert cpu_only["items"] and not any(i["gpu_count"] for i in cpu_only["items"])


def test_instance_pages_partition_the_listing(client):
    everything = client.get("/v1/instances", params={"arch": "arm64", "limit": 500}).json()
    assert 30 < everything["total"] <= 500
    names, offset = [], 0
    while offset < everything["total"]:
        page = client.get("/v1/instances", params={"arch": "arm64", "offset": offset, "limit": 7}).json()
        assert page["total"] == everything["total"] and page["offset"] == offset and page["limit"] == 7
        assert len(page["items"]) == min(7, everything["total"] - offset)
        names += [i["name"] for i in page["items"]]
        offset += 7
    assert names == [i["name"] for i in everything["items"]]
    past = client.get("/v1/instances", params={"arch": "arm64", "offset": offset + 100}).json()
    assert past["items"] == [] and past["total"] == everything["total"]


def test_unpriced_types_are_listed_only_on_request(client, catalog):
    priced = client.get("/v1/instances", params={"limit": 1}).json()["total"]
    everything = client.get("/v1/instances", params={"limit": 1, "include_unpriced": "true"}).json()["total"]
    assert everything == len(catalog.snapshot.instances) > priced


@pytest.mark.parametrize(
    "params",
    [{"limit": 501}, {"limit": 0}, {"offset": -1}, {"min_memory_gib": -1}, {"arch": "sparc"}, {"family": ["r8g"] * 51}],
)
def test_absurd_listing_parameters_are_refused(client, params):
    body = assert_error(client.get("/v1/instances", params=params), 422)
    assert body["errors"][0]["loc"][0] == "query"


def test_unknown_family_suggests_close_ones(client):
    body = assert_error(client.get("/v1/instances", params={"family": "g4dx"}), 404)
    assert "g4dn" in body["suggestions"]


def test_one_instance_type(client, catalog):
    response = client.get("/v1/instances/g4dn.xlarge")
    assert response.json() == catalog.instance("g4dn.xlarge").model_dump(mode="json")
    assert response.headers[SNAPSHOT_HEADER] == catalog.sha256


def test_unknown_instance_type_is_404_with_suggestions(client):
    body = assert_error(client.get("/v1/instances/g4dn.xlarg"), 404)
    assert body["suggestions"][0] == "g4dn.xlarge"
    assert "g4dn.xlarg" in body["detail"]


# -------------------------------------------------------------------------------------- datasets


def test_datasets_are_the_builtin_profiles(client):
    body = client.get("/v1/datasets").json()
    assert body == [p.model_dump(mode="json") for p in BUILTIN.values()]
    assert client.get("/v1/datasets/PAPERS100m").json() == BUILTIN["papers100M"].model_dump(mode="json")


def test_unknown_dataset_is_404_with_suggestions(client):
    body = assert_error(client.get("/v1/datasets/paper100M"), 404)
    assert body["suggestions"] == ["papers100M"]


# ------------------------------------------------------------------------------------- estimates


def test_estimate_is_what_the_planner_computes(client):
    payload = {
        "dataset": "papers100M",
        "learner": "g4dn.xlarge",
        "memory": "r8g.2xlarge",
        "memory_count": 2,
        "workload": {"epochs": 5},
    }
    response = client.post("/v1/estimates", json=payload)
    assert response.status_code == 200, response.text
    got = Estimate.model_validate_json(response.content)
    expected = estimate(
        EstimateRequest(**payload), today=got.snapshot.retrieved_on + dt.timedelta(got.snapshot.age_days)
    )
    assert response.content == expected.model_dump_json().encode()
    assert got.feasible and got.plan.memory.count == 2 and got.plan.total_usd > 0
    assert set(got.plan.stages) == {"volume", "cpu", "network", "gpu"}


def test_an_estimate_that_cannot_run_is_an_answer(client):
    # papers100M's structure (~29 GB) does not fit an 8 GiB memory machine.
    response = client.post(
        "/v1/estimates", json={"dataset": "papers100M", "learner": "g4dn.xlarge", "memory": "r8g.medium"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["feasible"] is False and "RAM" in body["reason"]
    assert body["unrunnable"] == {"code": 3, "description": body["reason"]}  # Unrunnable.STRUCTURE_EXCEEDS_RAM


@pytest.mark.parametrize(
    ("payload", "status", "words"),
    [
        ({"learner": "r8g.2xlarge"}, 422, "has no GPU"),
        ({"learner": "g4dn.xlarge", "memory": "g5.xlarge"}, 422, "has a GPU"),
        ({"learner": "g4dn.xlarge", "memory": "r8g.2xlarg"}, 404, "r8g.2xlarge"),
        ({"learner": "g4dn.xlarge", "volume_throughput_mbps": 1000}, 422, "0.25 MB/s per provisioned IOPS"),
    ],
)
def test_estimate_errors(client, payload, status, words):
    body = assert_error(client.post("/v1/estimates", json={"dataset": "papers100M", **payload}), status)
    assert words in body["detail"] + " ".join(body["suggestions"])


def test_estimate_needs_a_cuda_learner(client, catalog):
    # Without a known throughput the models price nothing: refused like a learner without a GPU.
    other = [
        i.name for i in catalog.snapshot.instances if i.has_gpu and i.gpu_model not in DEFAULT_COEFFICIENTS.gpu_tflops
    ]
    assert other  # the catalog describes AMD, Gaudi, ... GPU types
    body = assert_error(client.post("/v1/estimates", json={"dataset": "arxiv", "learner": other[0]}), 422)
    assert "CUDA" in body["detail"]


def test_estimate_of_a_type_without_price_is_refused(client, catalog):
    unpriced = [
        i.name
        for i in catalog.snapshot.instances
        if i.has_gpu and i.gpu_model in DEFAULT_COEFFICIENTS.gpu_tflops and i.ondemand_usd_per_hour is None
    ]
    if not unpriced:
        pytest.skip("every CUDA type of this snapshot has a price")
    body = assert_error(client.post("/v1/estimates", json={"dataset": "arxiv", "learner": unpriced[0]}), 422)
    assert "no on-demand price" in body["detail"]


# ------------------------------------------------------------------------------- recommendations


def test_recommendation_is_what_the_planner_computes(client, fresh_cache):
    response = client.post("/v1/recommendations", json=plan_body())
    assert response.status_code == 200, response.text
    rec = Recommendation.model_validate_json(response.content)
    today = rec.snapshot.retrieved_on + dt.timedelta(rec.snapshot.age_days)
    assert response.content == recommend(PlanRequest(**plan_body()), today=today).model_dump_json().encode()
    assert rec.feasible and rec.chosen and rec.single_machine and rec.frontier and len(rec.alternatives) == 10
    assert rec.snapshot.sha256 == response.headers[SNAPSHOT_HEADER]


def test_same_request_same_bytes(client, fresh_cache):
    first = client.post("/v1/recommendations", json=plan_body())
    again = client.post("/v1/recommendations", json=plan_body())
    assert first.content == again.content and fresh_cache.hits == 1
    # Key order and whitespace do not matter: the cache key is the canonical request.
    reordered = json.dumps(dict(reversed(list(plan_body().items()))), indent=3)
    third = client.post("/v1/recommendations", content=reordered, headers={"content-type": "application/json"})
    assert third.content == first.content and fresh_cache.hits == 2
    fresh_cache.clear()  # and computed afresh, the bytes are the same
    assert client.post("/v1/recommendations", json=plan_body()).content == first.content


def test_infeasible_budget_is_a_normal_answer(client):
    response = client.post("/v1/recommendations", json=plan_body(constraints={"budget_usd": 0.01}))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["feasible"] is False and body["chosen"] is None
    assert body["cheapest_feasible_usd"] > 0.01
    assert "budget" in body["reason"]
    infeasibility = body["infeasibility"]
    assert infeasibility["code"] == "budget" and infeasibility["binding"] == "constraints.budget_usd"
    budget = infeasibility["advice"][0]
    assert budget["field"] == "constraints.budget_usd" and budget["change"] == "at_least"
    assert budget["value"] >= body["cheapest_feasible_usd"] and budget["plan"] in body["reason"]
    assert infeasibility["detail"].startswith("Raise constraints.budget_usd to at least")


@pytest.mark.parametrize(
    ("body", "code", "fields"),
    [
        (
            plan_body(constraints={"budget_usd": 1000, "deadline_hours": 0.001}),
            "deadline",
            ["constraints.deadline_hours"],
        ),
        (
            plan_body(constraints={"budget_usd": 50, "max_hourly_usd": 0.3}),
            "max_hourly",
            ["constraints.max_hourly_usd"],
        ),
        (
            plan_body(constraints={"budget_usd": 0.01, "max_hourly_usd": 0.01}),
            "all_constraints",
            ["constraints.budget_usd", "constraints.max_hourly_usd"],
        ),
        (
            plan_body(dataset="mag240m", filters={"max_memory_gib": 16}),
            "no_candidate",
            [
                "filters.max_memory_gib",
                "filters.memory_families",
                "filters.arch",
                "workload.batch_size",
                "workload.fanouts",
            ],
        ),
    ],
)
def test_infeasible_answers_name_request_fields_never_cli_options(client, body, code, fields):
    response = client.post("/v1/recommendations", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    infeasibility = answer["infeasibility"]
    assert answer["feasible"] is False and infeasibility["code"] == code
    assert [a["field"] for a in infeasibility["advice"]] == fields
    assert all(field in infeasibility["detail"] for field in fields)
    assert "--" not in answer["reason"] + json.dumps(infeasibility)


@pytest.mark.parametrize(
    ("change", "loc"),
    [
        ({"constraints": {"budget_usd": -5}}, ["body", "constraints", "budget_usd"]),
        ({"workload": {"epochs": 10**9}}, ["body", "workload", "epochs"]),
        ({"workload": {"gpu_cache_gib": -1}}, ["body", "workload", "gpu_cache_gib"]),
        ({"workload": {"gpu_cache_gib": "lots"}}, ["body", "workload", "gpu_cache_gib"]),
        ({"workload": {"sampling": "both"}}, ["body", "workload", "sampling"]),
        ({"workload": {"shard_layout": "rows"}}, ["body", "workload", "shard_layout"]),
        ({"filters": {"exclude": ["g4dn.xlarge"] * 5000}}, ["body", "filters", "exclude"]),
        ({"top": 10**6}, ["body", "top"]),
        ({"model": "magic"}, ["body", "model"]),
        ({"surprise": 1}, ["body", "surprise"]),
    ],
)
def test_bad_input_is_422_naming_the_field(client, change, loc):
    body = assert_error(client.post("/v1/recommendations", json=plan_body(**change)), 422)
    assert body["errors"][0]["loc"] == loc
    assert body["errors"][0]["msg"] and ".".join(loc) in body["detail"]


def test_absurd_profile_sizes_are_422_not_500(client):
    # An unbounded integer once reached numpy and overflowed; every size in a profile is bounded.
    profile = BUILTIN["arxiv"].model_dump(mode="json") | {"structure_bytes": 10**400}
    body = assert_error(client.post("/v1/recommendations", json={"profile": profile}), 422)
    assert body["errors"][0]["loc"] == ["body", "profile", "structure_bytes"]


def test_dataset_and_profile_are_exclusive(client):
    body = assert_error(client.post("/v1/recommendations", json=plan_body(profile=BUILTIN["arxiv"].model_dump())), 422)
    assert "exactly one of dataset" in body["detail"]


def test_inline_profile_is_accepted(client):
    profile = BUILTIN["arxiv"].model_dump(mode="json") | {"name": "my-graph"}
    body = {"profile": profile, "filters": SMALL_FILTERS, "constraints": {"budget_usd": 5}}
    response = client.post("/v1/recommendations", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["profile"]["name"] == "my-graph" and response.json()["feasible"]


def test_unknown_names_in_a_plan_request_are_404(client):
    body = assert_error(client.post("/v1/recommendations", json=plan_body(dataset="paper100M")), 404)
    assert body["suggestions"] == ["papers100M"]
    body = assert_error(client.post("/v1/recommendations", json=plan_body(filters={"gpu_families": ["g4dx"]})), 404)
    assert "g4dn" in body["suggestions"]
    body = assert_error(client.post("/v1/recommendations", json=plan_body(filters={"gpu_families": ["r8g"]})), 422)
    assert "no GPU" in body["detail"]


def test_a_dataset_named_in_any_case_gets_the_same_plan_id(client, fresh_cache):
    answers = [
        client.post("/v1/recommendations", json=plan_body(dataset=name)) for name in ("papers100M", "papers100m")
    ]
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    (first, second) = (a.json() for a in answers)
    assert first["plan_id"] == second["plan_id"] and second["request"]["dataset"] == "papers100M"
    assert first == second  # one request, so one cached answer
    body = {"dataset": "PRODUCTS", "learner": "g5.xlarge"}
    estimated = client.post("/v1/estimates", json=body)
    assert estimated.status_code == 200 and estimated.json()["request"]["dataset"] == "products"


def test_text_json_cannot_carry_back_is_refused(client):
    raw = json.dumps(plan_body(dataset="papers100M\ud800"))  # a lone surrogate: valid JSON, not valid Unicode
    response = client.post("/v1/recommendations", content=raw, headers={"content-type": "application/json"})
    assert_error(response, 422)


@pytest.mark.parametrize("raw", [b'{"dataset": ', b"\xff\xfe", b"[]", b"null"])
def test_malformed_json_is_422(client, raw):
    response = client.post("/v1/recommendations", content=raw, headers={"content-type": "application/json"})
    assert_error(response, 422)


# ------------------------------------------------------------------------------------- size limit


def test_a_body_over_the_limit_is_413(client):
    big = json.dumps(plan_body(filters={"exclude": ["x" * 1000] * 1000})).encode()  # ~1 MB
    assert len(big) > MAX_BODY_BYTES
    body = assert_error(
        client.post("/v1/recommendations", content=big, headers={"content-type": "application/json"}), 413
    )
    assert "limit" in body["detail"]


def test_a_streamed_body_is_cut_off_at_the_limit(client):
    def chunks():  # no Content-Length: the limit is enforced while reading
        for _ in range(64):
            yield b" " * 16384

    response = client.post("/v1/estimates", content=chunks(), headers={"content-type": "application/json"})
    assert "content-length" not in {k.lower() for k in response.request.headers}
    assert_error(response, 413)


def test_a_body_under_the_limit_is_read_whole(client):
    payload = json.dumps({"dataset": "arxiv", "learner": "g4dn.xlarge"}).encode()

    def chunks():
        for i in range(0, len(payload), 7):
            yield payload[i : i + 7]

    response = client.post("/v1/estimates", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text


# --------------------------------------------------------------------------------------- service


def test_a_broken_snapshot_is_503_not_500(client, monkeypatch, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    monkeypatch.setenv("MEMORYBRIDGE_SNAPSHOT", str(broken))
    body = assert_error(client.get("/healthz"), 503)
    assert "not a valid snapshot" in body["detail"]
    assert_error(client.post("/v1/recommendations", json=plan_body()), 503)


def test_unknown_route_and_method_have_the_error_shape(client):
    assert_error(client.get("/v1/nothing"), 404)
    response = client.get("/v1/recommendations")
    assert_error(response, 405)
    assert response.headers["allow"] == "POST"


def test_openapi_declares_every_error_with_one_model(client):
    spec = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    error_ref = "#/components/schemas/ErrorResponse"
    expected = {
        ("get", "/healthz"): {"200", "503"},
        ("get", "/v1/instances"): {"200", "404", "422", "503"},
        ("get", "/v1/instances/{instance_type}"): {"200", "404", "422", "503"},
        ("get", "/v1/families"): {"200", "503"},
        ("get", "/v1/datasets"): {"200"},
        ("get", "/v1/datasets/{name}"): {"200", "404", "422"},
        ("post", "/v1/estimates"): {"200", "404", "413", "422", "503"},
        ("post", "/v1/recommendations"): {"200", "404", "413", "422", "503"},
        ("get", "/v1/pricing"): {"200", "503"},
    }
    found = {(method, path): set(op["responses"]) for path, ops in spec["paths"].items() for method, op in ops.items()}
    assert found == expected
    for (method, path), codes in expected.items():
        responses = spec["paths"][path][method]["responses"]
        assert (
            "$ref" in json.dumps(responses["200"]["content"]["application/json"]["schema"])
            or responses["200"]["content"]["application/json"]["schema"].get("type") == "array"
        )
        for code in codes - {"200"}:
            assert responses[code]["content"]["application/json"]["schema"] == {"$ref": error_ref}
    assert (
        spec["paths"]["/v1/recommendations"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        == "#/components/schemas/PlanRequest"
    )


def test_response_cache_is_bounded():
    cache = ResponseCache(max_entries=3, max_bytes=10)
    for key in "abc":
        cache.put(key, b"12")
    assert cache.get("a") == b"12"  # a is now the most recent
    cache.put("d", b"12")
    assert cache.get("b") is None and len(cache) == 3  # b was least recently used
    cache.put("e", b"123456")
    assert cache.size_bytes <= 10 and cache.get("e") == b"123456"
    cache.put("huge", b"x" * 11)
    assert cache.get("huge") is None


# --------------------------------------------------------------- learner cache, wire, pinned volumes


def test_recommendations_take_the_data_path_and_volume_fields(client, fresh_cache):
    body = plan_body(
        workload={"learner_cache": 12, "wire_dtype": "bfloat16"},
        filters={**SMALL_FILTERS, "max_memory_gib": 64, "volume_mbps": 125, "volume_iops": 3000},
    )
    response = client.post("/v1/recommendations", json=body)
    assert response.status_code == 200, response.text
    rec = Recommendation.model_validate_json(response.content)
    today = rec.snapshot.retrieved_on + dt.timedelta(rec.snapshot.age_days)
    assert response.content == recommend(PlanRequest(**body), today=today).model_dump_json().encode()
    assert rec.request.workload.learner_cache == 12.0 and rec.request.filters.volume_mbps == 125
    for plan in [rec.chosen, *rec.alternatives]:
        assert (plan.volume.throughput_mbps, plan.volume.iops) == (125, 3000)
        if plan.layout == "two-level":
            assert plan.data_path.learner_cache_gib == pytest.approx(12.0)
            assert plan.data_path.wire_dtype == "bfloat16"


def test_estimates_take_the_data_path_fields(client):
    payload = {
        "dataset": "papers100M",
        "learner": "g6e.4xlarge",
        "memory": "r6in.2xlarge",
        "memory_count": 2,
        "workload": {"learner_cache": "auto", "wire_dtype": "float16"},
    }
    response = client.post("/v1/estimates", json=payload)
    assert response.status_code == 200, response.text
    path = Estimate.model_validate_json(response.content).plan.data_path
    assert path.learner_cache_gib > 0 and path.wire_dtype == "float16"
    # A learner cache larger than the learner's free RAM: an answer saying why, as for any unrunnable cluster.
    too_big = client.post("/v1/estimates", json={**payload, "workload": {"learner_cache": 200}}).json()
    assert too_big["feasible"] is False and too_big["unrunnable"]["code"] == 7


@pytest.mark.parametrize(
    ("path", "body", "loc"),
    [
        ("/v1/recommendations", plan_body(workload={"learner_cache": "lots"}), ["body", "workload", "learner_cache"]),
        ("/v1/recommendations", plan_body(workload={"learner_cache": 0}), ["body", "workload", "learner_cache"]),
        ("/v1/recommendations", plan_body(workload={"wire_dtype": "int8"}), ["body", "workload", "wire_dtype"]),
        ("/v1/recommendations", plan_body(filters={"volume_mbps": 2000}), ["body", "filters", "volume_mbps"]),
        (
            "/v1/recommendations",
            plan_body(filters={"volume_mbps": 1000, "volume_iops": 3000}),
            ["body", "filters", "volume_mbps"],
        ),
        ("/v1/recommendations", plan_body(filters={"max_memory_nodes": 17}), ["body", "filters", "max_memory_nodes"]),
        (
            "/v1/estimates",
            {"dataset": "arxiv", "learner": "g4dn.xlarge", "workload": {"learner_cache": -2}},
            ["body", "workload", "learner_cache"],
        ),
    ],
)
def test_bad_data_path_and_volume_fields_are_422_naming_the_field(client, path, body, loc):
    errors = assert_error(client.post(path, json=body), 422)["errors"]
    assert [e["loc"] for e in errors] == [loc]


def test_full_graph_methods_are_priced_over_rest_as_in_process(client):
    body = {"dataset": "arxiv", "method": "retexo", "full_graph": {"workers": 4, "workers_in": "zones"}}
    response = client.post("/v1/recommendations", json=body)
    assert response.status_code == 200, response.text
    answer = Recommendation.model_validate(response.json())
    assert answer.chosen and answer.chosen.full_graph and answer.chosen.full_graph.workers == 4
    in_process = recommend(PlanRequest.model_validate(body))
    assert answer.chosen == in_process.chosen


def test_slicegcn_is_priced_over_rest_as_in_process(client):
    body = {"dataset": "papers100M", "method": "slicegcn", "full_graph": {"workers": 4, "feature_fusion": True}}
    response = client.post("/v1/recommendations", json=body)
    assert response.status_code == 200, response.text
    answer = Recommendation.model_validate(response.json())
    assert answer.chosen and answer.chosen.full_graph and answer.chosen.full_graph.method == "slicegcn"
    assert answer.request.full_graph.gnn == "gcn" and answer.chosen.full_graph.workers == 4
    assert answer.chosen == recommend(PlanRequest.model_validate(body)).chosen
    refused = client.post("/v1/recommendations", json={**body, "method": "retexo"})
    assert refused.status_code == 422 and "feature fusion applies to method slicegcn only" in refused.text


def test_full_graph_errors_name_the_request_field(client):
    unlabelled = assert_error(
        client.post("/v1/recommendations", json={"dataset": "friendster", "method": "standard"}), 422
    )
    assert "full_graph.classes" in unlabelled["detail"]
    no_workers = client.post(
        "/v1/recommendations", json={"dataset": "arxiv", "method": "retexo", "full_graph": {"boundary_rows": 5}}
    )
    assert no_workers.status_code == 422 and "workers" in no_workers.text


def test_an_estimate_whose_gpu_cache_does_not_fit_the_card_names_it(client):
    # A10G: 24 GB; 30 GiB of rows cannot sit beside the model and the batches.
    body = {"dataset": "papers100M", "learner": "g5.8xlarge", "workload": {"gpu_cache_gib": 30}}
    answer = client.post("/v1/estimates", json=body).json()
    assert answer["feasible"] is False and answer["unrunnable"]["code"] == 11  # GPU_CACHE_EXCEEDS_GPU
    assert "GPU cache" in answer["reason"] and answer["request"]["workload"]["gpu_cache_gib"] == 30


def test_an_estimate_whose_learner_cannot_hold_the_csc_cannot_sample_there(client):
    # g4dn.xlarge: 16 GiB, about 3 GiB free after the reserves and the batches; papers100M's CSC is 6.9 GiB.
    body = {"dataset": "papers100M", "learner": "g4dn.xlarge", "memory": "r6in.2xlarge", "memory_count": 1}
    refused = client.post("/v1/estimates", json={**body, "workload": {"sampling": "learner"}}).json()
    assert refused["feasible"] is False and refused["unrunnable"]["code"] == 12  # CSC_EXCEEDS_LEARNER_RAM
    assert "CSC" in refused["reason"]
    auto = client.post("/v1/estimates", json={**body, "workload": {"sampling": "auto"}}).json()
    assert auto["feasible"] is True and auto["plan"]["data_path"]["sampling"] == "memory"


def test_an_estimate_says_what_each_memory_machine_reads_at_start_up_and_copies_at_staging(client):
    body = {"dataset": "papers100M", "learner": "g4dn.4xlarge", "memory": "r6in.2xlarge", "memory_count": 2}
    answers = {
        layout: client.post("/v1/estimates", json={**body, "workload": {"shard_layout": layout}}).json()
        for layout in ("striped", "modulo")
    }
    striped, modulo = (answers[layout]["plan"] for layout in ("striped", "modulo"))
    assert answers["striped"]["request"]["workload"]["shard_layout"] == "striped"
    assert striped["data_path"]["shard_layout"] == "striped" and modulo["data_path"]["shard_layout"] == "modulo"
    profile = answers["striped"]["profile"]
    half = (profile["structure_bytes"] + profile["feature_rows"] * profile["feature_dim"] * 4 / 2) / 1e9
    assert striped["data_path"]["staged_gb_per_machine"] == pytest.approx(half, abs=0.07)
    assert 0 < striped["data_path"]["startup_read_gb_per_machine"] <= striped["data_path"]["staged_gb_per_machine"]
    assert modulo["data_path"]["startup_read_gb_per_machine"] > striped["data_path"]["startup_read_gb_per_machine"]
    assert modulo["startup_seconds"] > striped["startup_seconds"]
    default = client.post("/v1/estimates", json=body).json()
    assert default["request"]["workload"]["shard_layout"] == "striped" and default["plan"] == striped
