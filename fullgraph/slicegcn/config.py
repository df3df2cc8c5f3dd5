"""How to train SliceGCN (``SliceConfig``): what `fullgraph slicegcn train` takes and every rank is told.

Kept apart from the training code so the command line reads its defaults and help without loading torch.
"""

from __future__ import annotations

from pydantic import Field

from foundation.models import StrictModel


class SliceConfig(StrictModel):
    """How to train. Defaults are the paper's Table II setting for Tolokers."""

    parts: int = Field(2, ge=1, le=64, description="p: column slices, one rank (memory machine) each")
    epochs: int = Field(500, ge=1, le=100_000, description="full-batch epochs")
    hidden: int = Field(128, ge=1, le=65_536, description="the model's total width; each slice gets ceil(hidden/p)")
    layers: int = Field(4, ge=1, le=16, description="L: layers of each slice's GCN")
    lr: float = Field(1e-3, gt=0, le=10, description="Adam's learning rate (cosine annealing over the epochs)")
    dropout: float = Field(0.5, ge=0, lt=1, description="dropout between layers and in the classifier")
    weight_decay: float = Field(0.0, ge=0, description="Adam's weight decay")
    encoding: bool = Field(False, description="slice encoding (the paper's -SE)")
    fusion: bool = Field(False, description="feature fusion (the paper's -FF)")
    seed: int = Field(0, ge=0, description="initial weights and dropout")

    @property
    def variant(self) -> str:
        """The paper's name for this configuration."""
        if self.parts == 1 and not (self.encoding or self.fusion):
            return "GCN"
        suffix = ("FF" if self.fusion else "") + ("SE" if self.encoding else "")
        return "SliceGCN" + (f"-{suffix}" if suffix else "")
