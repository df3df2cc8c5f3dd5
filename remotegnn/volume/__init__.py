"""An emulated cloud volume for feature reads that miss the cache (docs/remotegnn.md, section 6).

``FeatureVolume(dataset, VolumeLimits(), emulation="auto").read_rows(nodes, out)`` reads rows
from features.npy on the real disk, paced to gp3's 125 MB/s and 3,000 IOPS at 4 KiB page
granularity; ``detect_emulation(path)`` says what this machine can do and why.
"""

from remotegnn.volume.detect import (
    EMULATIONS,
    Capability,
    Emulation,
    EmulationSupport,
    EmulationUnavailable,
    detect_emulation,
)
from remotegnn.volume.limits import PAGE, VolumeLimits
from remotegnn.volume.volume import FeatureVolume, VolumeStats

__all__ = [
    "EMULATIONS",
    "PAGE",
    "Capability",
    "Emulation",
    "EmulationSupport",
    "EmulationUnavailable",
    "FeatureVolume",
    "VolumeLimits",
    "VolumeStats",
    "detect_emulation",
]
