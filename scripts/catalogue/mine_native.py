"""Mine the native and system side of the error vocabulary into fixtures/messages/<project>.yaml.

Development-time only: reads sources fetched beforehand under one folder (see README-native.md)
and the CUDA toolkit's headers, builds one entry per distinct message template, labels each with
scripts/catalogue/labels_native.py (rules over the message and its source; rlfix is never
imported or run) and writes the catalogue files through scripts/catalogue/common.py.

    python scripts/catalogue/mine_native.py --src DIR [--cuda-include DIR] [--only PROJECT ...]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from scripts.catalogue import native_parse as np_
from scripts.catalogue.apply_review import apply as apply_review
from scripts.catalogue.apply_review import load_review
from scripts.catalogue.common import Entry, cap, dedupe, template_key, write_catalogue
from scripts.catalogue.labels_native import label

GENERATOR = "python scripts/catalogue/mine_native.py --src SRC"
STAMP = "2026-11-26 14:10:50"
GLOG = "E1126 14:10:50.123456 12345"

Raw = dict[str, str]


def _skip_path(rel: str) -> bool:
    """Tests, benchmarks, vendored code and examples are not messages a run prints."""
    return bool(
        re.search(r"(^|/)(tests?|testing|third_party|thirdparty|benchmarks?|examples?)(/|$)|_test\.|test_", rel)
    )


def _files(root: Path, subdirs: Iterable[str], exts: tuple[str, ...], recursive: bool = True) -> list[Path]:
    """Source files under `root/subdir` with one of `exts`, tests and vendored code left out."""
    found = []
    for sub in subdirs:
        base = root / sub
        if base.is_file():
            found.append(base)
            continue
        pattern = "**/*" if recursive else "*"
        for path in sorted(base.glob(pattern)):
            rel = path.relative_to(root).as_posix()
            if path.suffix in exts and path.is_file() and not _skip_path(rel):
                found.append(path)
    return found


def _raw(project: str, version: str, rel: str, line: int, kind: str, pieces: list[np_.Piece], shown: str) -> Raw | None:
    """One candidate entry; None when the message has fewer than 3 words once its holes are gone."""
    template = np_.template_of(pieces)
    if np_.words(template) < 3:
        return None
    message = np_.line_of(pieces)
    return {
        "project": project,
        "version": version,
        "source": f"{rel}:{line}",
        "kind": kind,
        "template": template,
        "line": shown.replace("\x00", message),
    }


# --------------------------------------------------------------------------- pytorch-cpp

_PT_DIRS = [
    "c10/cuda",
    "torch/csrc/distributed/c10d",
    "aten/src/ATen/cuda",
    "torch/csrc/cuda",
    "c10/core",
    "aten/src/ATen/native/cuda",
    "aten/src/ATen/native",
]
_PT_CAP = 1100
_PT_EXC = {
    "TORCH_CHECK": "RuntimeError",
    "TORCH_CHECK_VALUE": "ValueError",
    "TORCH_CHECK_INDEX": "IndexError",
    "TORCH_CHECK_TYPE": "TypeError",
    "TORCH_CHECK_NOT_IMPLEMENTED": "NotImplementedError",
    "TORCH_CHECK_LINALG": "torch._C._LinAlgError",
    "AT_ERROR": "RuntimeError",
}
_PY_EXC = {
    "Error": "RuntimeError",
    "ValueError": "ValueError",
    "IndexError": "IndexError",
    "TypeError": "TypeError",
    "NotImplementedError": "NotImplementedError",
    "OutOfMemoryError": "torch.OutOfMemoryError",
    "DistBackendError": "torch.distributed.DistBackendError",
    "DistNetworkError": "torch.distributed.DistNetworkError",
    "DistStoreError": "torch.distributed.DistStoreError",
    "DistError": "torch.distributed.DistError",
    "LinAlgError": "torch._C._LinAlgError",
    "AcceleratorError": "torch.AcceleratorError",
    "EnforceFiniteError": "RuntimeError",
}
_PT_CALLS = (
    r"(TORCH_CHECK(?:_VALUE|_INDEX|_TYPE|_NOT_IMPLEMENTED|_LINALG|_WITH)?|C10_THROW_ERROR|TORCH_INTERNAL_ASSERT"
    r"|AT_ERROR|C10D_ERROR|C10D_WARNING|throw\s+std::(?:runtime_error|invalid_argument|out_of_range))"
)


def _pt_call(rel: str, call: np_.Call) -> tuple[str, str, list[np_.Piece]] | None:
    """A PyTorch error-macro call as (kind, Python exception or log form, message pieces)."""
    args = np_.split_top(call.args, ",")
    name = re.sub(r"\s+", " ", call.name)
    if name in _PT_EXC:
        msg_args = args if name == "AT_ERROR" else args[1:]
        return name, _PT_EXC[name], [p for a in msg_args for p in np_.expr_pieces(a)]
    if name in ("TORCH_CHECK_WITH", "C10_THROW_ERROR"):
        etype = args[0].split("::")[-1]
        msg_args = args[2:] if name == "TORCH_CHECK_WITH" else args[1:]
        return f"{name}({etype})", _PY_EXC.get(etype, "RuntimeError"), [p for a in msg_args for p in np_.expr_pieces(a)]
    if name == "TORCH_INTERNAL_ASSERT":
        if len(args) < 2:
            return None
        cond = " ".join(args[0].split())
        head = f'{cond} INTERNAL ASSERT FAILED at "/pytorch/{rel}":{call.line}, please report a bug to PyTorch. '
        return name, "RuntimeError", [np_.Piece(head)] + [p for a in args[1:] for p in np_.expr_pieces(a)]
    if name in ("C10D_ERROR", "C10D_WARNING"):
        return name, "glog-" + name[5], np_.format_pieces(args, printf=False)
    if name.startswith("throw"):
        return f"{name.split()[-1]}", "RuntimeError", [p for a in args for p in np_.expr_pieces(a)]
    return None


def _pt_logs(text: str) -> Iterable[tuple[int, str, list[np_.Piece]]]:
    """`LOG(ERROR|FATAL|WARNING) << ...` chains of c10d and the CUDA code (logPrefix() dropped)."""
    for call in np_.find_calls(text, r"LOG"):
        level = call.args.strip()
        if level not in ("ERROR", "FATAL", "WARNING"):
            continue
        parts = np_.split_top(np_.statement_after(text, call.end), "<<")[1:]
        parts = [p for p in parts if not re.search(r"logPrefix\(\)|^\*?this$", p)]
        yield call.line, f"LOG({level})", np_.stream_pieces(parts)


def mine_pytorch(root: Path, version: str) -> list[Raw]:
    """TORCH_CHECK family, C10_THROW_ERROR, internal asserts, c10d log lines of PyTorch's C++ side."""
    rows: list[Raw] = []
    for path in _files(root, _PT_DIRS[:-1], (".cpp", ".cu", ".h", ".cuh", ".hpp")) + _files(
        root, _PT_DIRS[-1:], (".cpp",), recursive=False
    ):
        rel = path.relative_to(root).as_posix()
        if "/hip/" in rel or "/mps/" in rel or "/metal/" in rel or "/vulkan/" in rel:
            continue
        text = np_.strip_comments(path.read_text(errors="replace"))
        for call in np_.find_calls(text, _PT_CALLS):
            found = _pt_call(rel, call)
            if not found:
                continue
            kind, exc, pieces = found
            if exc.startswith("glog-"):
                shown = f"[rank0]:[{exc[5]}{GLOG[1:]} {path.name}:{call.line}] \x00"
                kind = f"{kind} (c10d log)"
            else:
                shown = f"{exc}: \x00"
            row = _raw("pytorch-cpp", version, rel, call.line, kind, pieces, shown)
            if row:
                rows.append(row)
        if rel.endswith((".cu", ".cuh")):
            for line, kind, pieces in _kernel_asserts(rel, text):
                row = _raw("pytorch-cpp", version, rel, line, f"{kind} (device-side assert)", pieces, "\x00")
                if row:
                    rows.append(row)
        if "distributed" in rel or "/cuda" in rel:
            for call in np_.find_calls(text, r"(?:c10::str|fmt::format)"):
                pieces = np_.expr_pieces(f"{call.name}({call.args})")
                shown = f"[rank0]:[E{GLOG[1:]} {path.name}:{call.line}] \x00"
                row = _raw(
                    "pytorch-cpp", version, rel, call.line, f"{call.name} message (logged or raised)", pieces, shown
                )
                if row:
                    rows.append(row)
            for line, kind, pieces in _pt_logs(text):
                level = kind[4]
                shown = f"[rank0]:[{level}{GLOG[1:]} {path.name}:{line}] \x00"
                row = _raw("pytorch-cpp", version, rel, line, kind, pieces, shown)
                if row:
                    rows.append(row)
    return _cap(rows, _PT_CAP, _PT_DIRS)


#: Words that make a message of the op library (ATen/native, c10/core) worth a place under the cap:
#: what a training run hits (devices, indices, memory, non-finite values, targets, shapes, dtypes).
_PT_STRONG = re.compile(
    r"(?i)device|out of (range|bounds)|memory|alloc|\bnan\b|\binf\b|finite|probabilit|multinomial|target|embedding|vocab"
)
_PT_WEAK = re.compile(r"(?i)index|size mismatch|shape|must match|dtype|expected .* but got")


def _pt_tier(row: Raw, order: list[str]) -> tuple[int, int]:
    """(tier, folder rank): CUDA, c10d and device asserts first; then op-library messages about devices,
    indices, memory and non-finite values; then shapes and dtypes; then the rest."""
    src = row["source"]
    folder = next((i for i, d in enumerate(order) if src.startswith(d + "/")), len(order))
    if folder < 4 or row["kind"].startswith("CUDA_KERNEL_ASSERT"):
        return 0, folder
    if row["kind"] == "TORCH_INTERNAL_ASSERT":
        return 3, folder
    if _PT_STRONG.search(row["template"]):
        return 1, folder
    return (2 if _PT_WEAK.search(row["template"]) else 3), folder


def _cap(rows: list[Raw], cap: int, order: list[str]) -> list[Raw]:
    """The first `cap` distinct templates, most relevant first (see _pt_tier), then by source."""
    seen: set[str] = set()
    kept = []
    for row in sorted(rows, key=lambda r: (_pt_tier(r, order), r["source"])):
        key = template_key(row["template"])
        if key not in seen:
            seen.add(key)
            kept.append(row)
    return kept[:cap]


def _kernel_asserts(rel: str, text: str) -> Iterable[tuple[int, str, list[np_.Piece]]]:
    """CUDA_KERNEL_ASSERT(_MSG) sites as the device prints them: `file:line: kernel: block: ..., thread: ... Assertion `cond` failed.`"""
    for call in np_.find_calls(text, r"CUDA_KERNEL_ASSERT(?:_MSG)?"):
        cond = " ".join(np_.split_top(call.args, ",")[0].split())
        before = text[: text.find(call.args)]
        kernels = re.findall(
            r"(?:__global__|__device__)\s+(?:[\w:<>,*&\s]*?\s)?(?:C10_LAUNCH_BOUNDS_\w*\([^)]*\)\s*)?(?:void\s+|\w+\s+)?(\w+)\s*\(",
            before,
        )
        func = kernels[-1] if kernels else "kernel"
        pieces = [
            np_.Piece("", f"=/pytorch/{rel}:{call.line}"),
            np_.Piece(": "),
            np_.Piece("", f"={func}"),
            np_.Piece(": block: ["),
            np_.Piece("", "block"),
            np_.Piece(",0,0], thread: ["),
            np_.Piece("", "thread"),
            np_.Piece(f",0,0] Assertion `{cond}` failed."),
        ]
        yield call.line, call.name, pieces


# --------------------------------------------------------------------------- ray-cpp

_RAY_DIRS = [
    "src/ray/raylet",
    "src/ray/common",
    "src/ray/gcs",
    "src/ray/core_worker",
    "src/ray/object_manager",
    "src/ray/rpc",
    "src/ray/util",
    "src/ray/pubsub",
    "src/ray/raylet_client",
    "src/ray/stats",
]
_RAY_COMPONENT = {"raylet": "raylet", "gcs": "gcs_server", "core_worker": "core_worker", "object_manager": "raylet"}
_RAY_STATUS = r"Status::(?:IOError|Invalid|OutOfMemory|TimedOut|NotFound|Disconnected|UnknownError|KeyError|RpcError|ObjectStoreFull|OutOfDisk|Interrupted|IntentionalSystemExit|UnexpectedSystemExit|CreationTaskError|SchedulingCancelled|GrpcUnavailable|GrpcUnknown|InvalidArgument|AlreadyExists|ChannelError|ChannelTimeoutError|NotImplemented|TypeError|ObjectExists|ObjectNotFound|ObjectAlreadySealed|ObjectUnknownOwner|AuthError|PermissionDenied)"


#: Text that `ss << ...` builds for debug-state dumps and specs, not for errors: left out.
_RAY_DEBUG_DUMP = re.compile(
    r"request count|Debug state|debug dump|debug string|Stats:|stats:|^\s*- |^\{|mean = |total \(|queue length"
    r"|^Number of|Waiting tasks size|Current usage|Backlog|Running tasks by|RayConfig is initialized|Starting agent"
    r"|URIs|placement group id|^Reference\{|task_id=|actor_task_spec|actor_creation_task_spec|deserialize|resource_set="
    r"|Setting actor as asyncio|Cluster resources \(|Task Event Buffer is disabled|-Total num|^\], |^[A-Za-z]+: - "
)


def _ray_line(rel: str, line: int, level: str, message: str) -> str:
    """Ray's text log form: `[date time,ms L pid tid] (component) file.cc:N: message`."""
    part = rel.split("/")[2] if rel.count("/") > 2 else "raylet"
    comp = _RAY_COMPONENT.get(part, "raylet")
    return f"[{STAMP},123 {level} 12345 12400] ({comp}) {Path(rel).name}:{line}: {message}"


def _ray_stream(text: str) -> Iterable[tuple[int, str, list[np_.Piece]]]:
    """RAY_LOG(ERROR|FATAL), RAY_CHECK* and RAY_CHECK_OK chains and `ss << "..."` message builders."""
    for call in np_.find_calls(text, r"(RAY_LOG(?:_EVERY_MS|_EVERY_N)?|RAY_CHECK(?:_OK|_EQ|_NE|_LE|_LT|_GE|_GT)?)"):
        args = np_.split_top(call.args, ",")
        parts = np_.split_top(np_.statement_after(text, call.end), "<<")[1:]
        if call.name.startswith("RAY_LOG"):
            level = args[0].strip()
            if level not in ("ERROR", "FATAL"):
                continue
            yield call.line, f"{call.name}({level})", np_.stream_pieces(parts)
        else:
            display = (
                " ".join(call.args.split())
                if call.name == "RAY_CHECK"
                else call.name + "(" + " ".join(call.args.split()) + ")"
            )
            if not parts:
                continue
            yield call.line, f"{call.name}", [np_.Piece(f" Check failed: {display} "), *np_.stream_pieces(parts)]
    for match in re.finditer(r"(?<![A-Za-z0-9_])([a-z_]*(?:ss|oss|stream|msg|message|buffer|str))\s*<<", text):
        parts = np_.split_top(np_.statement_after(text, match.start()), "<<")[1:]
        if parts and np_.literal_value(parts[0]) is not None:
            pieces = np_.stream_pieces(parts)
            if not _RAY_DEBUG_DUMP.search(np_.template_of(pieces)):
                yield text.count("\n", 0, match.start()) + 1, "ostringstream message", pieces


def mine_ray(root: Path, version: str) -> list[Raw]:
    """Ray's C++ core: raylet, GCS, core worker, object manager log lines, checks and Status texts."""
    rows: list[Raw] = []
    for path in _files(root, _RAY_DIRS, (".cc", ".h")):
        rel = path.relative_to(root).as_posix()
        text = np_.strip_comments(path.read_text(errors="replace"))
        for line, kind, pieces in _ray_stream(text):
            level = "F" if ("FATAL" in kind or "CHECK" in kind) else "E"
            row = _raw("ray-cpp", version, rel, line, kind, pieces, _ray_line(rel, line, level, "\x00"))
            if row:
                rows.append(row)
        for call in np_.find_calls(text, _RAY_STATUS):
            args = np_.split_top(call.args, ",")
            pieces = [p for a in args[:1] for p in np_.expr_pieces(a)]
            code = call.name.split("::")[1]
            row = _raw(
                "ray-cpp",
                version,
                rel,
                call.line,
                f"Status::{code}",
                pieces,
                _ray_line(rel, call.line, "E", f"{code}: \x00"),
            )
            if row:
                rows.append(row)
    return rows


# --------------------------------------------------------------------------- nccl


def mine_nccl(root: Path, version: str) -> list[Raw]:
    """NCCL's WARN lines (and INFO lines that report a failure) and ncclGetErrorString texts."""
    rows: list[Raw] = []
    for path in _files(root, ["src"], (".cc", ".cu", ".h")):
        rel = path.relative_to(root).as_posix()
        text = np_.strip_comments(path.read_text(errors="replace"))
        for call in np_.find_calls(text, r"(WARN|INFO)"):
            args = np_.split_top(call.args, ",")
            if call.name == "INFO":
                args = args[1:]
            pieces = np_.format_pieces(args, printf=True)
            template = np_.template_of(pieces)
            if call.name == "INFO" and not re.search(
                r"(?i)fail|error|abort|timeout|timed out|unable|cannot|could not", template
            ):
                continue
            fname = rel.removeprefix("src/")
            level = "NCCL WARN" if call.name == "WARN" else "NCCL INFO"
            shown = (
                f"node01:12345:12400 [0] {fname}:{call.line} {level} \x00"
                if call.name == "WARN"
                else "node01:12345:12400 [0] NCCL INFO \x00"
            )
            row = _raw("nccl", version, rel, call.line, f"NCCL {call.name.replace('WARN', 'WARN')}", pieces, shown)
            if row:
                rows.append(row)
    init = root / "src/init.cc"
    text = init.read_text()
    for match in re.finditer(r"case (nccl\w+):\s*return \"([^\"]+)\";", text):
        code, message = match.groups()
        if code == "ncclSuccess":
            continue
        line = text.count("\n", 0, match.start()) + 1
        shown = (
            "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, "
            f"{message}, NCCL version {version.split('@')[0].removeprefix('v')}"
        )
        rows.append(
            {
                "project": "nccl",
                "version": version,
                "source": f"src/init.cc:{line}",
                "kind": f"ncclGetErrorString({code})",
                "template": message,
                "line": shown,
            }
        )
    return rows


# --------------------------------------------------------------------------- slurm

_SLURM_DIRS = [
    "src/slurmd/slurmstepd",
    "src/srun",
    "src/sbatch",
    "src/salloc",
    "src/api/step_launch.c",
    "src/plugins/task/cgroup",
    "src/plugins/cgroup",
    "src/plugins/jobacct_gather",
    "src/plugins/proctrack/cgroup",
    "src/plugins/gpu/nvml",
    "src/plugins/gres/gpu",
    "src/slurmd/slurmd",
]
_SIGNALS = ["Killed", "Segmentation fault", "Aborted", "Bus error", "Terminated", "Hangup"]


def _slurm_prog(rel: str) -> str:
    """Which program prints a message from this file."""
    if rel.startswith("src/slurmd/slurmstepd/"):
        return "slurmstepd"
    for prog in ("srun", "sbatch", "salloc", "slurmd"):
        if rel.startswith(f"src/{prog}/"):
            return prog
    return "srun" if rel.startswith("src/api/") else "slurmstepd"


def mine_slurm(root: Path, version: str) -> list[Raw]:
    """error()/fatal() of slurmstepd, srun, sbatch, salloc and the cgroup/task plugins they load."""
    rows: list[Raw] = []
    for path in _files(root, _SLURM_DIRS, (".c",)):
        rel = path.relative_to(root).as_posix()
        text = np_.strip_comments(path.read_text(errors="replace"))
        for call in np_.find_calls(text, r"(error|fatal|slurm_error)"):
            args = np_.split_top(call.args, ",")
            pieces = np_.format_pieces(args, printf=True)
            prog = _slurm_prog(rel)
            level = "fatal" if call.name == "fatal" else "error"
            shown = f"{prog}: {level}: \x00"
            row = _raw("slurm", version, rel, call.line, f"{call.name}()", pieces, shown)
            if row:
                rows.append(row)
            elif rel == "src/srun/launch.c" and re.search(r'"%s: %s %s: %s%s"', call.args):
                for sig in _SIGNALS:
                    rows.append(
                        {
                            "project": "slurm",
                            "version": version,
                            "source": f"{rel}:{call.line}",
                            "kind": f"error() with strsignal ({sig})",
                            "template": f"{{}}: task {{}}: {sig}",
                            "line": f"srun: error: node01: task 0: {sig}",
                        }
                    )
    return rows


# --------------------------------------------------------------------------- linux-kernel

_LINUX_FILES = [
    "drivers/pci/pcie/aer.c",
    "drivers/pci/pcie/dpc.c",
    "drivers/pci/pcie/err.c",
    "mm/oom_kill.c",
    "mm/memcontrol.c",
    "mm/memcontrol-v1.c",
    "arch/x86/mm/fault.c",
    "arch/x86/kernel/traps.c",
    "kernel/hung_task.c",
    "fs/ext4/super.c",
    "net/sunrpc/clnt.c",
    "kernel/signal.c",
    "mm/page_alloc.c",
    "kernel/watchdog.c",
    "kernel/watchdog_perf.c",
    "kernel/rcu/tree_stall.h",
    "arch/x86/kernel/cpu/mce/core.c",
    "fs/nfs/nfs4state.c",
]
_PRINTK = r"(pr_emerg|pr_alert|pr_crit|pr_err|pr_warn|pr_notice|pr_info|printk|pci_err|pci_warn|pci_info|pci_printk|aer_printk|dev_err|dev_warn|pr_info_ratelimited|pr_err_ratelimited|pr_warn_ratelimited|pr_notice_ratelimited|printk_ratelimited|pci_emerg|panic|__ext4_error|ext4_error|ext4_msg|dump_header|pr_cont)"


def _kernel_prefix(rel: str, name: str) -> str:
    """What the kernel prints before the message (device, subsystem prefix)."""
    if name.startswith("pci_") or name == "aer_printk":
        sub = "AER: " if rel.endswith("aer.c") else ("DPC: " if rel.endswith("dpc.c") else "")
        return f"pcieport 0000:00:01.0: {sub}"
    if name == "dev_err" or name == "dev_warn":
        return "pcieport 0000:00:01.0: "
    if rel.startswith("fs/ext4/") and "ext4" in name:
        return (
            "EXT4-fs error (device nvme0n1p1): ext4_find_entry:1661: inode #2: comm python: "
            if "error" in name
            else "EXT4-fs (nvme0n1p1): "
        )
    return ""


def _x86_traps(text: str, version: str, rel: str) -> list[Raw]:
    """show_signal()'s user-space trap lines, one per trap name the callers pass (traps: prefix is its pr_fmt)."""
    rows = []
    names = [
        (c.line, np_.literal_value(a))
        for c in np_.find_calls(text, r"do_error_trap")
        for a in np_.split_top(c.args, ",")[2:3]
    ]
    gp = re.search(r'#define GPFSTR "([^"]+)"', text)
    if gp:
        names.append((text.count("\n", 0, gp.start()) + 1, None))
    for line, name in names:
        shown_name = f"trap {name}" if name else gp.group(1) if gp else ""
        if not shown_name:
            continue
        template = f"{{}}[{{}}] {shown_name} ip:{{}} sp:{{}} error:{{}} in {{}}[{{}}+{{}}]"
        shown = f"[12345.678901] traps: python[12345] {shown_name} ip:7f3a2c001000 sp:7ffd5e8c1a40 error:0 in libc.so.6[7f3a2c000000+1b5000]"
        rows.append(
            {
                "project": "linux-kernel",
                "version": version,
                "source": f"{rel}:{line}",
                "kind": "kernel pr_info (show_signal)",
                "template": template,
                "line": shown,
            }
        )
    return rows


def mine_linux(root: Path, version: str) -> list[Raw]:
    """printk-family lines of the kernel files that report PCIe errors, OOM kills, crashes, hangs, fs and NFS trouble."""
    rows: list[Raw] = []
    for rel in _LINUX_FILES:
        path = root / rel
        if not path.exists():
            continue
        text = np_.strip_comments(path.read_text(errors="replace"))
        for call in np_.find_calls(text, _PRINTK):
            args = np_.split_top(call.args, ",")
            while args and np_.literal_value(args[0]) is None and not args[0].startswith("KERN_"):
                args = args[1:]
            if args and args[0].startswith("KERN_"):
                args[0] = re.sub(r"^KERN_[A-Z]+\s*", "", args[0]) or '""'
            if not args:
                continue
            pieces = np_.format_pieces(args, printf=True)
            chatty = call.name in (
                "pr_info",
                "pr_cont",
                "pr_notice",
                "pci_info",
                "pr_info_ratelimited",
                "pr_notice_ratelimited",
            )
            if chatty and not re.search(r"oom_kill|memcontrol|hung_task|aer\.c|sunrpc/clnt|watchdog", rel):
                continue
            shown = f"[12345.678901] {_kernel_prefix(rel, call.name)}\x00"
            row = _raw("linux-kernel", version, rel, call.line, f"kernel {call.name}", pieces, shown)
            if row:
                rows.append(row)
        if rel == "arch/x86/kernel/traps.c":
            rows.extend(_x86_traps(text, version, rel))
        for call in np_.find_calls(text, r"oom_kill_process"):
            for lit in re.findall(r'"([^"]+)"', np_.split_top(call.args, ",")[-1]):
                rows.append(
                    {
                        "project": "linux-kernel",
                        "version": version,
                        "source": f"{rel}:{call.line}",
                        "kind": "kernel pr_err (oom_kill_process message)",
                        "template": f"{lit}: Killed process {{}} ({{}}) total-vm:{{}}kB, anon-rss:{{}}kB, file-rss:{{}}kB, shmem-rss:{{}}kB, UID:{{}} pgtables:{{}}kB oom_score_adj:{{}}",
                        "line": f"[12345.678901] {lit}: Killed process 12345 (python) total-vm:98765432kB, anon-rss:65432100kB, file-rss:123456kB, shmem-rss:0kB, UID:1000 pgtables:130000kB oom_score_adj:0",
                    }
                )
    return rows


# --------------------------------------------------------------------------- kubernetes

_K8S_FILES = [
    "pkg/kubelet/eviction",
    "pkg/kubelet/preemption",
    "pkg/kubelet/nodeshutdown",
    "pkg/kubelet/kuberuntime",
    "pkg/kubelet/lifecycle",
    "pkg/kubelet/images",
    "pkg/kubelet/container",
    "pkg/kubelet/active_deadline.go",
    "pkg/kubelet/events",
    "pkg/kubelet/dockershim/docker_container.go",
    "pkg/kubelet/prober",
    "pkg/kubelet/cm/devicemanager",
    "pkg/kubelet/status",
    "pkg/scheduler/framework/plugins/noderesources",
    "pkg/scheduler/framework/plugins/defaultpreemption",
    "pkg/kubelet/kubelet_pods.go",
]
_K8S_CONTAINER_REASONS = {
    "OOMKilled",
    "Error",
    "ContainerCannotRun",
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
}


#: Normal-event and debug texts the kubelet also builds with Sprintf: not errors, left out.
_K8S_NORMAL = re.compile(r"^Successfully|already present on machine|^threshold\(signal=|definition changed$")
_K8S_EVENT_REASONS = {
    "BackOffStartContainer": "BackOff",
    "PreemptContainer": "Preempting",
    "FailedToCreateContainer": "Failed",
    "ContainerUnhealthy": "Unhealthy",
}


def _k8s_shown(rel: str, line: int, kind: str, args: list[str]) -> str:
    """How kubectl or the kubelet log shows it: an event line, a status message, or a kubelet glog error."""
    if kind in ("Eventf", "Event"):
        reason = args[2].split(".")[-1].strip('" ') if len(args) > 2 else "Failed"
        return f"  Warning  {_K8S_EVENT_REASONS.get(reason, reason)}  2m  kubelet  \x00"
    if kind.startswith("status message"):
        return "  Warning  Evicted  2m  kubelet  \x00" if "eviction" in rel else "Message: \x00"
    return f"E1126 14:10:50.123456    1234 {Path(rel).name}:{line}] \x00"


def mine_kubernetes(root: Path, version: str) -> list[Raw]:
    """Kubelet/scheduler termination reasons and messages: eviction, preemption, shutdown, back-off, deadlines."""
    rows: list[Raw] = []
    for path in _files(root, _K8S_FILES, (".go",)):
        rel = path.relative_to(root).as_posix()
        text = np_.strip_comments(path.read_text(errors="replace"))
        for match in re.finditer(
            r'(?m)^\s*(?:const\s+|var\s+)?(\w+)\s*(?:string\s*)?=\s*(?:errors\.New\()?"((?:[^"\\]|\\.)*)"', text
        ):
            name, value = match.groups()
            line = text.count("\n", 0, match.start()) + 1
            if (
                name != "Name"
                and re.fullmatch(r"[A-Z][A-Za-z]+", value)
                and re.search(r"(?i)reason|err|Preempt|BackOff|Kill", name + value)
            ):
                status = (
                    "Last State: Terminated, Reason" if value in _K8S_CONTAINER_REASONS else "Status: Failed, Reason"
                )
                rows.append(
                    {
                        "project": "kubernetes",
                        "version": version,
                        "source": f"{rel}:{line}",
                        "kind": f"status reason ({name})",
                        "template": f"{status}: {value}",
                        "line": f"{status}: {value}",
                    }
                )
            elif " " in value and re.search(r"(?i)message|msg|fmt|reason", name):
                use = next(
                    (c for c in np_.find_calls(text, r"fmt\.Sprintf") if np_.split_top(c.args, ",")[0] == name), None
                )
                args = np_.split_top(use.args, ",")[1:] if use else []
                pieces = np_.format_pieces([f'"{value}"', *args], printf=True)
                kind = f"status message ({name})"
                row = _raw("kubernetes", version, rel, line, kind, pieces, _k8s_shown(rel, line, kind, []))
                if row:
                    rows.append(row)
        for call in np_.find_calls(text, r"(fmt\.Sprintf|fmt\.Errorf|errors\.New|(?:\w+\.)*Eventf|(?:\w+\.)*Event)"):
            args = np_.split_top(call.args, ",")
            first = next((i for i, a in enumerate(args) if np_.literal_value(a) is not None), None)
            if first is None:
                continue
            pieces = np_.format_pieces(args[first:], printf=True)
            kind = call.name.split(".")[-1]
            if _K8S_NORMAL.search(np_.template_of(pieces)):
                continue
            row = _raw("kubernetes", version, rel, call.line, kind, pieces, _k8s_shown(rel, call.line, kind, args))
            if row:
                rows.append(row)
    return rows


# --------------------------------------------------------------------------- cuda-runtime / cuda-driver

_PROBE = r"""
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
int main() {
  for (int i = 0; i < 1100; i++) {
    const char* n = cudaGetErrorName((cudaError_t)i);
    if (n && strcmp(n, "unrecognized error code")) printf("%d\t%s\t%s\n", i, n, cudaGetErrorString((cudaError_t)i));
  }
}
"""


def _cudart_strings(cuda_root: Path, work: Path) -> dict[str, str]:
    """cudaGetErrorString of every code, from a probe linked against the installed static cudart."""
    import subprocess

    work.mkdir(parents=True, exist_ok=True)
    (work / "probe.cu").write_text(_PROBE)
    subprocess.run(
        [str(cuda_root / "bin/nvcc"), "-cudart", "static", str(work / "probe.cu"), "-o", str(work / "probe")],
        check=True,
    )
    out = subprocess.run([str(work / "probe")], check=True, capture_output=True, text=True).stdout
    return {name: text for _, name, text in (line.split("\t") for line in out.splitlines())}


def _enum(path: Path, start: str, prefix: str) -> list[tuple[int, str, int, str]]:
    """(line, name, value, doc comment) of each enumerator of the enum opening at `start`."""
    text = path.read_text()
    body_at = text.index(start)
    body = text[body_at : text.index("}", body_at)]
    out = []
    for match in re.finditer(rf"/\*\*(.*?)\*/\s*({prefix}\w+)\s*=\s*(\d+)", body, re.S):
        doc = " ".join(re.sub(r"^\s*\*\s?", "", ln) for ln in match.group(1).splitlines()).strip()
        line = text.count("\n", 0, body_at + match.start(2)) + 1
        out.append((line, match.group(2), int(match.group(3)), " ".join(doc.split())))
    return out


DOCS: dict[str, str] = {}


_DRIVER_CALLS = [
    (
        r"NO_DEVICE|NOT_INITIALIZED|DEINITIALIZED|STUB_LIBRARY|SYSTEM_DRIVER|COMPAT|DEVICE_UNAVAILABLE|INVALID_DEVICE|NOT_LICENSED|SYSTEM_NOT_READY",
        "cuInit",
    ),
    (r"OUT_OF_MEMORY|MAP|HOST_MEMORY", "cuMemAlloc"),
    (
        r"IMAGE|PTX|BINARY|JIT|SHARED_OBJECT|FILE_NOT_FOUND|INVALID_SOURCE|NOT_FOUND|FUNCTION_NOT_LOADED",
        "cuModuleLoadData",
    ),
    (r"PEER", "cuCtxEnablePeerAccess"),
    (r"CAPTURE|CAPTURED|GRAPH", "cuStreamEndCapture"),
    (r"CONTEXT|PRIMARY", "cuCtxSetCurrent"),
]


def _driver_call(name: str) -> str:
    """The driver call a code most often comes back from, for a realistic line."""
    return next((call for rx, call in _DRIVER_CALLS if re.search(rx, name)), "cuLaunchKernel")


def mine_cuda(cuda_root: Path, work: Path) -> tuple[list[Raw], list[Raw]]:
    """One entry per cudaError_t (PyTorch's `CUDA error: <cudaGetErrorString>`) and per CUresult."""
    include = cuda_root / "include"
    version_m = re.search(r"#define CUDA_VERSION (\d+)", (include / "cuda.h").read_text())
    ver = int(version_m.group(1)) if version_m else 0
    version = f"CUDA {ver // 1000}.{ver % 1000 // 10}"
    strings = _cudart_strings(cuda_root, work)
    runtime, driver = [], []
    for line, name, value, doc in _enum(include / "driver_types.h", "enum __device_builtin__ cudaError", "cuda"):
        if value == 0 or name not in strings:
            continue
        DOCS[name] = doc
        text = strings[name]
        runtime.append(
            {
                "project": "cuda-runtime",
                "version": version,
                "source": f"include/driver_types.h:{line}",
                "kind": f"enum cudaError ({name} = {value})",
                "template": f"CUDA error: {text}",
                "line": f"RuntimeError: CUDA error: {text}",
            }
        )
    for line, name, value, doc in _enum(include / "cuda.h", "typedef enum cudaError_enum", "CUDA_"):
        if value == 0:
            continue
        DOCS[name] = doc
        driver.append(
            {
                "project": "cuda-driver",
                "version": version,
                "source": f"include/cuda.h:{line}",
                "kind": f"enum CUresult ({name} = {value})",
                "template": f"[{value}] Call to {{}} results in {name}",
                "line": f"numba.cuda.cudadrv.driver.CudaAPIError: [{value}] Call to {_driver_call(name)} results in {name}",
            }
        )
    return runtime, driver


# --------------------------------------------------------------------------- nvidia-xid

#: What the driver prints after the Xid number for the codes a training cluster sees, from NVIDIA's
#: Xid catalog descriptions (codes not listed here are shown with their nverror.h mnemonic).
XID_TEXT = {
    8: "GPU stopped processing",
    13: "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address",
    31: "Ch 00000010, intr 10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_12340000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
    32: "Channel ID 00000005 intr 00008000",
    43: "Ch 00000008, intr 00000000. Reset Channel Verif Error",
    45: "Preemptive cleanup, due to previous errors -- most likely to see when running multiple cuda applications and hitting a DBE",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, subpartition 0.",
    61: "Internal micro-controller breakpoint/warning (newer drivers)",
    62: "Internal micro-controller halt (newer drivers)",
    63: "Row Remapper: New row marked for remapping, reset gpu to activate.",
    64: "Row Remapper: Failed to mark a row for remapping",
    68: "NVDEC0 Exception: Video processor exception",
    69: "Graphics Exception: Class Error",
    74: "NVLink: fatal error detected on link 4(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
    79: "GPU has fallen off the bus.",
    92: "High single-bit ECC error rate",
    94: "Contained: SM (0x1). RST: No, D-RST: No",
    95: "Uncontained: FBHUB. RST: Yes, D-RST: No",
    109: "Context Switch Timeout Error",
    119: "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8).",
    120: "GSP task exception: Error in GSP firmware",
    121: "C2C Link Error",
    140: "An uncorrectable ECC error escaped the containment and was detected",
    154: "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
}


def mine_xid(root: Path, version: str) -> list[Raw]:
    """Each Xid code of nverror.h as a kernel log line, the driver's nvErrorLog texts and its NVRM error prints."""
    rows: list[Raw] = []
    header = root / "src/common/sdk/nvidia/inc/nverror.h"
    text = header.read_text()
    xids = text[: text.index("ROBUST_CHANNEL_LAST_ERROR")]
    for match in re.finditer(r"(?m)^#define\s+(\w+)\s+\((\d+)\)", xids):
        name, code = match.group(1), int(match.group(2))
        line = text.count("\n", 0, match.start()) + 1
        msg = XID_TEXT.get(code, name)
        rows.append(
            {
                "project": "nvidia-xid",
                "version": version,
                "source": f"src/common/sdk/nvidia/inc/nverror.h:{line}",
                "kind": f"Xid {code} ({name})",
                "template": f"Xid ({{}}): {code}, pid={{}}, name={{}}, {msg}",
                "line": f"[12345.678901] NVRM: Xid (PCI:0000:3b:00): {code}, pid=12345, name=python, {msg}",
            }
        )
    dirs = ["src/nvidia/src/kernel", "src/nvidia/arch/nvalloc/unix/src", "kernel-open/nvidia"]
    for path in _files(root, dirs, (".c",)):
        rel = path.relative_to(root).as_posix()
        body = np_.strip_comments(path.read_text(errors="replace"))
        for call in np_.find_calls(body, r"(nvErrorLog_va|nv_printf|NV_DEV_PRINTF|nv_printf_ratelimited)"):
            args = np_.split_top(call.args, ",")
            if call.name == "nvErrorLog_va":
                xid = args[1].strip() if len(args) > 1 else ""
                pieces = np_.format_pieces(args[2:], printf=True)
                kind = f"nvErrorLog ({xid})"
                code = re.search(rf"#define\s+{re.escape(xid)}\s+\((\d+)\)", text)
                shown = f"[12345.678901] NVRM: Xid (PCI:0000:3b:00): {code.group(1) if code else '0'}, pid=12345, name=python, \x00"
            else:
                if not args or "NV_DBG_ERRORS" not in args[0]:
                    continue
                pieces = np_.format_pieces(args[2:] if call.name == "NV_DEV_PRINTF" else args[1:], printf=True)
                if pieces and pieces[0].expr is None:
                    pieces[0] = np_.Piece(pieces[0].text.removeprefix("NVRM: "))
                kind = f"{call.name}(NV_DBG_ERRORS)"
                shown = (
                    "[12345.678901] NVRM: GPU 0000:3b:00.0: \x00"
                    if call.name == "NV_DEV_PRINTF"
                    else "[12345.678901] NVRM: \x00"
                )
            row = _raw("nvidia-xid", version, rel, call.line, kind, pieces, shown)
            if row:
                rows.append(row)
    return rows


# --------------------------------------------------------------------------- main


def _git_version(src: Path, name: str) -> str:
    """The version a fetched tree records in VERSION (written when it was fetched, see README-native.md)."""
    stamp = src / f"{name}.VERSION"
    return stamp.read_text().strip() if stamp.exists() else "unknown"


def _projects(src: Path, cuda: Path, work: Path) -> dict[str, Callable[[], list[Raw]]]:
    """Each project's miner, bound to its source tree."""
    cached: dict[str, tuple[list[Raw], list[Raw]]] = {}

    def cuda_part(i: int) -> list[Raw]:
        if "c" not in cached:
            cached["c"] = mine_cuda(cuda, work)
        return cached["c"][i]

    return {
        "pytorch-cpp": lambda: mine_pytorch(src / "pytorch", _git_version(src, "pytorch")),
        "ray-cpp": lambda: mine_ray(src / "ray", _git_version(src, "ray")),
        "nccl": lambda: mine_nccl(src / "nccl", _git_version(src, "nccl")),
        "slurm": lambda: mine_slurm(src / "slurm", _git_version(src, "slurm")),
        "linux-kernel": lambda: mine_linux(src / "linux", _git_version(src, "linux")),
        "kubernetes": lambda: mine_kubernetes(src / "kubernetes", _git_version(src, "kubernetes")),
        "nvidia-xid": lambda: mine_xid(src / "open-gpu-kernel-modules", _git_version(src, "open-gpu-kernel-modules")),
        "cuda-runtime": lambda: cuda_part(0),
        "cuda-driver": lambda: cuda_part(1),
    }


def main(argv: list[str] | None = None) -> int:
    """Mine, label and write each project asked for (all by default); print the counts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, required=True, help="folder holding one fetched tree per project")
    parser.add_argument(
        "--cuda", type=Path, default=Path("/usr/local/cuda"), help="CUDA toolkit root (include/, bin/nvcc)"
    )
    parser.add_argument(
        "--work", type=Path, default=Path("build/catalogue-native"), help="scratch folder for the cudart probe"
    )
    parser.add_argument("--only", nargs="*", default=None, help="projects to mine (default: all)")
    args = parser.parse_args(argv)
    miners = _projects(args.src, args.cuda, args.work)
    review = load_review()
    for project in args.only or list(miners):
        rows = miners[project]()
        entries = []
        for row in rows:
            expect, why = label(row, DOCS)
            entries.append(Entry(**row, expect=expect, why=why))
        # The second reader's review (review_native.yaml) overrides the rules after the cap, so the
        # cap draws the same entries as before the review and the written file equals the committed one.
        entries = apply_review(cap(dedupe(entries)), review)
        path = write_catalogue(project, entries, GENERATOR, capped=True)
        print(
            f"{project}: {len({template_key(e.template) for e in entries})} entries -> {path.relative_to(path.parents[2])}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
