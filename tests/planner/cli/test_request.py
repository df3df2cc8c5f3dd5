"""`planner recommend`'s options reach the PlanRequest by their names: each model's fields from the
options named after them (or FLAG_FOR_FIELD's), the list options parsed, the stand-in options
replaced."""

from __future__ import annotations

import typer.main

from planner.cli.main import app
from planner.cli.request import plan_request


def _options(**given) -> dict:
    """recommend's options at their defaults, as typer passes them, with ``given`` set."""
    command = typer.main.get_command(app).commands["recommend"]
    return {param.name: param.default for param in command.params} | given


def test_every_model_takes_its_fields_from_the_options_named_after_them():
    request = plan_request(
        _options(
            dataset="papers100M",
            epochs=7,
            fanouts="10, 5",
            learner_machines=2,
            budget=3.5,
            deadline=2.0,
            max_hourly=1.5,
            gpu_families="g5, g4dn",
            exclude="g5.xlarge",
            volume="gp3:250:4000",
            top=3,
            spot=True,
        )
    )
    assert (request.workload.epochs, request.workload.fanouts, request.workload.learner_machines) == (7, [10, 5], 2)
    assert request.constraints.model_dump() == {"budget_usd": 3.5, "deadline_hours": 2.0, "max_hourly_usd": 1.5}
    assert request.filters.gpu_families == ["g5", "g4dn"] and request.filters.exclude == ["g5.xlarge"]
    assert (request.filters.volume_mbps, request.filters.volume_iops) == (250, 4000)
    assert request.top == 3 and request.spot and request.method == "sampled"


def test_full_graph_options_reach_the_job_and_slicegcn_keeps_its_own_gnn():
    retexo = plan_request(_options(dataset="papers100M", method="retexo", workers=4, rounds=50, gnn="gat"))
    assert (retexo.full_graph.workers, retexo.full_graph.rounds, retexo.full_graph.gnn) == (4, 50, "gat")
    slicegcn = plan_request(_options(dataset="papers100M", method="slicegcn"))
    assert slicegcn.full_graph.gnn == "gcn"
