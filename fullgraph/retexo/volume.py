"""Eq. 2's terms (``contracts.datavolume``) counted on a real partition and real modules.

``fullgraph retexo volume`` prints the volumes before training, and training reports the measured
volumes beside them.
"""

from __future__ import annotations

from contracts.datavolume import VolumeInputs
from contracts.layerwidths import layer_dims
from contracts.partition import PartitionMeta
from foundation.units import FLOAT32_BYTES
from fullgraph.retexo.config import ModelName
from fullgraph.retexo.models import build_heads, build_layers, parameter_count


def volume_inputs(
    meta: PartitionMeta, model: ModelName, *, hidden: int, layers: int, heads: int, rounds: int
) -> VolumeInputs:
    """Eq. 2's terms for training ``model`` on the partition ``meta`` (parameters counted on the
    real modules, so GAT's attention vectors and every bias are in M)."""
    dims = layer_dims(meta.feature_dim, hidden, meta.num_classes, layers)
    return VolumeInputs(
        workers=meta.parts,
        boundary_rows=meta.boundary_rows,
        feature_bytes=meta.feature_dim * FLOAT32_BYTES,
        hidden_bytes=[d * FLOAT32_BYTES for d in dims[1:-1]],
        model_bytes=parameter_count(build_layers(model, dims, heads)) * FLOAT32_BYTES,
        classifier_bytes=[parameter_count(h) * FLOAT32_BYTES for h in build_heads(dims)],
        rounds=rounds,
    )
