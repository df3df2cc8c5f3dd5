"""The boot script run on this machine in place of a cluster's: stub ``dnf`` and Python (a venv
whose pip logs what it is asked to install), real bash and sha256sum, every path under a test's
directory. Shared by the boot script's own tests and `provision run`'s boot wait."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contracts.cluster import ShippedWheel
from provisioning.models import DataVolume, NodeSpec, RootVolume
from provisioning.userdata import BootPaths, render

MEMORY = NodeSpec(
    node="memory-0",
    role="memory",
    instance_type="r6in.2xlarge",
    market="on-demand",
    usd_per_hour=0.7,
    arch="x86_64",
    gpus=0,
    slots=1,
    ami="ami-1",
    root_volume=RootVolume(device_name="/dev/xvda", size_gb=8),
    volume=DataVolume(size_gb=52, iops=3000, throughput_mbps=500, usd_per_hour=0.03),
)
LEARNER = MEMORY.model_copy(update={"node": "learner-0", "role": "learner", "volume": None, "gpus": 1})
PINS = ["numpy==2.4.6", "torch==2.13.0"]
STUBS = {
    "dnf": "#!/bin/bash\nexit 0\n",
    "python3.12": '#!/bin/bash\nvenv="$3"; mkdir -p "$venv/bin"\n'
    'printf \'#!/bin/bash\\necho "$*" >>%s/pip.log\\n\' "$venv" >"$venv/bin/pip"; chmod +x "$venv/bin/pip"\n',
}


@dataclass(frozen=True)
class StandIn:
    command: list[str]
    env: dict[str, str]
    paths: BootPaths

    @property
    def pip_log(self) -> Path:
        return Path(self.paths.venv) / "pip.log"


def stand_in(directory: Path, wheel: ShippedWheel, **paths: str) -> StandIn:
    """The learner's boot script under ``directory``; ``paths`` override BootPaths fields."""
    machine = directory / "machine"
    defaults = {
        "venv": machine / "venv",
        "init_log": machine / "init.log",
        "boot_status": machine / "boot-status",
        "wheel_dir": machine / "wheel",
        "etc_dir": machine / "etc",
        "profile": machine / "profile.sh",
    }
    where = BootPaths(**{**{k: str(v) for k, v in defaults.items()}, **paths})
    stubs = directory / "stubs"
    stubs.mkdir(parents=True)
    for name, text in STUBS.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    script = directory / "boot.sh"
    script.write_text(render("c1", LEARNER, wheel, PINS, login="root", paths=where))
    return StandIn(["bash", str(script)], {"PATH": f"{stubs}:/usr/bin:/bin"}, where)
