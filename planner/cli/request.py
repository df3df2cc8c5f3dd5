"""How `planner recommend`'s options become a PlanRequest.

Every option is named after the request field it sets (``planner.wording.FLAG_FOR_FIELD`` lists
the few that are not), so each of the request's models takes its fields from the options by name:
a field gains its option in the command's signature and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from contracts.plan import Constraints, Filters, PlanRequest
from contracts.workload import MAX_WORKERS, FullGraphJob, Workload
from foundation.cli import csv_option, int_list_option, option_name, usage_from_validation
from foundation.errors import UsageError
from planner.wording import FLAG_FOR_FIELD

# What the request's own fields are called among the options (the rest have their field's name).
REQUEST_OPTIONS = ("method", "model", "spot", "ena_express", "solver", "top")


def plan_request(options: Mapping[str, Any]) -> PlanRequest:
    """The request that ``recommend``'s options (by parameter name) describe; an error names the
    option to change."""
    from contracts.profile import load_profile

    given = _replaced(options)
    try:
        profile = load_profile(given["dataset_file"]) if given["dataset_file"] else None
        given |= _parsed(given)
        full_graph = _fields(FullGraphJob, given)
        if full_graph["gnn"] is None:  # slicegcn's default is not the others'
            del full_graph["gnn"]
        return PlanRequest(
            dataset=given["dataset"],
            profile=profile,
            workload=_fields(Workload, given),
            full_graph=full_graph,
            constraints=Constraints(**_fields(Constraints, given)),
            filters=Filters(**_fields(Filters, given)),
            **{name: given[name] for name in REQUEST_OPTIONS},
        )
    except ValidationError as exc:
        # With --volume, its figures' errors name the option the user typed.
        volume = {"volume_mbps": "--volume", "volume_iops": "--volume"} if given["volume"] else {}
        raise usage_from_validation(exc, {**FLAG_FOR_FIELD, **volume}) from None


def volume_option(text: str, flag: str) -> tuple[int, int]:
    """'gp3:125:3000' -> (125, 3000), with an error that names ``flag``; the figures' limits are
    checked where they are used (Filters), so the message names the option of each figure."""
    parts = [part.strip() for part in text.split(":")]
    if len(parts) != 3 or parts[0].lower() != "gp3" or not parts[1].isdigit() or not parts[2].isdigit():
        raise UsageError(
            f"{flag}: {text!r} is not TYPE:MBPS:IOPS with TYPE gp3 (the volume type priced), e.g. gp3:125:3000"
        )
    return int(parts[1]), int(parts[2])


def _replaced(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options, with those that stand for others (--volume, --partition) replaced by those
    others once they are known not to clash."""
    from contracts.partition import PartitionMeta
    from foundation.fileio import read_model

    given = dict(options)
    if (given["dataset"] is None) == (given["dataset_file"] is None):
        raise UsageError("give --dataset NAME or --dataset-file PROFILE.json (one of them)")
    if given["volume"] is not None:
        if given["volume_mbps"] is not None or given["volume_iops"] is not None:
            raise UsageError("give --volume or --volume-mbps/--volume-iops, not both")
        given["volume_mbps"], given["volume_iops"] = volume_option(given["volume"], "--volume")
    if (partition := given["partition"]) is not None:
        if given["workers"] is not None or given["boundary_rows"] is not None:
            raise UsageError("give --partition or --workers/--boundary-rows, not both")
        meta = read_model(partition, PartitionMeta, "partition file")
        if not 2 <= meta.parts <= MAX_WORKERS:
            raise UsageError(
                f"--partition {partition}: {meta.parts} parts; the planner prices 2 to {MAX_WORKERS} workers"
            )
        given["workers"], given["boundary_rows"] = meta.parts, meta.boundary_rows
    return given


def _parsed(given: Mapping[str, Any]) -> dict[str, Any]:
    """The list options as the models take them: '15,10,5' -> [15, 10, 5], 'g4dn, g5' -> ['g4dn', 'g5']."""
    return {
        "fanouts": int_list_option(given["fanouts"], "--fanouts"),
        "gpu_families": csv_option(given["gpu_families"]),
        "memory_families": csv_option(given["memory_families"]),
        "exclude": csv_option(given["exclude"]) or [],
    }


def _fields(model: type[BaseModel], given: Mapping[str, Any]) -> dict[str, Any]:
    """``model``'s fields, each from the option that sets it."""
    return {field: given[option_name(field, FLAG_FOR_FIELD)[2:].replace("-", "_")] for field in model.model_fields}
