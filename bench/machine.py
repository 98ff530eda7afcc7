"""What machine this is and how busy it is: nproc, CPU model, memory, load, /proc/stat ticks."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
NPROC = os.cpu_count() or 1


@dataclass(frozen=True)
class MachineInfo:
    nproc: int
    cpu_model: str
    memory_gib: float
    kernel: str
    python: str

    def describe(self) -> str:
        return f"{self.nproc} x {self.cpu_model}, {self.memory_gib:.1f} GiB RAM, Linux {self.kernel}"


def machine_info() -> MachineInfo:
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem_kib = int(line.split()[1])
    return MachineInfo(NPROC, model, mem_kib / 1024 / 1024, platform.release(), platform.python_version())


def load_average() -> tuple[float, float, float]:
    one, five, fifteen = os.getloadavg()
    return one, five, fifteen


@dataclass(frozen=True)
class CpuTicks:
    """Machine-wide CPU ticks from /proc/stat (all cores summed)."""

    busy: int
    total: int


def cpu_ticks() -> CpuTicks:
    first = Path("/proc/stat").read_text().splitlines()[0].split()
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in first[1:9])
    busy = user + nice + system + irq + softirq + steal
    return CpuTicks(busy=busy, total=busy + idle + iowait)
