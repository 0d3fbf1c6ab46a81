"""The structural error detector: a line's form says it is an error, whatever its words.

Each row is a line as the named source prints it (the format string filled in), not a line from
an evaluation log. Negative rows are lines healthy runs print, which mention the words only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rlfix.api import diagnose
from rlfix.match.matcher import observer_pattern
from rlfix.observe.shapes import PROBE, error_shape, unwrap

# (line, expected shape, where the line's form comes from)
ERROR_LINES: list[tuple[str, str, str]] = [
    # CPython's traceback module: format_exception_only
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "exception", "torch/cuda (c10 CUDA_CHECK)"),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "exception",
        "c10/cuda/CUDACachingAllocator.cpp",
    ),
    ("ValueError: too many values to unpack (expected 2)", "exception", "CPython ceval"),
    ("KeyError: 'input_ids'", "exception", "CPython dict lookup"),
    ("AssertionError", "exception", "CPython assert with no message"),
    ("ModuleNotFoundError: No module named 'flash_attn'", "exception", "CPython import system"),
    ("ray.exceptions.RayTaskError(ValueError): ray::train() (pid=123, ip=10.0.0.1)", "exception", "ray/exceptions.py"),
    (
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
        "exception",
        "ray/exceptions.py",
    ),
    ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "exception", "torch/distributed/elastic"),
    (
        "requests.exceptions.ConnectionError(MaxRetryError(\"HTTPSConnectionPool(host='hf.co', port=443)\"))",
        "exception",
        "requests/adapters.py",
    ),
    ("huggingface_hub.errors.GatedRepoError: 401 Client Error.", "exception", "huggingface_hub/utils/_http.py"),
    ("omegaconf.errors.ConfigAttributeError: Key 'rollout' is not in struct", "exception", "omegaconf/base.py"),
    ("hydra.errors.InstantiationException: Error in call to target", "exception", "hydra/_internal/instantiate"),
    ("KeyboardInterrupt", "exception", "CPython signal handling"),
    ("SystemExit: 2", "exception", "CPython sys.exit"),
    ("Exception: rollout worker returned no samples", "exception", "raise Exception(...)"),
    ('Exception in thread "main" java.lang.OutOfMemoryError: Java heap space', "exception", "JVM default handler"),
    ("Exception in thread Thread-3 (_loop):", "exception", "CPython threading.excepthook"),
    ("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory", "exception", "jaxlib xla_client"),
    # libstdc++'s verbose terminate handler
    ("terminate called after throwing an instance of 'c10::Error'", "cxx-abort", "libstdc++ vterminate.cc"),
    ("terminate called after throwing an instance of 'std::runtime_error'", "cxx-abort", "libstdc++ vterminate.cc"),
    ("terminate called without an active exception", "cxx-abort", "libstdc++ vterminate.cc"),
    ("terminate called recursively", "cxx-abort", "libstdc++ vterminate.cc"),
    ("  what():  CUDA driver error: out of memory", "cxx-abort", "libstdc++ vterminate.cc + c10 what()"),
    ("  what():  [Rank 0] Watchdog caught collective operation timeout", "cxx-abort", "ProcessGroupNCCL.cpp"),
    # Rust and Go runtimes
    ("thread 'main' panicked at src/lib.rs:42:9:", "panic", "Rust std panicking.rs (1.73+)"),
    (
        "thread 'tokio-runtime-worker' panicked at 'called `Option::unwrap()` on a `None` value'",
        "panic",
        "Rust std panicking.rs",
    ),
    ("thread '<unnamed>' panicked at tokenizers/src/tokenizer/mod.rs:10:5", "panic", "Rust std via tokenizers"),
    ("panic: runtime error: invalid memory address or nil pointer dereference", "panic", "Go runtime/panic.go"),
    ("fatal error: all goroutines are asleep - deadlock!", "panic", "Go runtime"),
    # severity words at the front
    ("ERROR: Could not find a version that satisfies the requirement vllm==9.9", "severity", "pip/_internal"),
    ("FATAL: exception not rethrown", "severity", "glibc pthread cancellation"),
    ("[ERROR] rollout server crashed", "severity", "bracketed level (many launchers)"),
    ("CRITICAL: worker lost", "severity", "Python logging basicConfig format"),
    ("Error: Cannot find module 'x'", "severity", "Node.js"),
    ("Fatal error: out of memory", "severity", "generic C runtime"),
    ("fatal: not a git repository (or any of the parent directories): .git", "severity", "git"),
    ("error: RPC failed; curl 56 GnuTLS recv error (-9)", "severity", "git over HTTPS"),
    ("ERROR! Session/line number was not unique in database.", "severity", "IPython history"),
    # result codes
    ("CUDA_ERROR_OUT_OF_MEMORY", "result-code", "CUDA driver API cuda.h CUresult"),
    ("cuMemCreate failed with CUDA_ERROR_OUT_OF_MEMORY (2)", "result-code", "CUDA driver API"),
    (
        "cudaErrorIllegalAddress: an illegal memory access was encountered",
        "result-code",
        "CUDA runtime cudaGetErrorName",
    ),
    (
        "RuntimeError: [torch_memory_saver.cpp] CUresult error: result=2 file=csrc/torch_memory_saver.cpp",
        "exception",
        "torch_memory_saver",
    ),
    (
        "x CUresult error: result=2 file=csrc/torch_memory_saver.cpp func=cu_mem_create line=104",
        "result-code",
        "torch_memory_saver",
    ),
    ("cuBLAS call failed with CUBLAS_STATUS_EXECUTION_FAILED", "result-code", "cublas_api.h cublasStatus_t"),
    ("got CUDNN_STATUS_NOT_SUPPORTED from cudnnConvolutionForward", "result-code", "cudnn.h cudnnStatus_t"),
    (
        "misc/socket.cc:50 NCCL WARN Net : Connection closed by remote peer; ncclRemoteError",
        "result-code",
        "NCCL nccl.h ncclResult_t",
    ),
    ("init.cc:1234 -> ncclSystemError", "result-code", "NCCL nccl.h ncclResult_t"),
    (
        "in ncclCommInitRank: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
        "result-code",
        "NCCL",
    ),
    ("[Errno 28] No space left on device: '/ckpt/global_step_100'", "result-code", "CPython OSError str"),
    ("write failed, errno=5", "result-code", "C errno report"),
    (
        "NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219, unhandled system error",
        "result-code",
        "c10d NCCLUtils.hpp",
    ),
    # retries given up
    (
        "HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url: /api/models/x",
        "retries",
        "urllib3 MaxRetryError",
    ),
    ("request to http://localhost:30000/generate failed: retries exhausted", "retries", "HTTP client retry loop"),
    ("giving up after 5 attempts: connection refused", "retries", "backoff-style retry loop"),
    (
        "Received HTTP 503 from http://127.0.0.1:8000/v1/completions, retrying in 2s",
        "retries",
        "HTTP client retry loop",
    ),
    ("status code 429 Too Many Requests; will retry", "retries", "HTTP client retry loop"),
    # argparse usage errors (argparse.ArgumentParser.error: '%(prog)s: error: %(message)s')
    ("train.py: error: unrecognized arguments: --grad_accum_dtype bf16", "usage", "CPython argparse.error"),
    (
        "vllm: error: argument --gpu-memory-utilization: invalid float value: 'high'",
        "usage",
        "CPython argparse via vllm CLI",
    ),
    (
        "python -m openrlhf.cli.train_ppo_ray: error: the following arguments are required: --pretrain",
        "usage",
        "argparse",
    ),
    ("torchrun: error: argument --nproc_per_node: expected one argument", "usage", "argparse via torchrun"),
    # shell and kernel
    ("Killed", "shell", "bash job report of a SIGKILLed foreground job"),
    ("Segmentation fault (core dumped)", "shell", "bash job report of SIGSEGV"),
    ("Bus error (core dumped)", "shell", "bash job report of SIGBUS"),
    ("Aborted (core dumped)", "shell", "bash job report of SIGABRT"),
    ("Illegal instruction (core dumped)", "shell", "bash job report of SIGILL"),
    ("Floating point exception", "shell", "bash job report of SIGFPE"),
    ("Terminated", "shell", "bash job report of SIGTERM"),
    ("run.sh: line 12: 48213 Killed                  python train.py", "shell", "bash non-interactive job report"),
    (
        "/bin/bash: line 1: 9921 Segmentation fault      (core dumped) python -m verl.trainer.main_ppo",
        "shell",
        "bash job report",
    ),
    ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", "kernel", "NVIDIA driver NVRM Xid"),
    (
        "NVRM: Xid (PCI:0000:18:00): 48, pid=5678, An uncorrectable double bit error (DBE) has been detected",
        "kernel",
        "NVRM Xid 48",
    ),
    (
        "pcieport 0000:00:03.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0",
        "kernel",
        "Linux drivers/pci/pcie/aer.c",
    ),
    (
        "pcieport 0000:00:01.0: AER: Multiple Uncorrected (Non-Fatal) error received: 0000:01:00.0",
        "kernel",
        "Linux aer.c",
    ),
    (
        "Out of memory: Killed process 12345 (python) total-vm:123456kB, anon-rss:1234kB",
        "kernel",
        "Linux mm/oom_kill.c",
    ),
    (
        "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,task=python,pid=1",
        "kernel",
        "Linux mm/oom_kill.c",
    ),
    ("Memory cgroup out of memory: Killed process 4242 (ray::RolloutWorker)", "kernel", "Linux mm/oom_kill.c (cgroup)"),
    ("NVRM: nv-caps-imex failed to create channel0.", "kernel", "open-gpu-kernel-modules nv-caps-imex.c"),
    ("slurmstepd: fatal: Failed to read cgroup state from slurmd", "severity", "slurm src/slurmd/slurmstepd"),
    ("srun: fatal: failed to initialize compress plugin", "severity", "slurm src/srun"),
    (
        "node01:12345:12400 [0] bootstrap.cc:126 NCCL WARN Bootstrap : no socket interface found",
        "severity",
        "NVIDIA/nccl src/bootstrap.cc (WARN)",
    ),
    (
        "/pytorch/aten/src/ATen/native/cuda/Loss.cu:166: kernel: block: [1,0,0], thread: [1,0,0] "
        "Assertion `INDEX < N_CLASSES` failed.",
        "assert",
        "pytorch c10/macros/Macros.h CUDA_KERNEL_ASSERT",
    ),
    (
        "python3: malloc.c:2379: sysmalloc: Assertion `(old_top == initial_top (av) && old_size == 0)' failed.",
        "assert",
        "glibc assert.c",
    ),
    ("Status: Failed, Reason: Evicted", "orchestrator", "kubernetes kubectl describe pod"),
    (
        ":0:rocdevice.cpp            :2984: 159730272363 us: [pid:403868 tid:0x7f37b81ff640] Callback: Queue "
        "0x7ef728200000 aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to "
        "access memory beyond the largest legal address. code: 0x29",
        "result-code",
        "ROCm clr rocdevice.cpp + hsa.h status string",
    ),
    (
        "CUDA Error: misaligned address (716) /code/include/attention/prefill.cuh: line 1918",
        "result-code",
        "flashinfer utils.cuh",
    ),
    (
        "Memory access fault by GPU node-2 (Agent handle: 0x56468ab3bb50) on address 0x7fe55fb03000. Reason: Page not present or supervisor privilege.",
        "gpu-fault",
        "ROCm clr / ROCR-Runtime",
    ),
    ("CUDA Exception: Warp Illegal Address", "gpu-fault", "cuda-gdb"),
    ("========= Invalid __global__ read of size 4 bytes", "gpu-fault", "compute-sanitizer memcheck"),
    (
        "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 timeout, signaled seq=16060, emitted seq=16062",
        "gpu-fault",
        "Linux drm_print.h DRM_ERROR",
    ),
    (
        "  Warning  Evicted  2m  kubelet  The node was low on resource: memory.",
        "orchestrator",
        "kubernetes pkg/kubelet/eviction",
    ),
]

# Wrappers a paste tool or a progress bar put in front of an error line: the shape shows through.
WRAPPED: list[tuple[str, str]] = [
    ("123: RuntimeError: something went wrong in the loader", "exception"),
    ("  42 | ValueError: bad shape", "exception"),
    ("12:03:04 ValueError: invalid literal for int() with base 10: 'x'", "exception"),
    ("12:03:04.123 terminate called after throwing an instance of 'c10::Error'", "cxx-abort"),
    ("> OSError: [Errno 28] No space left on device", "exception"),
    ("> > KeyError: 'reward'", "exception"),
    (
        " 10%|█         | 10/100 [00:10<01:30,  1.00it/s]RuntimeError: CUDA error: device-side assert triggered",
        "exception",
    ),
    (
        "Generating: 45%|████▌     | 9/20 [00:03<00:04,  2.61it/s]terminate called without an active exception",
        "cxx-abort",
    ),
    ("100%|██████████| 8/8 [00:01<00:00,  5.00it/s] Killed", "shell"),
]

# Lines healthy runs print: the words without the form.
NOT_ERRORS: list[str] = [
    "error_file: <N/A>",
    "  error_rate: 0.0",
    "Epoch 3: 0 errors, 12 warnings",
    "Exception ignored in: <function _releaseLock at 0x7f>",
    "UserWarning: TypedStorage is deprecated.",
    "INFO 06-20 09:14:48 [core.py:515] no failed requests",
    "training finished: killed_by_user=False",
    "retrying connection to GCS (attempt 1 of 5)",
    "NCCL INFO Channel 00/02 : 0[0] -> 1[1] via P2P/IPC",
    "loss=0.231 reward=0.84 step=120",
    "Saving checkpoint to /home/user/ckpt/global_step_100",
    "Warning: The default process group has not been destroyed",
    "the errors module is deprecated",
    "[INFO] fatal_errors_total=0",
    "is_critical: false",
]


@pytest.mark.parametrize(
    ("line", "shape", "source"), ERROR_LINES, ids=[f"{s}:{i}" for i, (_l, s, _src) in enumerate(ERROR_LINES)]
)
def test_error_lines_have_their_shape(line: str, shape: str, source: str) -> None:
    assert error_shape(line) == shape, source


@pytest.mark.parametrize(("line", "shape"), WRAPPED)
def test_wrappers_are_peeled_before_the_shape_is_judged(line: str, shape: str) -> None:
    assert error_shape(line) == shape
    assert unwrap(line) != line


@pytest.mark.parametrize("line", NOT_ERRORS)
def test_lines_that_only_mention_the_words_have_no_shape(line: str) -> None:
    assert error_shape(line) is None


def test_a_line_level_from_the_prefix_is_a_severity() -> None:
    assert error_shape("rollout server crashed", "ERROR") == "severity"
    assert error_shape("rollout server crashed", "WARNING") is None


@pytest.mark.parametrize(("line", "shape", "_source"), ERROR_LINES + [(w, s, "wrapped") for w, s in WRAPPED])
def test_the_line_probe_finds_every_error_line(line: str, shape: str, _source: str) -> None:
    # The probe picks the candidates; a shape it cannot see is never judged.
    assert observer_pattern(PROBE).compiled.search(line), line


def test_hostile_lines_are_judged_without_backtracking() -> None:
    # Every repeat in the shapes is bounded or literal-led; these would take hours otherwise.
    for hostile in ("a." * 500_000, "A" * 1_000_000 + "Error", "> " * 300_000 + "x", "1" * 1_000_000):
        assert error_shape(hostile) is None


@pytest.mark.parametrize(("line", "shape", "source"), ERROR_LINES + [(w, s, "wrapped") for w, s in WRAPPED])
def test_a_paste_of_only_that_line_is_never_silent(tmp_path: Path, line: str, shape: str, source: str) -> None:
    log = tmp_path / "paste.log"
    log.write_text(line + "\n", encoding="utf-8")
    report = diagnose(log)
    assert report.diagnoses, f"no failure recognised in a paste of {line!r} ({source})"
    assert report.top is not None and report.top.evidence


def test_a_job_that_went_on_after_an_error_line_is_healthy(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    lines = ["ERROR: retries exhausted for POST http://localhost:8000/v1/completions"]
    lines += [f"step {i} loss {1 / (i + 1):.3f} reward 0.5" for i in range(30)] + ["training finished"]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert not diagnose(log).diagnoses


# Lines that name their cause in a form the knowledge base now knows: the specific id, not the fallback.
SPECIFIC: list[tuple[str, str]] = [
    ("  what():  CUDA driver error: out of memory", "cuda-oom"),
    ("cuMemCreate failed: CUDA_ERROR_OUT_OF_MEMORY (2)", "cuda-oom"),
    ("RuntimeError: cudaMalloc failed: cudaErrorMemoryAllocation", "cuda-oom"),
    ("train.py: error: unrecognized arguments: --grad_accum_dtype bf16", "config-error"),
    ("vllm: error: argument --gpu-memory-utilization: invalid float value: 'high'", "config-error"),
]


@pytest.mark.parametrize(("line", "expected"), SPECIFIC)
def test_a_known_cause_behind_an_error_shape_is_named(tmp_path: Path, line: str, expected: str) -> None:
    log = tmp_path / "paste.log"
    log.write_text(line + "\n", encoding="utf-8")
    top = diagnose(log).top
    assert top is not None and top.id == expected


def test_rays_event_loop_statistics_are_counts_not_errors() -> None:
    stats = (
        "\tObservabilityPubSubService.grpc_server.ReportJobError - 2 total (0 active), Execution time: mean = 0.12ms"
    )
    assert error_shape(stats) is None
    assert error_shape("ray.exceptions.RayTaskError: ReportJobError - failed") is not None


# --- the catalogue's shapes (issue 25 item 1) ---------------------------------------------------

#: Each (project, how it is emitted) of the message catalogue (fixtures/messages, mined from the
#: projects' sources) is one error-line shape: `raise omegaconf.errors.X`, vLLM's `logger.error`,
#: Ray's C++ `RAY_LOG(FATAL)`, a CUDA kernel assert, `NCCL WARN`, a kernel `pr_err`... The line of
#: its first entry must have an error shape, except these, whose form says nothing by itself:
KNOWN_UNSHAPED: dict[tuple[str, str], str] = {
    (
        "huggingface_hub",
        "raise BadParameter",
    ): "click prints its own 'Error: ...' for it; the bare class line is the miner's",
    ("kubernetes", "status message (message)"): "kubectl's 'Message:' field: words only, the Reason: line is the shape",
    ("kubernetes", "status message (nodeShutdownMessage)"): "kubectl's 'Message:' field, as above",
    ("linux-kernel", "kernel panic"): "a panic's free-text detail line",
    ("linux-kernel", "kernel pr_emerg"): "dmesg carries no level: the words decide",
    ("linux-kernel", "kernel pr_crit"): "dmesg carries no level: the words decide",
    ("linux-kernel", "kernel pci_err"): "dmesg carries no level: the words decide",
    ("linux-kernel", "kernel pci_info"): "an AER detail line (info level)",
    ("linux-kernel", "kernel pci_warn"): "a DPC warning",
    ("linux-kernel", "kernel pr_warn"): "a kernel warning",
    ("linux-kernel", "kernel pr_warn_ratelimited"): "a kernel warning",
    ("linux-kernel", "kernel pr_info"): "a kernel info line",
    ("linux-kernel", "kernel pr_cont"): "the continuation of a previous kernel line",
    ("nccl", "NCCL INFO"): "NCCL's INFO channel: its IB recovery messages are info by level",
    ("nvidia-xid", "nv_printf(NV_DBG_ERRORS)"): "the driver's error channel has no marker in dmesg (NVRM: + words)",
    ("pytorch-cpp", "LOG(WARNING)"): "a warning by its level",
    ("pytorch-cpp", "C10D_WARNING (c10d log)"): "a warning by its level",
    ("sglang", "logger.error"): "SGLang's default log format prints no level",
}


def _catalogue_shapes() -> dict[tuple[str, str], str]:
    import yaml

    shapes: dict[tuple[str, str], str] = {}
    for path in sorted((Path(__file__).parent.parent / "fixtures" / "messages").glob("*.yaml")):
        if path.name == "first_pass.yaml":
            continue
        for row in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
            shapes.setdefault((str(row["project"]), str(row["kind"])), str(row["line"]))
    return shapes


CATALOGUE_SHAPES = _catalogue_shapes()


def test_the_catalogue_holds_at_least_300_shapes() -> None:
    assert len(CATALOGUE_SHAPES) >= 300
    assert set(KNOWN_UNSHAPED) <= set(CATALOGUE_SHAPES), set(KNOWN_UNSHAPED) - set(CATALOGUE_SHAPES)


@pytest.mark.parametrize("key", sorted(CATALOGUE_SHAPES), ids=lambda k: f"{k[0]}:{k[1]}")
def test_every_catalogue_shape_is_an_error_shape(key: tuple[str, str]) -> None:
    from rlfix.match.normalize import normalize

    lines = [normalize(text) for text in CATALOGUE_SHAPES[key].splitlines()]
    shaped = any(error_shape(line.message, line.level) for line in lines)
    assert shaped or key in KNOWN_UNSHAPED, CATALOGUE_SHAPES[key]


def test_a_line_its_program_logged_below_error_has_no_error_shape() -> None:
    # Seen in the Ray trial: the raylet's warning that a gone worker's process group could not be
    # signalled carries `errno=3` and "failed ... process group", and a concept took it for a
    # distributed-launch failure of the job whose actor was SIGKILLed.
    from rlfix.match.normalize import normalize

    line = normalize(
        "[2026-11-26 15:59:53,881 W 8165 8165] (raylet) node_manager.cc:129: DisconnectClient: failed to send "
        "SIGTERM to process group 10006: No such process, errno=3 worker_id=3d7f16d5"
    )
    assert line.level == "WARNING" and error_shape(line.message, line.level) is None
    assert error_shape(line.message) == "result-code"  # the same words with no level are judged by their form
