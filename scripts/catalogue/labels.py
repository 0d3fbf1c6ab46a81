"""The `expect` id of a catalogue entry, set from its message and its source only.

Ordered rules (first match wins): each has a name, the id, and regexes over the message template,
the exception class (or log level), the emitting kind and the source path; a rule matches when
all its given regexes match. `HAND` overrides the rules for single sites (project + source path
and line) that the rules cannot decide. Nothing here reads rlfix or its knowledge base: the ids
and their meanings come from fixtures/messages/LABELLING-ids.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One labelling rule; empty regexes match anything."""

    name: str
    expect: str
    message: str = ""
    cls: str = ""
    kind: str = ""
    source: str = ""
    project: str = ""

    def matches(self, project: str, source: str, kind: str, cls: str, message: str) -> bool:
        checks = (
            (self.message, message),
            (self.cls, cls),
            (self.kind, kind),
            (self.source, source),
            (self.project, project),
        )
        return all(not rx or re.search(rx, text, re.IGNORECASE | re.DOTALL) for rx, text in checks)


# Words that say a message refuses a setting (an option, a config key, a flag, an env variable).
_REFUSE = (
    r"(cannot be (used|combined|enabled|set)|can ?not be (used|combined)|can't be used|"
    r"not (compatible|supported) (with|when|for|in combination)|incompatible with|mutually exclusive|"
    r"only one of|at the same time|both .* (set|specified|provided)|"
    r"must (be|have|not|specify|set|provide|equal)|should (be|have|not)|has to be|needs to be|"
    r"is required|are required|required when|requires? .* to be|expected .* to be|"
    r"(invalid|unsupported|unknown|unrecognized|unexpected) (value|option|argument|config|key|choice|mode|parameter|setting|type|strategy|backend)|"
    r"not (a )?valid|is not supported|are not supported|not yet supported|does not support|doesn't support|"
    r"is not allowed|are not allowed|not implemented for|out of range|greater than|less than|larger than|smaller than|"
    r"at least|at most|positive|non-negative|one of|please (set|specify|use|provide|choose|pass))"
)
_CONFIG_FILES = r"(^|/)(configs?|configuration_\w+|\w*_config|config_\w+|arg_utils|args|arguments|\w+_args|options|settings|cli_args|hyperparams)(\.py|/)"
_NOT_TORCH = r"^(?!pytorch$)"  # torch's own API checks refuse function arguments, not a run's options
_VERSION = (
    r"\bversions?\b.{0,80}(required|requires|upgrade|update|downgrade|incompatible|not compatible|not supported|unsupported|too old|older|newer|at least|or (higher|newer|later)|mismatch|>=|<=)|"
    r"\b(upgrade|update|downgrade) (your |the )?[`'\"]?[a-z][\w.-]*[`'\"]?( (installation|version|package|library))|pip install (-U|--upgrade)|please (upgrade|update)\b|"
    r"\b(?!(be|is|are|was|to|than|got|must|should|value|values|min|max|size|\w)\b)[A-Za-z][\w.-]*\s*\(?\s*(>=|<=|==|~=|>|<)\s*(v?\d+\.\d+|\{\})|[A-Za-z][\w.-]*==\{\} is installed|"
    r"(requires?|needs?|supported (in|from|since)|available (in|from|since)|introduced in|removed in) [`'\"]?[A-Za-z][\w.-]{0,30}[`'\"]? v?\d+\.\d+|"
    r"undefined symbol|incompatible (versions?|build)|compiled against|built against"
)
# Two options refused together.
_COMBINE = (
    r"(not compatible with|incompatible with|cannot be (used|combined|enabled|set) (with|together|alongside|when)|"
    r"can't be (used|combined) with|can not be used with|mutually exclusive|only one of|at the same time|"
    r"(cannot|can't|should not|must not|do not) (both )?(set|specify|pass|provide|enable|use) both|"
    r"both .{1,80} (cannot|can't|should not|must not|are not allowed)|together with|in combination with|"
    r"is not supported (with|when|together|in combination)|are not supported (together|with))"
)
# A parallel layout (sizes of the model/data-parallel groups, heads, experts against them).
_PARALLEL = (
    r"((tensor|pipeline|data|expert|context|sequence)[ _-]?(model[ _-]?)?parallel|\b(tp|pp|dp|ep|cp|sp|etp)[_ ](size|degree|world_size|ranks?)\b|"
    r"world[ _]size|num_gpus|n_gpus|number of (gpus|devices|nodes|ranks)|num_attention_heads|num_heads|num_key_value_heads|"
    r"num_kv_heads|num_query_groups|num_experts|num_moe_experts|nnodes|nproc_per_node|gpus_per_node)"
)
_LAYOUT_WORDS = r"(divisible|multiple of|must be|should be|must equal|greater than|less than|exceed|at least|at most|not equal|mismatch|does not match|!=)"

RULES: list[Rule] = [
    # --- GPU memory and devices ---
    Rule(
        "cuda-oom-class",
        "cuda-oom",
        cls=r"^(torch\.)?(cuda\.)?OutOfMemoryError$",
        source=r"^(torch|vllm|sglang|deepspeed|transformers|accelerate|verl|megatron)/",
    ),
    Rule(
        "cuda-oom-words",
        "cuda-oom",
        message=r"(cuda|gpu|device|vram|hbm).{0,20}out of memory|out of memory.{0,30}(cuda|gpu|device)|\bCUDA OOM\b|cudaErrorMemoryAllocation|torch\.(cuda\.)?OutOfMemoryError",
    ),
    Rule(
        "ray-oom-killer",
        "ray-oom-killer",
        message=r"memory monitor|memory usage threshold|RAY_memory_usage_threshold|Memory on the node .* was|killed due to (running )?low memory|task was killed due to the node running low on memory",
    ),
    Rule("ray-oom-class", "ray-oom-killer", cls=r"OutOfMemoryError", project=r"^ray$"),
    Rule(
        "host-memory",
        "host-memory-error",
        message=r"(host|cpu|system|ram) (memory )?(is )?out of memory|out of (host|cpu) memory|not enough (host|cpu|system) memory|unable to allocate .{0,40}(memory|bytes|[KMG]i?B|array)|bad_alloc|insufficient (host|cpu|system) memory",
    ),
    Rule("host-memory-class", "host-memory-error", cls=r"^MemoryError$"),
    Rule(
        "device-mismatch",
        "device-mismatch",
        message=r"(on|to) the same device|same device( type)?\b|different devices|expected all tensors to be on|device mismatch|cannot copy out of meta tensor|(is|are) on (device )?\{\}.{0,40}(but|while|expected)",
    ),
    Rule("device-side-assert", "cuda-device-side-assert", message=r"device-side assert"),
    Rule("illegal-memory-access", "cuda-illegal-memory-access", message=r"illegal memory access"),
    Rule(
        "vocab-out-of-range",
        "cuda-index-out-of-bounds",
        message=r"out of vocabulary|out-of-vocab|index out of range in self|token id.{0,40}(out of|exceeds|>=|larger than|greater than).{0,40}vocab|vocab.{0,40}(smaller|less) than.{0,30}token",
    ),
    Rule(
        "invalid-probs",
        "sampling-invalid-probabilities",
        message=r"probability tensor contains|invalid multinomial distribution",
    ),
    Rule(
        "cublas-cudnn",
        "cublas-cudnn-failure",
        message=r"CUBLAS_STATUS|CUDNN_STATUS|cuBLAS (error|call failed)|cuDNN error|cudnn.{0,20}(failed|error)",
    ),
    Rule(
        "gpu-hardware",
        "gpu-hardware-fault",
        message=r"\bECC\b|\bXid\b|fallen off the bus|fell off the bus|uncorrectable",
    ),
    Rule(
        "arch-capability",
        "cuda-driver-or-arch-mismatch",
        message=r"((compute capability|\bsm_?\d{2,3}[a-z]?\b|(ampere|hopper|blackwell|volta|turing|ada)\b|gpu architecture).{0,80}(requires?|required|only|or (newer|later|above|higher)|\+|not supported|unsupported|needs?|>=)|(requires?|required|only (supports?|available|runs?) on|needs?|supported only on|not supported on) .{0,60}(compute capability|\bsm_?\d{2,3}|ampere|hopper|blackwell|volta|turing|gpu architecture)|driver version|driver is too old|(newer|update your) (nvidia )?driver|CUDA driver version is insufficient|no kernel image is available)",
    ),
    Rule("ray-gpu-not-visible", "ray-gpu-not-visible", message=r"No CUDA GPUs are available"),
    Rule("cuda-toolkit", "cuda-toolkit-missing", message=r"CUDA_HOME|\bnvcc\b|CUDA toolkit|ROCM_HOME|hipcc"),
    Rule(
        "cuda-runtime-lib",
        "cuda-runtime-library-missing",
        message=r"lib(cudart|cublas|cudnn|nccl|cuda|curand|cusparse|nvrtc)[a-z]*\.so|(could not|couldn't|cannot|failed to|unable to) (load|find|open|dlopen) .{0,40}(shared library|\.so\b|\.dll\b)|cannot open shared object",
    ),
    # --- NCCL and torch.distributed ---
    Rule(
        "nccl-timeout",
        "nccl-timeout",
        message=r"watchdog caught collective operation timeout|collective operation timeout|(nccl|collective|all_?reduce|all_?gather|broadcast|barrier|process group).{0,60}timed? ?out|timed? ?out.{0,60}(nccl|collective|all_?reduce|barrier)",
    ),
    Rule(
        "nccl-error",
        "nccl-error",
        message=r"NCCL error|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclRemoteError|\bnccl\w* (failed|error)|NCCL communicator .*(abort|fail|error)",
    ),
    Rule(
        "port-in-use",
        "dist-port-in-use",
        message=r"address already in use|EADDRINUSE|\bport\b.{0,40}(is )?(already )?in use|\bport\b.{0,40}(is )?(not available|occupied|taken)|(failed|unable) to bind",
    ),
    Rule(
        "dist-not-init",
        "dist-launch-misconfigured",
        message=r"default process group (has not been|is not|not) initiali[sz]ed|init_process_group|process group (has not been|is not|not) (been )?initiali[sz]ed|torch\.distributed (is not|not) (initiali[sz]ed|available)|distributed (environment|backend|package) (is not|not|has not been) (initiali[sz]ed|available|set up)|MASTER_ADDR|MASTER_PORT|environment variable (RANK|WORLD_SIZE|LOCAL_RANK)|(RANK|WORLD_SIZE|LOCAL_RANK) (environment variable|env var)",
    ),
    Rule("elastic-child", "torch-elastic-child-failed", cls=r"ChildFailedError"),
    Rule(
        "dataloader-worker",
        "dataloader-worker-died",
        message=r"DataLoader worker.{0,60}(exited|killed|died|timed out|is killed|unexpectedly)|(bus error|Bus error).{0,60}shared memory|insufficient shared memory",
    ),
    # --- signals and schedulers ---
    Rule("segfault", "native-crash", message=r"segmentation fault|SIGSEGV|SIGBUS|SIGILL"),
    Rule(
        "sigkill",
        "host-oom-sigkill",
        message=r"killed by signal 9|exit(ed)? (with )?(code|status) 137|oom[- ]?kill|(was|were|got|been) killed .{0,30}SIGKILL|received SIGKILL|SIGKILL received",
    ),
    Rule(
        "scheduler",
        "job-cancelled-by-scheduler",
        message=r"\bSIGTERM\b|\bscancel\b|DUE TO TIME LIMIT|time limit|(job|pod|node|instance|slurm|spot).{0,40}(preempted|evicted)|preemption (notice|signal)",
    ),
    # --- Ray ---
    Rule("ray-get-timeout", "ray-unschedulable", cls=r"GetTimeoutError"),
    Rule(
        "ray-unschedulable",
        "ray-unschedulable",
        message=r"placement group.{0,80}(timed? ?out|not (yet )?(ready|created|scheduled)|cannot be scheduled|infeasible|pending)|infeasible|cannot be scheduled|(not enough|insufficient|no (available|free)) (resources|gpus?|cpus?) (in|on|to|for|available)|resources? (are |is )?(not available|unavailable|insufficient)|could not (be )?schedule|unschedulable|no node (has|with|can)",
    ),
    Rule("ray-actor-died", "ray-actor-died", cls=r"ActorDiedError|RayActorError|ActorUnavailableError"),
    Rule(
        "ray-actor-died-words",
        "ray-actor-died",
        message=r"actor (has )?died|actor .{0,40} (is )?dead\b|worker (died|crashed|was killed)|worker (process )?(has )?(died|exited unexpectedly)",
        project=r"^(ray|verl|openrlhf)$",
    ),
    Rule("ray-node-died", "ray-node-died", cls=r"NodeDiedError"),
    Rule(
        "ray-node-died-words",
        "ray-node-died",
        message=r"node .{0,60}(has )?(died|is dead|was marked dead|failed health check)|raylet .{0,40}(died|dead|failed)",
        project=r"^ray$",
    ),
    Rule("ray-store-full", "ray-object-store-full", cls=r"ObjectStoreFullError"),
    Rule(
        "ray-store-full-words",
        "ray-object-store-full",
        message=r"object store (is )?full|object store memory.{0,40}(exceed|full)|plasma.{0,40}full",
    ),
    Rule("ray-runtime-env", "ray-runtime-env-failed", cls=r"RuntimeEnvSetupError"),
    Rule(
        "ray-runtime-env-words",
        "ray-runtime-env-failed",
        message=r"runtime[_ ]env.{0,80}(fail|error|could not|cannot|too large|exceed|conflict|invalid|not (a )?valid|must|not found|does not exist)|(fail|error|could not|cannot).{0,60}runtime[_ ]env|working_dir.{0,60}(too large|exceed|larger than)",
        project=r"^ray$",
    ),
    Rule(
        "ray-connect",
        "ray-cluster-connection",
        message=r"(could not|couldn't|failed to|unable to|cannot|can't) (connect|reach).{0,60}(GCS|ray cluster|cluster|head node|redis|raylet|ray\b)|GCS.{0,60}(unreachable|not (reachable|available|running)|connection (failed|refused|lost))|connection to (the )?(GCS|ray|cluster).{0,40}(failed|lost|refused)|(is|are) not connected to ray|ray\.init\(\) (has not been|was not) called|ray is not (running|initialized)",
        project=r"^(ray|verl|openrlhf)$",
    ),
    # --- disk and permissions ---
    Rule(
        "disk-full",
        "disk-full",
        message=r"no space left|disk (is )?full|out of disk|not enough (free )?disk|insufficient (free )?(disk|storage) space|OutOfDiskError|disk quota",
    ),
    Rule("disk-full-class", "disk-full", cls=r"OutOfDiskError"),
    Rule(
        "permission",
        "permission-denied",
        message=r"permission denied|not writ(e)?able|no (write )?permission|read-only file ?system|(do|does) not have (write |the )?permission",
    ),
    Rule("permission-class", "permission-denied", cls=r"^PermissionError$"),
    # --- Hugging Face Hub ---
    Rule("hub-access", "hf-hub-access-denied", cls=r"GatedRepoError|RepositoryNotFoundError|HfHubHTTPError.*401"),
    Rule(
        "hub-access-words",
        "hf-hub-access-denied",
        message=r"gated (repo|model)|\b401\b|\b403\b|unauthori[sz]ed|invalid (user |access |hf |api )?token(\.|$|\b(?! (id|range|ids|type)))|token is (invalid|expired)|(no|missing) (valid )?(hf |hugging ?face )?token\b|access to (model|repo).{0,40}(restricted|denied)|you (are not|must be) (authenticated|logged in)|huggingface-cli login|hf auth login",
    ),
    Rule("hub-download", "model-download-failed", cls=r"LocalEntryNotFoundError|OfflineModeIsEnabled"),
    Rule(
        "hub-download-words",
        "model-download-failed",
        message=r"couldn't connect to|could not connect to .{0,40}(huggingface|hub|hf\.co)|offline mode|HF_HUB_OFFLINE|TRANSFORMERS_OFFLINE|HF_DATASETS_OFFLINE|cannot find the requested files in the (local |disk )?cache|not a valid model identifier|not a local folder|(failed|unable|could not|couldn't|cannot) (to )?download|download(ing)? .{0,40}failed|connection (error|timed? ?out).{0,60}(hub|huggingface)",
    ),
    # --- packages ---
    Rule(
        "version-mismatch",
        "package-version-mismatch",
        message=_VERSION,
    ),
    Rule(
        "module-missing-class",
        "python-module-missing",
        cls=r"^(ImportError|ModuleNotFoundError|OptionalDependencyNotAvailable|MissingDependencyException|DependencyError)$",
        message=r"install|not (found|available)|required|requires|missing|could not import|can't import|cannot import|unable to import|failed to import|no module|dependenc",
    ),
    Rule(
        "module-missing-words",
        "python-module-missing",
        message=r"pip install|conda install|(library|package|module|extension|dependency|dependencies)\b.{0,40}(not (installed|found|available)|missing|is required|are required)|\b(is|are|isn't|aren't) not installed|not installed\. ?(please|you can|install)|no module named|please install|(is|are) required.{0,80}\binstall\b|\binstall [`'\"]?[a-z][\w.\[\]-]*[`'\"]? (with|via|first|and|before|from)\b|not available\. install|(requires|need to install|must install|must be installed|needs?) .{0,40}(library|package)|(could not|couldn't|failed to|unable to|cannot|can't) import",
    ),
    # --- checkpoints and files ---
    Rule(
        "file-not-found-class",
        "file-not-found",
        cls=r"^(FileNotFoundError|MissingConfigException|NotADirectoryError|IsADirectoryError|EntryNotFoundError)$",
    ),
    Rule(
        "checkpoint-load",
        "checkpoint-load-failed",
        message=r"(checkpoint|state[_ ]dict|weights|ckpt|safetensors|\.bin|\.pt\b|\.pth\b).{0,120}(mismatch|corrupt|truncated|missing keys|unexpected keys?|size mismatch|incomplete|not match|doesn't match|does not match|failed to load|could not load|cannot load|unable to load|error loading|invalid)|(error\(s\) in loading|failed to load|could not load|cannot load|unable to load|error (while )?loading|error when loading).{0,60}(checkpoint|state[_ ]dict|weights|ckpt|model|safetensors)|weights_only|not found in (the )?(state[_ ]dict|checkpoint)|(missing|unexpected) keys? (in|when|while)|size mismatch for|(saved|trained) with (a )?different (dp|data.parallel|world)",
    ),
    Rule(
        "file-not-found-words",
        "file-not-found",
        message=r"(file|path|directory|dir|folder|checkpoint|ckpt|config|model|tokenizer|dataset|script|image|weights?)\b.{0,120}(does ?n[o']t exist|not exist|not found|cannot be found|could not be found|can't be found|couldn't be found|no such)|(file|path|directory|folder)s?\b.{0,60}(is|are) missing|(no such file|cannot find|can't find|could not find|couldn't find|unable to find|unable to locate|failed to find|did not find|didn't find).{0,60}(file|path|director|folder|checkpoint|config|model|tokenizer|dataset|\.json|\.yaml|\.safetensors|\.bin|\.pt)|no such file or directory",
    ),
    # --- training numerics and data ---
    Rule(
        "nan-loss",
        "nan-or-inf-loss",
        message=r"(loss|grad(ient)?s?|grad[_ ]norm|norm|reward|advantage|kl|logits?|ratio|scale)\b.{0,60}\b(nan|inf|non-finite|not finite|infinite)\b|\b(nan|inf|non-finite|infinite)\b.{0,60}\b(loss|grad(ient)?s?|grad[_ ]norm|reward|advantage|kl|logits?)\b|\b(inf/nan|nan/inf)\b detected|\bnan detected|loss scale (already )?(at|reached) minimum|Current loss scale already at minimum|overflow.{0,40}(loss|gradient)|isnan|isinf",
    ),
    Rule("pad-token", "tokenizer-missing-pad-token", message=r"pad[_ ]token|padding token|pad_token_id|pad token id"),
    Rule(
        "kv-cache",
        "vllm-insufficient-kv-cache",
        message=r"(kv[ _-]?cache|cache blocks?|num_gpu_blocks|gpu_blocks|kv blocks?|memory pool|token pool|req_to_token|max_total_num_tokens).{0,120}(no available|insufficient|not enough|too (small|few)|is (smaller|less) than|larger than|exceed|increase (gpu_memory_utilization|mem[-_]fraction)|decrease|reduce|negative|<= ?0|zero|can(not|'t) (fit|hold|allocate))|(no available|insufficient|not enough) memory for (the )?(kv|cache)|gpu_memory_utilization.{0,80}(increase|too (low|small))|increase .{0,30}(gpu_memory_utilization|mem[-_]fraction[-_]static)|mem[-_]fraction[-_]static.{0,60}(too|increase|decrease)",
        project=r"^(vllm|sglang|verl|openrlhf)$",
    ),
    Rule(
        "too-long",
        "sequence-too-long",
        message=r"(prompt|input|sequence|seq|context|request|response|token)s?.{0,80}(longer than|too long|exceeds?|exceeding|more than|greater than|larger than|>).{0,80}(max_model_len|max(imum)?[_ ](model|sequence|seq|context|position|prompt|input|total)[_ ]?(len|length|tokens|embeddings)|model'?s? (max|context)|context (length|window|len)|max_position_embeddings|max_length|max_seq_len|max_prompt_length|max_total_tokens)|(max_model_len|max_position_embeddings|context length|context window).{0,40}(exceeded|too short)",
        kind=r"raise|logger|assert",
    ),
    Rule(
        "batch-divisible",
        "batch-size-not-divisible",
        message=r"(batch|\bbsz\b|generations|rollout\.n|n_samples_per_prompt|gradient_accumulation|accumulation steps).{0,100}(divisible|multiple of|\bdivide|evenly|partition)|(divisible|multiple of|\bdivide|evenly).{0,100}(batch|\bbsz\b|generations|rollout\.n|n_samples_per_prompt)|train_batch_size.{0,80}(micro_batch|gradient_acc)|fewer samples than|(samples|prompts).{0,40}less than .{0,20}(world size|ranks|dp)",
    ),
    Rule(
        "engine-dead",
        "vllm-engine-dead",
        message=r"engine ?core .{0,60}(died|dead|failed|crashed|exited|not (alive|running))|engine (loop )?(has )?(died|dead|stopped|errored)|EngineDeadError|(background|engine) (loop|process) (has )?(errored|died|crashed)|engine core initiali[sz]ation failed|scheduler (process )?(died|crashed)|(detokenizer|tokenizer manager|scheduler) .{0,30}(died|dead|crashed|exited unexpectedly)",
        project=r"^(vllm|sglang|verl|openrlhf)$",
    ),
    Rule("engine-dead-class", "vllm-engine-dead", cls=r"EngineDeadError|AsyncEngineDeadError|EngineGenerateError"),
    # --- argument parsers, hydra, omegaconf ---
    Rule("argparse", "config-error", kind=r"parser\.error", project=r"."),
    # argparse's other raises fire while the script builds its parser: a bug in the script.
    Rule("argparse-build-time", "python-exception", project=r"^argparse$", kind=r"raise|assert"),
    Rule(
        "omegaconf-user-errors",
        "config-error",
        cls=r"ConfigKeyError|ConfigAttributeError|ConfigTypeError|ConfigValueError|ValidationError|MissingMandatoryValue|ReadonlyConfigError|InterpolationResolutionError|InterpolationKeyError|InterpolationToMissingValueError|UnsupportedInterpolationType|GrammarParseError|InterpolationValidationError|KeyValidationError|ConfigCompositionException|OverrideParseException|ConfigIndexError",
        project=r"^(omegaconf|hydra-core)$",
    ),
    Rule(
        "hydra-overrides",
        "config-error",
        message=r"override|defaults list|config group|config ?(key|value|node)|struct|interpolation|\bkey\b.{0,40}(not|missing|invalid)|missing mandatory value|primary config|structured config|dataclass",
        project=r"^(omegaconf|hydra-core)$",
    ),
    # --- start-up option checks ---
    Rule(
        "cli-flag-refused",
        "config-error",
        message=r"(^|[\s`'\"(])--[a-z][a-z0-9-]+.*" + _REFUSE + r"|" + _REFUSE + r".*(^|[\s`'\"(])--[a-z][a-z0-9-]+",
    ),
    Rule(
        "config-words-refused",
        "config-error",
        project=_NOT_TORCH,
        message=r"\b(config(uration)?|cli|command.line|setting|flag|option|environment variable|env var)s?\b.*"
        + _REFUSE
        + r"|"
        + _REFUSE
        + r".*\b(config(uration)?|setting|flag|option|environment variable|env var)s?\b",
    ),
    Rule("option-combination", "config-error", project=_NOT_TORCH, message=_COMBINE),
    Rule(
        "parallel-layout",
        "config-error",
        message=_PARALLEL + r".{0,120}" + _LAYOUT_WORDS + r"|" + _LAYOUT_WORDS + r".{0,120}" + _PARALLEL,
    ),
    Rule(
        "config-file-refusal",
        "config-error",
        message=_REFUSE,
        source=_CONFIG_FILES,
        cls=r"^(ValueError|NotImplementedError|AssertionError|TypeError|KeyError|exit|error|critical|fatal|\w*Config\w*Error|\w*ValidationError|ArgumentError|UsageError)$",
    ),
]

#: Sites the rules cannot decide: (project, "path:LINE") -> (id, why).
HAND: dict[tuple[str, str], tuple[str, str]] = {
    ("vllm", "vllm/distributed/device_communicators/pynccl_wrapper.py:387"): (
        "cuda-runtime-library-missing",
        "the NCCL shared library could not be loaded",
    ),
    ("pytorch", "torch/cuda/memory.py:1465"): (
        "cuda-oom",
        "a GPU (UVM) allocation failed and the caching allocator raises OOM",
    ),
    ("pytorch", "torch/distributed/distributed_c10d.py:2181"): (
        "package-version-mismatch",
        "a torch build without NCCL (wrong build for the machine)",
    ),
    ("deepspeed", "deepspeed/runtime/zero/contiguous_memory_allocator.py:54"): (
        "python-exception",
        "DeepSpeed's own pre-allocated buffer is full, not a GPU or host allocation",
    ),
}


def label(project: str, source: str, kind: str, cls: str, message: str) -> tuple[str, str]:
    """(expect, why) for one site: the hand table, else the first matching rule, else generic."""
    site = source.split(" ", 1)[0]
    if (project, site) in HAND:
        expect, why = HAND[(project, site)]
        return expect, f"hand: {why}"
    for rule in RULES:
        if rule.matches(project, source, kind, cls, message):
            return rule.expect, f"rule {rule.name}"
    if kind.startswith(("raise", "assert")):
        return "python-exception", "no rule: a raise naming no listed cause"
    return "unrecognized-failure", "no rule: an error line naming no listed cause"
