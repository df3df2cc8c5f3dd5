"""Converters from public graph formats into the RemoteGNN dataset format (``remotegnn convert``).

One module per source format, each reading its source, checking sizes and ids against each
other, and writing through ``_common.write_dataset`` (one edge policy, atomic output). The PyG
converter lives in ``remotegnn.convert.pyg`` and is not imported here, so the other formats
work without torch.
"""

from remotegnn.convert._common import ConvertResult, ConvertWarning, PolicyOverrides
from remotegnn.convert.edgelist import from_edgelist
from remotegnn.convert.igb import from_igb
from remotegnn.convert.mag240m import from_mag240m
from remotegnn.convert.musae import from_musae
from remotegnn.convert.npz import from_npz
from remotegnn.convert.ogb import from_ogb
from remotegnn.convert.planetoid import from_planetoid

__all__ = [
    "ConvertResult",
    "ConvertWarning",
    "PolicyOverrides",
    "from_edgelist",
    "from_igb",
    "from_mag240m",
    "from_musae",
    "from_npz",
    "from_ogb",
    "from_planetoid",
]
