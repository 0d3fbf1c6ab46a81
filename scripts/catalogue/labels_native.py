"""Expert labels of the native catalogue, as data: ordered rules, then a hand table, then the generic ids.

Each rule is (name, conditions, id): conditions map a field of the entry (`text` = template and
shown line together, `template`, `kind`, `source`, `project`) to a regex that must match
(case-insensitive); the first rule whose conditions all hold gives the id, and its name is the
`why`. `HAND` overrides the rules for single entries ("project source" -> (id, why)). An entry no
rule or hand entry names gets `python-exception` when it reaches Python as an exception (its line
starts with an exception class) and `unrecognized-failure` otherwise.

The rules read only the message, how it is emitted and where it comes from; they were written from
the sources and LABELLING-ids.md, never from rlfix's patterns or output.
"""

from __future__ import annotations

import re

Rule = tuple[str, dict[str, str], str]

_XID_HW = (
    r"Xid (48|58|61|62|63|64|74|79|92|93|94|95|110|119|120|121|136|137|140|143|144|145|146|147|148|149|150|154|155|156|157|158"
    r"|160|161|164|165|166|167|168|169|170|171|172|173|175|176) "
)
_XID_HW_NAMES = r"nvErrorLog \((ROBUST_CHANNEL_GPU_ECC_DBE|NVLINK\w*|FB_MEMORY_ERROR|INFOROM\w*|ROBUST_CHANNEL_(UN)?CONTAINED_ERROR|GSP\w*|C2C\w*|UNRECOVERABLE\w*|UNCORRECTABLE\w*|PMU\w*|ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS|EXCESSIVE_SBE_INTERRUPTS|GPU_RECOVERY_ACTION_CHANGED|RESOURCE_RETIREMENT\w*|PCIE\w*|MEMORY_SUBSYSTEM_ERROR|ALI_TRAINING_FAIL)\)"

RULES: list[Rule] = [
    # --- CUDA runtime and driver codes (named by the enum), most specific first
    ("cuda code: out of memory", {"kind": r"\((cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY) "}, "cuda-oom"),
    ("cuda code: device-side assert", {"kind": r"\((cudaErrorAssert|CUDA_ERROR_ASSERT) "}, "cuda-device-side-assert"),
    (
        "cuda code: illegal or misaligned address",
        {
            "kind": r"\((cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS|cudaErrorMisalignedAddress|CUDA_ERROR_MISALIGNED_ADDRESS|cudaErrorInvalidAddressSpace|CUDA_ERROR_INVALID_ADDRESS_SPACE) "
        },
        "cuda-illegal-memory-access",
    ),
    (
        "cuda code: driver too old or no kernel for this GPU (invalid device function: none built for this arch)",
        {
            "kind": r"\((cudaErrorInsufficientDriver|cudaErrorCallRequiresNewerDriver|CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER|cudaErrorNoKernelImageForDevice|CUDA_ERROR_NO_BINARY_FOR_GPU|cudaErrorUnsupportedPtxVersion|CUDA_ERROR_UNSUPPORTED_PTX_VERSION|cudaErrorSystemDriverMismatch|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|cudaErrorCompatNotSupportedOnDevice|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE|cudaErrorInvalidKernelImage|CUDA_ERROR_INVALID_IMAGE|cudaErrorInvalidPtx|CUDA_ERROR_INVALID_PTX|cudaErrorInvalidDeviceFunction) "
        },
        "cuda-driver-or-arch-mismatch",
    ),
    (
        "cuda code: uncorrectable ECC / NVLink / contained hardware error",
        {
            "kind": r"\((cudaErrorECCUncorrectable|CUDA_ERROR_ECC_UNCORRECTABLE|cudaErrorNvlinkUncorrectable|CUDA_ERROR_NVLINK_UNCORRECTABLE|cudaErrorContained|CUDA_ERROR_CONTAINED) "
        },
        "gpu-hardware-fault",
    ),
    (
        "cuda code: stub libcuda loaded, or the PTX JIT compiler library missing",
        {
            "kind": r"\((cudaErrorStubLibrary|CUDA_ERROR_STUB_LIBRARY|cudaErrorJitCompilerNotFound|CUDA_ERROR_JIT_COMPILER_NOT_FOUND) "
        },
        "cuda-runtime-library-missing",
    ),
    # --- device-side asserts of PyTorch's CUDA kernels (the kernel's own assertion line)
    (
        "device assert of multinomial sampling (nan, inf or negative probability)",
        {"kind": r"CUDA_KERNEL_ASSERT", "source": r"MultinomialKernel"},
        "sampling-invalid-probabilities",
    ),
    (
        "device assert on an index against its table (index_select / embedding / gather)",
        {
            "kind": r"CUDA_KERNEL_ASSERT",
            "template": r"index out of bounds|srcIndex < srcSelectDimSize|dstIndex < dstAddDimSize|idx_dim >= 0 && idx_dim < index_size|idx < numel",
        },
        "cuda-index-out-of-bounds",
    ),
    ("any other device-side assert of a CUDA kernel", {"kind": r"CUDA_KERNEL_ASSERT"}, "cuda-device-side-assert"),
    # --- GPU hardware (Xid, driver prints, AER)
    ("Xid code NVIDIA classes as hardware (ECC, NVLink, bus, GSP, row remap)", {"kind": _XID_HW}, "gpu-hardware-fault"),
    ("driver error log of a hardware Xid", {"kind": _XID_HW_NAMES}, "gpu-hardware-fault"),
    (
        "Xid 13/31: graphics exception or MMU fault of the application's kernel",
        {"kind": r"Xid (13|31) |nvErrorLog \((ROBUST_CHANNEL_GR_EXCEPTION|ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT)\)"},
        "cuda-illegal-memory-access",
    ),
    ("GPU power cables not connected", {"project": "nvidia-xid", "template": r"power cables"}, "gpu-hardware-fault"),
    (
        "vGPU guest driver does not match the host driver",
        {"project": "nvidia-xid", "template": r"Guest driver is incompatible with host driver"},
        "cuda-driver-or-arch-mismatch",
    ),
    ("GPU fell off the bus", {"text": r"fallen off the bus|fell off the bus"}, "gpu-hardware-fault"),
    (
        "uncorrectable ECC / double bit error",
        {"text": r"uncorrectable (ECC|DRAM|SRAM)|double bit (ECC )?error|\bDBE\b"},
        "gpu-hardware-fault",
    ),
    (
        "NVRM: GPU not supported by this driver / client-kernel API mismatch",
        {
            "project": "nvidia-xid",
            "text": r"API mismatch|installed in this system is not supported|NVIDIA driver release|NVRM version",
        },
        "cuda-driver-or-arch-mismatch",
    ),
    (
        "PCIe AER error report (uncorrectable case shown)",
        {
            "source": r"drivers/pci/pcie/aer\.c",
            "template": r"Bus Error|error message received|error status|Uncorrect|Agent is reported first|error details",
        },
        "gpu-hardware-fault",
    ),
    (
        "PCIe DPC containment (link brought down)",
        {"source": r"drivers/pci/pcie/dpc\.c", "template": r"containment event"},
        "gpu-hardware-fault",
    ),
    # --- host memory: kernel OOM killer, cgroup OOM, Kubernetes OOMKilled, Slurm oom-kill
    (
        "kernel OOM killer",
        {
            "source": r"mm/(oom_kill|memcontrol)",
            "template": r"Killed process|Out of memory|oom-kill|invoked oom-killer|Memory cgroup|^memory:|^swap:|memory\+swap|Tasks state|reap|OOM victim|oom killer .* pinned|uid tgid total_vm|memory\.oom\.group",
        },
        "host-oom-sigkill",
    ),
    (
        "Slurm cgroup OOM kill",
        {"project": "slurm", "template": r"Detected .*oom_kill event|OOM Killed|: Out Of Memory"},
        "host-oom-sigkill",
    ),
    (
        "srun task killed by SIGKILL (OOM killer unless the log says otherwise)",
        {"project": "slurm", "kind": r"strsignal \(Killed\)"},
        "host-oom-sigkill",
    ),
    (
        "srun task died of SIGSEGV/SIGBUS",
        {"project": "slurm", "kind": r"strsignal \((Segmentation fault|Bus error)\)"},
        "native-crash",
    ),
    (
        "srun task ended by SIGTERM/SIGHUP from outside",
        {"project": "slurm", "kind": r"strsignal \((Terminated|Hangup)\)"},
        "job-cancelled-by-scheduler",
    ),
    ("Kubernetes OOMKilled", {"project": "kubernetes", "text": r"OOMKilled"}, "host-oom-sigkill"),
    # --- schedulers ending the job
    (
        "Slurm cancelled the job (time limit, preemption, node failure, requeue, signal)",
        {"project": "slurm", "text": r"CANCELLED AT .* DUE (TO|to) (TIME LIMIT|PREEMPTION|NODE|JOB REQUEUE|SIGNAL)"},
        "job-cancelled-by-scheduler",
    ),
    (
        "Kubernetes eviction (node low on a resource)",
        {
            "project": "kubernetes",
            "template": r"^The node was low on resource|^The node had condition|^Container .* (was using|exceeded its)|^Pod ephemeral local storage|^Usage of EmptyDir|Reason: Evicted",
        },
        "job-cancelled-by-scheduler",
    ),
    (
        "Kubernetes preemption",
        {"project": "kubernetes", "template": r"^Preempted in order|Reason: Preempting|^Preempted by"},
        "job-cancelled-by-scheduler",
    ),
    (
        "Kubernetes node shutdown",
        {"project": "kubernetes", "template": r"^node is shutting down|^Node is shutting|Reason: Shutdown"},
        "job-cancelled-by-scheduler",
    ),
    (
        "Kubernetes active deadline exceeded",
        {"project": "kubernetes", "text": r"DeadlineExceeded|longer than the specified deadline"},
        "job-cancelled-by-scheduler",
    ),
    (
        "Slurm: the job's node failed",
        {"project": "slurm", "template": r"^Node failure on"},
        "job-cancelled-by-scheduler",
    ),
    (
        "Slurm could not allocate host memory",
        {
            "project": "slurm",
            "template": r"memory allocation failure|Failure to allocate memory|memory couldn't be allocated|not enough memory",
        },
        "host-memory-error",
    ),
    # --- native crashes
    (
        "kernel segfault / GP fault / invalid opcode line",
        {
            "project": "linux-kernel",
            "text": r"segfault at|general protection|invalid opcode|trap divide error|potentially unexpected fatal signal|traps:",
        },
        "native-crash",
    ),
    # --- Ray
    (
        "Ray memory monitor killed a worker",
        {
            "project": "ray-cpp",
            "template": r"running low on memory|memory usage threshold|low on memory|killing (a |the )?worker.*memory|kill.*due to (the )?memory|OOM kill|worker.*killed.*memory|MemoryMonitor|crashes due to OOM|address the out of memory issue|Workers killed on this node|task failed due to oom",
        },
        "ray-oom-killer",
    ),
    (
        "Ray out of disk (spilling / fallback allocation: OutOfDiskError)",
        {"project": "ray-cpp", "text": r"OutOfDisk|running out of disk|Out of disk space|likely out of disk space|Local disk is full"},
        "disk-full",
    ),
    ("Ray object store full (ObjectStoreFull status)", {"project": "ray-cpp", "kind": r"Status::ObjectStoreFull"}, "ray-object-store-full"),
    (
        "Ray object store full",
        {
            "project": "ray-cpp",
            "template": r"ObjectStoreFull|object store is full|out of object store|cannot (create|allocate) object.*(full|space)|plasma.*full|object store because it is full|does not fit in the plasma store",
        },
        "ray-object-store-full",
    ),
    (
        "Ray spilling objects (progress report)",
        {"project": "ray-cpp", "template": r"Spilled \{\} MiB|spilling objects to"},
        "ray-object-spilling",
    ),
    ("Ray runtime env setup failed", {"project": "ray-cpp", "template": r"runtime[_ ]env"}, "ray-runtime-env-failed"),
    (
        "Ray node died / missed health checks",
        {
            "project": "ray-cpp",
            "template": r"node .*(is |was |marked |has been marked )dead|node.*died|raylet.*(died|dead|failed)|health check.*fail|missed too many heartbeats|NodeDied|node was (terminated unexpectedly|preempted)|consider this node to be dead|mistakenly been marked as dead|Node is already dead",
        },
        "ray-node-died",
    ),
    (
        "Ray cannot reach the GCS",
        {
            "project": "ray-cpp",
            "template": r"(connect|reach|connection).*\bGCS\b|\bGCS\b.*(unreachable|not reachable|not available|connection|timed? ?out)|gcs_client.*fail|GCS server is dead|accessing GCS after it has restarted",
        },
        "ray-cluster-connection",
    ),
    (
        "Ray worker or actor died",
        {
            "project": "ray-cpp",
            "template": r"worker.*(died|exit(ed|s) unexpectedly|crashed|was killed)|actor.*(died|dead)|ActorDied|WorkerDied|of dead actor|actor (is restarting|was restarted)",
        },
        "ray-actor-died",
    ),
    (
        "Ray resources cannot be scheduled",
        {"project": "ray-cpp", "template": r"cannot be scheduled|no node .*resources|cannot provide the r"},
        "ray-unschedulable",
    ),
    # --- NCCL and c10d
    (
        "PyTorch NCCL watchdog / heartbeat timeout",
        {
            "project": "pytorch-cpp",
            "source": r"c10d/(ProcessGroupNCCL|NCCLUtils|FlightRecorder)",
            "template": r"Watchdog caught collective operation timeout|Heartbeat monitor timed out|watchdog got stuck|collective operation timeout|timed out in blocking wait|dump signal due to a collective timeout|ran for .* milliseconds before timing out|Timeout at NCCL work",
        },
        "nccl-timeout",
    ),
    (
        "PyTorch NCCL error (DistBackendError, NCCL error, aborted communicator)",
        {
            "project": "pytorch-cpp",
            "source": r"c10d/(ProcessGroupNCCL|NCCLUtils)|csrc/cuda/nccl\.cpp",
            "text": r"NCCL error|communicator encountered error|NCCL operations have failed|NCCL timeout when waiting|communicator was aborted|async exception|Stack trace of the failed collective: |retrieving ncclUniqueId|application crash on rank|watchdog thread terminated|unhandled (cuda|system) error|remote process exited|ncclCommAbort|Failed to (create|initialize) .*communicator",
        },
        "nccl-error",
    ),
    (
        "NCCL: the library is older than the one the program was built with",
        {"project": "nccl", "template": r"library is too old|compiled with too old version of NCCL"},
        "package-version-mismatch",
    ),
    (
        "NCCL: the CUDA driver is too old for the feature",
        {"project": "nccl", "template": r"requires CUDA driver [\d.]+ or later"},
        "cuda-driver-or-arch-mismatch",
    ),
    (
        "NCCL: several ranks on one GPU (layout does not fit the GPUs)",
        {"project": "nccl", "template": r"Multiple Ranks are using the same GPU|Duplicate GPU detected"},
        "config-error",
    ),
    (
        "NCCL notice that it recovers from (non-fatal event, a setting adjusted or ignored)",
        {
            "project": "nccl",
            "template": r"non-fatal|GID table changed|setting (it )?to \{\}|^Ignoring|Unsetting|Continue\.$|^Warning:",
        },
        "unrecognized-failure",
    ),
    ("NCCL's own error strings and WARN lines", {"project": "nccl"}, "nccl-error"),
    # --- PyTorch C++ specifics
    (
        "CUDA caching allocator out of memory",
        {"text": r"CUDA out of memory|OutOfMemoryError|cudaErrorMemoryAllocation|out of memory.*(GPU|CUDA|device)"},
        "cuda-oom",
    ),
    (
        "CPU allocator could not allocate",
        {
            "text": r"DefaultCPUAllocator|not enough memory|std::bad_alloc|can't allocate memory|failed to allocate .* bytes"
        },
        "host-memory-error",
    ),
    ("device-side assert", {"text": r"device-side assert"}, "cuda-device-side-assert"),
    (
        "index out of range in self (embedding / index_select)",
        {"text": r"index out of range in self|srcIndex < srcSelectDimSize|indexSelect"},
        "cuda-index-out-of-bounds",
    ),
    (
        "invalid probabilities for sampling",
        {"text": r"probability tensor contains either|invalid multinomial distribution"},
        "sampling-invalid-probabilities",
    ),
    (
        "tensors on different devices",
        {
            "text": r"\bsame (type of )?device\b|on different devices|found at least two devices|Expected .* on device .* but got|different device than|expected out tensor to be on device"
        },
        "device-mismatch",
    ),
    ("no NVIDIA driver", {"text": r"Found no NVIDIA driver|no NVIDIA driver"}, "cuda-runtime-library-missing"),
    ("no CUDA GPUs visible", {"text": r"No CUDA GPUs are available"}, "ray-gpu-not-visible"),
    (
        "driver too old / arch not supported",
        {
            "text": r"no kernel image is available|driver version is insufficient|NVIDIA driver on your system is too old|not compatible with the current PyTorch|compute capability"
        },
        "cuda-driver-or-arch-mismatch",
    ),
    (
        "cuBLAS / cuDNN status",
        {
            "text": r"CUBLAS_STATUS|cuBLAS (error|failed)|when calling cublas|CUDNN_STATUS|cuDNN error|cusolver.*fail|CUSOLVER_STATUS"
        },
        "cublas-cudnn-failure",
    ),
    (
        "NaN/Inf found",
        {"text": r"\bNaN\b.*(detected|found)|(detected|found) .*\bNaN\b|returned nan values"},
        "nan-or-inf-loss",
    ),
    (
        "rendezvous/MASTER_PORT already in use",
        {
            "text": r"address already in use|EADDRINUSE|server socket has failed to bind|failed to listen on any local network address|port .*in use"
        },
        "dist-port-in-use",
    ),
    (
        "launcher environment missing / process group not initialised",
        {
            "text": r"environment variable .*expected, but not set|Default process group has not been initialized|MASTER_ADDR|MASTER_PORT.*not set"
        },
        "dist-launch-misconfigured",
    ),
    # --- cross-cutting system errors named in the text itself
    ("no space left on device", {"template": r"No space left on device|ENOSPC|disk (is )?full"}, "disk-full"),
    ("permission denied", {"template": r"Permission denied|\bEACCES\b"}, "permission-denied"),
    (
        "shared library cannot be loaded",
        {
            "template": r"cannot open shared object|libcuda\.so|libnvidia-ml\.so.*(not found|fail)|Failed to (load|dlopen|open) .*lib(cuda|nvidia-ml|nccl|cudart)"
        },
        "cuda-runtime-library-missing",
    ),
    ("undefined symbol (ABI mismatch)", {"template": r"undefined symbol"}, "package-version-mismatch"),
]

#: Single entries the rules cannot decide: "project source" -> (id, why).
HAND: dict[str, tuple[str, str]] = {
    "linux-kernel mm/oom_kill.c:805": (
        "unrecognized-failure",
        "OOM killer enabled again after suspend: a notice, no kill",
    ),
    "linux-kernel mm/oom_kill.c:842": ("unrecognized-failure", "OOM killer disabled for suspend: a notice, no kill"),
    "linux-kernel mm/oom_kill.c:1202": (
        "unrecognized-failure",
        "a kernel bug report about VM_FAULT_OOM, no process killed",
    ),
    "ray-cpp src/ray/core_worker/actor_creator.h:87": (
        "ray-cluster-connection",
        "actor registration timed out because the GCS is dead or overloaded",
    ),
    "ray-cpp src/ray/core_worker/actor_manager.cc:95": (
        "ray-cluster-connection",
        "getting an actor handle timed out: GCS dead or overloaded",
    ),
    "ray-cpp src/ray/core_worker/core_worker.cc:3172": (
        "ray-cluster-connection",
        "listing named actors timed out: GCS dead or overloaded",
    ),
    "ray-cpp src/ray/core_worker/actor_manager.cc:104": (
        "unrecognized-failure",
        "a named actor lookup that found nothing: no death implied",
    ),
    "ray-cpp src/ray/core_worker/transport/normal_task_submitter.cc:493": (
        "ray-node-died",
        "the local raylet is unavailable (crashed)",
    ),
    "ray-cpp src/ray/core_worker/core_worker.cc:1576": (
        "unrecognized-failure",
        "pinning an object through the raylet failed: no node death named",
    ),
    "ray-cpp src/ray/raylet/raylet.cc:180": (
        "unrecognized-failure",
        "accepting a connection failed: no node death named",
    ),
    "ray-cpp src/ray/object_manager/object_manager.cc:814": (
        "unrecognized-failure",
        "the object manager's own failure, no listed cause",
    ),
    "ray-cpp src/ray/gcs/gcs_server/gcs_actor_manager.cc:474": (
        "unrecognized-failure",
        "an internal state check, not an actor death report",
    ),
    "ray-cpp src/ray/raylet/agent_manager.cc:86": (
        "ray-node-died",
        "the raylet exits because an agent failed: the node goes with it",
    ),
    "ray-cpp src/ray/raylet/runtime_env_agent_client.cc:292": (
        "ray-node-died",
        "the raylet exits because its runtime env agent timed out",
    ),
    "ray-cpp src/ray/raylet/runtime_env_agent_client.cc:336": (
        "ray-node-died",
        "the raylet exits because its runtime env agent timed out",
    ),
    "ray-cpp src/ray/raylet/main.cc:441": ("unrecognized-failure", "a start-up argument check of the raylet"),
    "ray-cpp src/ray/common/runtime_env_manager.cc:78": ("unrecognized-failure", "a debug dump of runtime env tables"),
    "ray-cpp src/ray/common/runtime_env_manager.cc:87": ("unrecognized-failure", "a debug dump of runtime env tables"),
    "ray-cpp src/ray/raylet/worker_pool.cc:1857": (
        "unrecognized-failure",
        "deleting a runtime env failed after use: nothing failed to start",
    ),
    "pytorch-cpp c10/cuda/CUDAFunctions.cpp:75": (
        "python-exception",
        "CUDA init under ASAN, not a real GPU out-of-memory",
    ),
    "ray-cpp src/ray/gcs/gcs_server/gcs_server.cc:122": (
        "unrecognized-failure",
        "the GCS lost its Redis backend: no listed cause",
    ),
}

_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b[^:]*: ")


def _holds(conditions: dict[str, str], fields: dict[str, str]) -> bool:
    """Whether every condition's regex matches its field."""
    return all(re.search(rx, fields.get(field, ""), re.I) for field, rx in conditions.items())


def label(row: dict[str, str], docs: dict[str, str] | None = None) -> tuple[str, str]:
    """(expect, why) for one mined entry: hand table, then the first matching rule, then a generic id."""
    key = f"{row['project']} {row['source']}"
    if key in HAND:
        expect, why = HAND[key]
        return expect, f"hand: {why}"
    fields = dict(row)
    fields["text"] = f"{row['template']}\n{row['line']}"
    for name, conditions, expect in RULES:
        if _holds(conditions, fields):
            return expect, f"rule: {name}"
    if _EXCEPTION_LINE.match(row["line"]):
        return "python-exception", "generic: reaches Python as an exception naming no listed cause"
    return "unrecognized-failure", "generic: logged or printed, naming no listed cause"
