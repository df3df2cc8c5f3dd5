"""The memory server: sampling and feature loading in worker processes, batches as wire frames."""

from remotegnn.server.options import PipelineOptions, ServerOptions
from remotegnn.server.pipeline import LocalPipeline, PipelineError

__all__ = [
    "LocalPipeline",
    "PipelineError",
    "PipelineOptions",
    "ServerOptions",
]
