"""The RETEXO paper's data-volume model (Appendix A.1, Eq. 2): bytes of standard and lazy training.

Data volume is what all workers send plus what they receive (the paper's convention: a row
between two workers counts twice, a message between a worker and the master once). With B the
halo rows summed over workers (each exchange moves every halo row once), H_0 the feature row's
bytes, H_m (m = 1..K-1) the hidden rows' bytes, M the model's bytes, C_m the temporary
classifiers' bytes and R the rounds (per layer for RETEXO):

    standard: message passing 2 B H_0 + 4 R B sum(H_m)   (features once, then every round a
              forward and a backward exchange per hidden layer); aggregation 2 n R M
    lazy:     message passing 2 B H_0 + 2 B sum(H_m)     (one exchange per layer);
              aggregation 2 n R (M + sum(C_m))
    gamma = standard / lazy

which is the paper's Eq. 2 with its n B (n workers of B halo rows each) replaced by the exact
sum over a partition. Shared by RemoteGNN (``fullgraph retexo volume`` and training, which count
the terms on a real partition and real modules) and the planner (which estimates them), so both
compute the same volumes from the same terms. It imports nothing of either.
"""

from __future__ import annotations

from pydantic import Field

from foundation.models import StrictModel


class VolumeInputs(StrictModel):
    """The terms of Eq. 2, in bytes."""

    workers: int = Field(ge=1, description="n")
    boundary_rows: int = Field(ge=0, description="B summed over workers: halo rows one exchange moves")
    feature_bytes: int = Field(ge=0, description="H_0: one feature row on the wire")
    hidden_bytes: list[int] = Field(description="H_1 .. H_{K-1}: one hidden representation row")
    model_bytes: int = Field(ge=0, description="M: every layer's parameters")
    classifier_bytes: list[int] = Field(description="C_1 .. C_{K-1}: RETEXO's temporary classifiers")
    rounds: int = Field(ge=1, description="R: rounds of standard training, and per layer of RETEXO")


class MethodVolume(StrictModel):
    message_passing: int = Field(description="bytes between workers: features, representations, their gradients")
    aggregation: int = Field(description="bytes between workers and master: gradients up, weights down")

    @property
    def total(self) -> int:
        return self.message_passing + self.aggregation


class DataVolume(StrictModel):
    """Predicted data volume of both procedures, and their ratio gamma."""

    inputs: VolumeInputs
    standard: MethodVolume
    lazy: MethodVolume
    gamma: float = Field(description="standard total / lazy total (Eq. 2)")


def data_volume(inputs: VolumeInputs) -> DataVolume:
    b, r, n = inputs.boundary_rows, inputs.rounds, inputs.workers
    hidden = sum(inputs.hidden_bytes)
    features = 2 * b * inputs.feature_bytes
    standard = MethodVolume(message_passing=features + 4 * r * b * hidden, aggregation=2 * n * r * inputs.model_bytes)
    lazy = MethodVolume(
        message_passing=features + 2 * b * hidden,
        aggregation=2 * n * r * (inputs.model_bytes + sum(inputs.classifier_bytes)),
    )
    return DataVolume(inputs=inputs, standard=standard, lazy=lazy, gamma=standard.total / lazy.total)


def gamma_eq2(inputs: VolumeInputs) -> float:
    """Eq. 2 exactly as the paper writes it (with n B as the summed boundary rows)."""
    b, r, m = inputs.boundary_rows / inputs.workers, inputs.rounds, inputs.model_bytes
    h, h0, c = sum(inputs.hidden_bytes), inputs.feature_bytes, sum(inputs.classifier_bytes)
    return (1 + b * (2 * h / m + h0 / (m * r))) / (1 + c / m + b * (h / (m * r) + h0 / (m * r)))
