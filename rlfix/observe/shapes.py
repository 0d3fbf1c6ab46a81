"""Is this line an error, whatever it says? The shape of error lines, independent of wording.

Signatures know causes by their words; this module knows failures by their form, so that a log
ending in an error nobody taught rlfix is still reported (as the most specific signature that fits,
else `unrecognized-failure` quoting the line), never "no failure recognised". The shapes are those
the stack's own code prints, each with its source:

- exception lines: CPython's traceback module (`SomeError: message`, `pkg.mod.SomeError`, an
  exception with no message), Java/Scala's `Exception in thread "main" ...`;
- C++ aborts: libstdc++'s verbose terminate handler (`terminate called after throwing an instance
  of 'c10::Error'`, then `  what():  ...`);
- panics: Rust's default hook (`thread 'main' panicked at ...`), Go's runtime (`panic: ...`,
  `fatal error: ...`);
- severity words at the front (`ERROR:`, `FATAL`, `[CRITICAL]`, `Error: ...`), where the line
  normaliser did not already take them as the line's level;
- result codes: CUDA driver (`CUDA_ERROR_OUT_OF_MEMORY`, `CUresult`), CUDA runtime
  (`cudaErrorIllegalAddress`), NCCL (`ncclSystemError`, `NCCL error`), errno (`[Errno 28]`);
- retries given up: urllib3's `Max retries exceeded`, `retries exhausted`, `giving up after N`;
- tool usage errors: argparse's `prog: error: unrecognized arguments`; daemons' `slurmd: fatal: ...`;
- asserts: glibc's and CUDA's device-side `Assertion `cond` failed`;
- NCCL's `NCCL WARN` (its error channel), the kernel log's `NVRM:` lines naming a failure;
- GPU fault reports: ROCm's `Memory access fault by GPU`, `HSA_STATUS_ERROR_*`, cuda-gdb's `CUDA
  Exception:`, compute-sanitizer's `========= Invalid __global__ read`, DRM's `*ERROR*`;
- orchestrators: kubectl's `Status: Failed, Reason: ...` and the kubelet's `Warning  Evicted ...`;
- shell and kernel death lines: bash's job report (`line 1: 123 Killed  python ...`), a bare
  `Killed`, `Segmentation fault (core dumped)`; the kernel's OOM killer, NVIDIA's `NVRM: Xid`,
  PCIe `AER: Uncorrected`.

Before a shape is judged, the wrappers that paste tools and progress bars put in front of a line
are peeled: `>` quotes, line numbers, a bare clock time, and a tqdm bar the error was glued to.
"""

from __future__ import annotations

import re

# Wrappers left after the line normaliser: what a paste or a progress bar adds in front.
_QUOTE = re.compile(r"(?:>\s?)+")
_LINE_NUMBER = re.compile(r"\s*\d{1,7}(?:\s*[:|]\s*|\s+)(?=\S)")
_CLOCK = re.compile(r"\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?\s+")
# A tqdm bar (`45%|████▌   | 9/20 [00:03<00:04,  2.6it/s]`) an error was printed onto, without a newline.
_TQDM = re.compile(r".{0,200}?\d{1,3}%\|[^|\n]{0,200}\|[^\[\n]{0,120}\[[^\]\n]{0,120}\]\s*")

_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "exception",
        re.compile(r"(?:[A-Za-z_]\w{0,80}\.){0,8}[A-Z]\w{0,80}(?:Error|Exception|Exit|Interrupt|Fault)(?=[:\s(\[,]|$)"),
    ),
    ("exception", re.compile(r"Exception in thread \S")),
    ("exception", re.compile(r"Exception(?::\s|$)")),
    ("exception", re.compile(r"(?:[a-z_]\w{0,80}\.){1,8}[A-Z]\w{0,80}(?:Error|Exception)\b")),
    # A qualified exception class whatever its suffix: `omegaconf.errors.MissingMandatoryValue: ...`,
    # `huggingface_hub.errors.CacheNotFound: ...`, `datasets.builder.InvalidConfigName: ...`.
    ("exception", re.compile(r"(?:[a-z_][a-z0-9_]{0,40}\.){2,8}[A-Z][A-Za-z0-9]{2,80}: \S")),
    (
        "cxx-abort",
        re.compile(r"terminate called (?:after throwing an instance of|without an active exception|recursively)"),
    ),
    ("cxx-abort", re.compile(r"\s*what\(\):\s+\S")),
    ("panic", re.compile(r"thread '[^']{0,200}' panicked at\b")),
    ("panic", re.compile(r"(?:panic|fatal error): \S")),
    ("severity", re.compile(r"\[?(?:ERROR|FATAL|CRITICAL|CRIT|EMERG|ALERT)\]?(?:[\s:!]|$)")),
    ("severity", re.compile(r"(?:[Ee]rror|[Ff]atal(?: error)?|E(?:RROR|rror) occurred)(?:\s*\[\w+\])?[:!]\s")),
    # "Error in generation loop: ...", "Error while loading ...: ..." (a message that opens by naming its error).
    ("severity", re.compile(r"(?:Error|ERROR|Fatal error) (?:in|while|during|when|loading|running) [^:\n]{1,120}: \S")),
    ("usage", re.compile(r"[\w.\-/ ]{1,80}: error: \S")),
    # Slurm's daemons and many C tools: `slurmstepd: fatal: ...`, `srun: fatal: ...`.
    ("severity", re.compile(r"[\w.\-/]{1,40}: fatal: \S")),
    (
        "shell",
        re.compile(
            r"(?:Killed|Terminated|Segmentation fault|Bus error|Aborted|Illegal instruction|"
            r"Floating point exception)(?: \(core dumped\))?\s*$"
        ),
    ),
)
# Shapes that may stand anywhere in the line (after a prefix the normaliser does not know).
_ANYWHERE: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "result-code",
        re.compile(
            r"\b(?:CUDA_ERROR_[A-Z_]{3,60}|cudaError[A-Z]\w{2,60}|CUresult error|CUBLAS_STATUS_(?!SUCCESS)[A-Z_]+|"
            r"CUDNN_STATUS_(?!SUCCESS)[A-Z_]+|nccl(?:System|Internal|UnhandledCuda|Remote)Error|"
            r"ncclInvalid(?:Usage|Argument)|NCCL error\b)"
        ),
    ),
    ("result-code", re.compile(r"\[Errno \d{1,4}\] \S|\berrno[ =:]+\d{1,4}\b")),
    # A bracketed level after a prefix the normaliser does not know: hydra's `[time][module][ERROR] - ...`.
    ("severity", re.compile(r"\]\[(?:ERROR|CRITICAL|FATAL)\] (?:- )?\S")),
    # ROCm's runtime (`HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION`, `hipErrorIllegalAddress`) and a CUDA or
    # HIP error a library prints itself (`CUDA Error: misaligned address (716) file.cuh: line 1918`).
    (
        "result-code",
        re.compile(r"\bHSA_STATUS_ERROR_[A-Z_]{3,60}|\bhipError[A-Z]\w{2,60}|\b(?:CUDA|HIP) [Ee]rror(?: \[\w+\])?: \S"),
    ),
    # The GPU's own fault reports: ROCm's `Memory access fault by GPU node-2 ...`, cuda-gdb's
    # `CUDA Exception: Warp Illegal Address`, compute-sanitizer's `========= Invalid __global__ read of size 4`,
    # the kernel DRM drivers' `*ERROR*`.
    (
        "gpu-fault",
        re.compile(
            r"\bMemory access fault by GPU\b|\bCUDA Exception: \S|"
            r"^=+ (?:Invalid __\w{1,20}__ (?:read|write)|Program hit \w)|\*ERROR\* \S"
        ),
    ),
    (
        "retries",
        re.compile(
            r"(?i)\bmax retries exceeded\b|\bretries exhausted\b|\bgiving up after \d+ (?:attempts|retries|tries)\b|"
            r"\b(?:HTTP|status(?: code)?)[ :=]{0,3}(?:[45]\d\d)\b.{0,200}\bretr(?:y|ies|ying)\b"
        ),
    ),
    ("shell", re.compile(r": line \d{1,6}: +\d{1,9} (?:Killed|Segmentation fault|Bus error|Aborted|Terminated)\b")),
    # glibc's assert() and CUDA's device-side assert (`X.cu:94: kernel: block: [0,0,0], thread: [1,0,0]
    # Assertion `idx < n` failed.`).
    # glibc quotes the condition `like this', CUDA `like this`.
    ("assert", re.compile(r"\bAssertion `.{0,2000}?['`] failed")),
    # NCCL prints WARN only for failures (its INFO channel carries everything else).
    ("severity", re.compile(r"\bNCCL WARN\b")),
    # kubectl describe: a pod's state and the kubelet's Warning events.
    ("orchestrator", re.compile(r"\b(?:Status|State):\s+(?:Failed|Terminated)\b.{0,40}\bReason:\s+\w")),
    ("orchestrator", re.compile(r"^\s*Warning\s{2,}[A-Z]\w{2,60}\s{2,}\S{1,20}\s{2,}\S{1,80}\s{2,}\S")),
    ("shell", re.compile(r"\b(?:Segmentation fault|Bus error|Aborted) \(core dumped\)")),
    (
        "kernel",
        re.compile(
            r"\bNVRM: Xid\b|\bAER: (?:Multiple )?Uncorrected\b|\bAER: PCIe Bus Error: severity=Uncorrect|"
            r"\bOut of memory(?: \([\w ]{1,40}\))?: Killed process\b|\btraps: \S{1,80}\[\d+\] |"
            r"\boom-kill:|\bMemory cgroup out of memory\b|\bGPU has fallen off the bus\b|"
            # The kernel's own failure forms (lib/bug.c, kernel/panic.c, fs/ext4, NFS, the memory-failure code).
            r"\bBUG: \S|\bKernel panic - not syncing\b|\bEXT4-fs error\b|\bnfs: server \S+ not responding\b|"
            r"\bhardware memory error\b|"
            # The OOM killer's report around its kill line (mm/oom_kill.c dump_tasks, mm/memcontrol.c).
            r"kB, failcnt \d+$|^Memory cgroup stats for\b|^Tasks state \(memory values in pages\)|"
            r"^\[ pid \]\s+uid\s+tgid\s+total_vm\b|"
            # The NVIDIA driver's own error channel (NV_DBG_ERRORS) in the kernel log.
            r"\bNVRM: .{0,300}\b(?:[Ff]ail(?:ed|ure)|[Ee]rror|[Ff]ault)\b"
        ),
    ),
)

#: The words an error-shaped line may carry, for the line probe that finds candidates to judge (a
#: case-insensitive regex with literal anchors; every shape above holds one of them).
PROBE = (
    r"(?i)(?:error|exception)\b|\b(?:fatal|failed|failure|aborted|segmentation fault|critical)\b|\bcuda_error_|"
    r"\bterminate called\b|\bwhat\(\):|\bpanic(?:ked)?\b|\bkilled\b|\bterminated\b|\bbus error\b|"
    r"\billegal instruction\b|\bfloating point exception\b|\bcore dumped\b|\bcudaerror\w|\bcuresult\b|"
    r"\bmax retries\b|\bretries exhausted\b|\bgiving up after\b|\bxid\b|\baer:|\bout of memory\b|\boom-kill\b|"
    r"\bcublas_status_|\bcudnn_status_|\bnccl\w{0,20}(?:error|invalid)|\[errno \d|interrupt\b|\bfault\b|"
    # kubectl's event table puts two spaces after "Warning": that pair is the anchor, since "warning" alone is
    # in one line of eight of a chatty job's log and probing them all doubled the scan (measured).
    r"systemexit\b|\bretry(?:ing)?\b|\bnccl warn\b|^\s*warning  \s*|\binvalid __\w+__ (?:read|write)\b|"
    r"\bprogram hit\b|\.errors?\.[A-Z]|\.exceptions?\.[A-Z]|\bbug: |\bnot responding\b|"
    r"kb, failcnt \d|\bmemory cgroup stats for\b|\btasks state \(memory values|\[ pid \]\s+uid\b"
)


def unwrap(message: str) -> str:
    """The message without what a paste tool or a progress bar put in front of it."""
    text = message
    for _ in range(4):
        before = text
        for wrapper in (_QUOTE, _CLOCK, _LINE_NUMBER, _TQDM):
            m = wrapper.match(text)
            if m and m.end() < len(text):
                text = text[m.end() :]
        if text == before:
            break
    return text


#: Ray's periodic event-loop statistics (`\tGcsService.ReportJobError - 2 total (0 active), Execution
#: time: ...`): a count of handler calls, whatever the handler's name says.
_EVENT_STATS = re.compile(r"^\s*[\w.:]+ - \d+ total \(\d+ active")


#: Levels below ERROR that a prefix gives a line (glog's and Ray's W/I/D, a logger's WARNING).
QUIET_LEVELS = frozenset({"WARNING", "WARN", "INFO", "DEBUG"})


def error_shape(message: str, level: str | None = None) -> str | None:
    """The kind of error the line's form says it is (`exception`, `cxx-abort`, `panic`, `severity`,
    `usage`, `shell`, `assert`, `orchestrator`, `result-code`, `gpu-fault`, `retries`, `kernel`), or None when it
    only mentions a word."""
    if level in ("ERROR", "FATAL", "CRITICAL"):
        return "severity"
    if level in QUIET_LEVELS:
        # Its own program logged it below ERROR: the raylet's "W ... failed to send SIGTERM to process
        # group 10006: No such process, errno=3" reports a worker already gone, not an error.
        return None
    text = unwrap(message)
    if _EVENT_STATS.match(text):
        return None
    for name, shape in _SHAPES:
        if shape.match(text):
            return name
    for name, shape in _ANYWHERE:
        if shape.search(text):
            return name
    return None
