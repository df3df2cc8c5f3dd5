"""GPU training-step measurements (``memorybridge.gpu-steps`` v1): what ``benchmarks/gpu_steps.py``
writes on a GPU machine and `planner calibrate` fits a GPU's step rate from.

Each measurement is one GraphSAGE shape (fanouts, batch size, hidden width, precision) trained on
batches drawn through ``DistributedGraphLoader`` and already on the GPU, so the step time is the
forward, backward and optimizer step alone: the planner prices the host-to-device copy apart.
The batch's mean nodes and edges per hop are kept so the planner's FLOP count of that very shape
can be set against the seconds.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, model_validator

from foundation.models import StrictModel

GPU_STEPS_KIND: Final = "memorybridge.gpu-steps"
Precision = Literal["float32", "bfloat16", "float16"]
StepForm = Literal["blocks", "trimmed", "whole"]
"""How a step's layers run on a batch: ``blocks`` (layer i reads the hops it needs and computes only
the rows the next layer reads, ``remotegnn.blocks.seed_forward``), ``trimmed`` (PyG's
``trim_to_layer``: layer i skips the last i hops but computes a row for every input node) or
``whole`` (every layer on the whole batch)."""


class GpuStep(StrictModel):
    """One batch shape's training steps on the GPU."""

    fanouts: list[int] = Field(min_length=1)
    batch_size: int = Field(gt=0)
    hidden_dim: int = Field(gt=0)
    precision: Precision = Field(description="float32, or the autocast dtype of mixed precision")
    trimmed: bool = Field(description="layer i skipped the last i hops (PyG's trim_to_layer); false: whole batch")
    form: StepForm | None = Field(
        None, description="blocks, trimmed or whole; None in files from before the blocks form: trimmed says which"
    )
    nodes_per_hop: list[float] = Field(description="mean distinct nodes first reached at hops 0..L")
    edges_per_hop: list[float] = Field(description="mean sampled edges at hops 1..L")
    steps: int = Field(gt=0, description="timed steps (after the warm-up ones)")
    step_s: float = Field(gt=0, description="median seconds of one step (forward, backward, optimizer)")
    step_s_p90: float = Field(gt=0)

    @property
    def step_form(self) -> StepForm:
        if self.form is not None:
            return self.form
        return "trimmed" if self.trimmed else "whole"

    @model_validator(mode="after")
    def _hops_match(self) -> GpuStep:
        hops = len(self.fanouts)
        if len(self.edges_per_hop) != hops or len(self.nodes_per_hop) != hops + 1:
            raise ValueError(
                f"{hops} fanouts need {hops + 1} nodes_per_hop and {hops} edges_per_hop, "
                f"got {len(self.nodes_per_hop)} and {len(self.edges_per_hop)}"
            )
        return self


class GpuStepsFile(StrictModel):
    """Measurements of one GPU."""

    kind: Literal["memorybridge.gpu-steps"] = GPU_STEPS_KIND
    version: Literal[1] = 1
    gpu: str = Field(min_length=1, description="the device's name as CUDA reports it")
    gpu_key: str | None = Field(
        description="its key in the coefficients' gpu_tflops (H100, L4, ...); None when the planner knows no such GPU"
    )
    torch: str
    feature_dim: int = Field(gt=0)
    classes: int = Field(gt=0)
    command: str = Field(description="the command that measured it")
    measurements: list[GpuStep] = Field(min_length=1)
