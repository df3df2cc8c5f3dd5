"""How to train on a partition (``TrainConfig``): what `fullgraph retexo train` takes and every rank is told.

Kept apart from the training code so the command line reads its defaults and help without loading torch.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, model_validator

from foundation.models import StrictModel

Method = Literal["standard", "retexo"]
ModelName = Literal["gcn", "sage", "gat"]
# Models whose neighbour aggregate does not depend on the layer's weights (see GraphLayer.aggregate).
WEIGHT_FREE_AGGREGATE: Final[frozenset[ModelName]] = frozenset({"gcn", "sage"})


class TrainConfig(StrictModel):
    """How to train. Defaults are the RETEXO paper's for its small graphs (Appendix B.1)."""

    method: Method = Field("retexo", description="retexo (lazy message passing, layer by layer) or standard")
    model: ModelName = Field("gcn", description="gcn, sage (GraphSAGE, mean) or gat")
    layers: int = Field(2, ge=1, le=8, description="K, message-passing layers")
    hidden: int = Field(256, ge=1, le=65536, description="hidden width (GAT: all heads together)")
    heads: int = Field(4, ge=1, le=64, description="GAT's heads on hidden layers")
    rounds: int = Field(100, ge=1, le=100_000, description="R: rounds (RETEXO: per layer; with patience, the most)")
    patience: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="stop a stage (RETEXO: a layer) once validation accuracy has not improved for this many rounds; "
        "none: run every round",
    )
    min_rounds: int = Field(
        0,
        ge=0,
        le=100_000,
        description="rounds a stage runs before patience may stop it (a layer whose accuracy sits on a plateau "
        "early on is not converged)",
    )
    lr: float = Field(0.003, gt=0, le=10, description="Adam's learning rate")
    dropout: float = Field(0.3, ge=0, lt=1, description="dropout on every layer's input")
    weight_decay: float = Field(0.0, ge=0, description="Adam's weight decay")
    normalize: bool = Field(
        False, description="scale each hidden layer's output rows to unit L2 norm (both procedures; per row)"
    )
    aggregate_cache: bool = Field(
        True,
        description="RETEXO with GCN or GraphSAGE: compute each frozen layer input's neighbour aggregate once "
        "and reuse it every round where no dropout touches it (GCN's results then differ by float rounding)",
    )
    seed: int = Field(0, ge=0, description="initial weights, dropout and the random split")
    split: Literal["dataset", "random"] = Field(
        "dataset", description="the dataset's splits, or a random split of the whole graph drawn from the seed"
    )
    train_fraction: float = Field(0.2, gt=0, lt=1, description="with --split random: share of nodes in train")
    val_fraction: float = Field(0.1, gt=0, lt=1, description="with --split random: share of nodes in val")

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if self.model == "gat" and self.layers > 1 and self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads}) for GAT")
        if self.min_rounds > self.rounds:
            raise ValueError(f"min_rounds ({self.min_rounds}) cannot exceed rounds ({self.rounds}), the most")
        if self.train_fraction + self.val_fraction >= 1:
            raise ValueError("train_fraction + val_fraction must leave nodes for test")
        return self

    @property
    def caches_aggregates(self) -> bool:
        """Whether workers reuse frozen inputs' neighbour aggregates (RETEXO, GCN or GraphSAGE)."""
        return self.aggregate_cache and self.method == "retexo" and self.model in WEIGHT_FREE_AGGREGATE
