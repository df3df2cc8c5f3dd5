"""The on-disk dataset format: a directory of .npy files described by a checksummed meta.json."""

from contracts.dataset import DatasetMeta
from remotegnn.store.graph import KEEP_AS_GIVEN, EdgePolicy, EdgeReport
from remotegnn.store.reader import Compressed, GraphDataset
from remotegnn.store.writer import DatasetWriter

__all__ = ["KEEP_AS_GIVEN", "Compressed", "DatasetMeta", "DatasetWriter", "EdgePolicy", "EdgeReport", "GraphDataset"]
