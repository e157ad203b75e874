"""What a benchmark prints beside every absolute time: the CPU it ran on.

Machines of one kind differ ~2.5x in speed, so a wall time means little without its CPU model.

Example:
    >>> isinstance(cpu_model(), str) and cpu_model() != ""
    True
"""

from __future__ import annotations

import platform

__all__ = ["cpu_model"]


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; else what :mod:`platform` knows; else ``"unknown CPU"``)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
