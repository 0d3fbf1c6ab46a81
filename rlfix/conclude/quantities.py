"""Numbers pulled from the evidence, said in words: how much memory, which collective, how long."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from rlfix.model import MAX_DIGITS, bounded_int

_SIZE = re.compile(r"^\s*([\d.]+)\s*([KMGT]i?B)?\s*$", re.IGNORECASE)
_UNIT = {
    "kb": 1e-6,
    "kib": 2**10 / 2**30,
    "mb": 1e-3,
    "mib": 2**20 / 2**30,
    "gb": 1.0,
    "gib": 1.0,
    "tb": 1e3,
    "tib": 1024.0,
}


def gib(text: str | None, default_unit: str = "GiB") -> float | None:
    """`'21.5 GiB'` -> 21.5, `'512 MiB'` -> 0.5; None when it is not a size."""
    if not text:
        return None
    m = _SIZE.match(text)
    if not m:
        return None
    unit = (m.group(2) or default_unit).lower()
    try:
        return float(m.group(1)) * _UNIT.get(unit, 1.0)
    except (ValueError, OverflowError):
        return None


def _cuda_oom(v: Mapping[str, str]) -> list[str]:
    parts = []
    if "tried" in v:
        parts.append(f"tried to allocate {v['tried']}")
    if "total" in v:
        free = f", of which {v['free']} was free" if "free" in v else ""
        parts.append(f"on a GPU with {v['total']} in total{free}")
    if "reserved_unallocated" in v:
        parts.append(f"{v['reserved_unallocated']} reserved by PyTorch but unallocated (fragmentation)")
    return ["; ".join(parts)] if parts else []


def _ray_oom(v: Mapping[str, str]) -> list[str]:
    out = []
    if "used_gb" in v and "total_gb" in v:
        line = f"node memory {v['used_gb']} GB of {v['total_gb']} GB"
        fraction = v.get("fraction")
        if fraction and fraction.replace(".", "", 1).isdigit() and len(fraction) <= MAX_DIGITS:
            line += f" ({float(fraction):.0%})"
        if "threshold" in v:
            line += f", above Ray's kill threshold {v['threshold']}"
        out.append(line)
    if "task" in v:
        out.append(f"killed: {v['task']}" + (f" (pid {v['pid']})" if "pid" in v else ""))
    return out


def _nccl_timeout(v: Mapping[str, str]) -> list[str]:
    if "op" not in v and "timeout_ms" not in v:
        return []
    what = v.get("op", "a collective")
    seq = f" #{v['seq']}" if "seq" in v else ""
    line = f"{what}{seq}"
    ran, timeout = bounded_int(v.get("ran_ms")), bounded_int(v.get("timeout_ms"))
    if ran is not None:
        line += f" ran {ran / 1000:.0f} s"
    if timeout is not None:
        line += f" against a {timeout / 1000:.0f} s timeout"
    return [line]


def _host_oom(v: Mapping[str, str]) -> list[str]:
    if "killed_pid" not in v and "process" not in v:
        return []
    line = f"the kernel killed {v.get('process', 'a process')}"
    if "killed_pid" in v:
        line += f" (pid {v['killed_pid']})"
    rss = bounded_int(v.get("anon_rss_kb"))
    if rss is not None:
        line += f" using {rss / 2**20:.1f} GiB of resident memory"
    return [line]


def _unschedulable(v: Mapping[str, str]) -> list[str]:
    return [f"requested {v['request']}, which no node of the cluster can provide"] if "request" in v else []


def _kv_cache(v: Mapping[str, str]) -> list[str]:
    out = []
    if "free_gib" in v:
        total = f" of {v['total_gib']} GiB" if "total_gib" in v else ""
        out.append(f"{v['free_gib']} GiB{total} free on the GPU when vLLM started")
    if "max_model_len" in v:
        out.append(f"max model length {v['max_model_len']} tokens does not fit in the KV cache")
    return out


#: Signature ids whose extracted numbers are said in words (`kb lint` checks each id exists).
QUANTITY_RULES: dict[str, Callable[[Mapping[str, str]], list[str]]] = {
    "cuda-oom": _cuda_oom,
    "ray-oom-killer": _ray_oom,
    "nccl-timeout": _nccl_timeout,
    "host-oom-sigkill": _host_oom,
    "ray-unschedulable": _unschedulable,
    "vllm-insufficient-kv-cache": _kv_cache,
}


def describe_quantities(sig_id: str, values: Mapping[str, str]) -> list[str]:
    """Sentences for the numbers a signature extracted (empty when it has none we know how to say)."""
    describe = QUANTITY_RULES.get(sig_id)
    return describe(values) if describe else []
