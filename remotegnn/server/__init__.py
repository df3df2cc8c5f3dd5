"""The memory server: sampling and feature loading in worker processes, batches as wire frames."""

from remotegnn.server.options import PipelineOptions, PipelineStats, ServerOptions, StageStats, VolumeCounters
from remotegnn.server.pipeline import LocalPipeline, PipelineError

__all__ = [
    "LocalPipeline",
    "PipelineError",
    "PipelineOptions",
    "PipelineStats",
    "ServerOptions",
    "StageStats",
    "VolumeCounters",
]
