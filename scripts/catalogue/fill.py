"""Realistic values for a template's `{}` placeholders, chosen from the expression each one shows.

`args.max_model_len` gets a token count, `checkpoint_dir` a path under /home/user, `world_size`
a small number, `dtype` a torch dtype; an expression with no telling name gets a neutral word.
The choice is deterministic (a hash of the site), so reruns write the same files.
"""

from __future__ import annotations

import hashlib
import re

#: (regex over the placeholder's expression, candidate values); first match wins.
_VALUES: list[tuple[str, tuple[str, ...]]] = [
    (r"argv|arg_strings?|option_strings?|explicit_arg|unknown_args|unrecognized", ("--rollout-n 4", "--lr-warmup 10")),
    (r"\bnames\b|action_name|conflict|required_actions|option_string_actions", ("--train-file", "--model-path")),
    (r"choices", ("'fsdp', 'fsdp2', 'megatron'", "'auto', 'bfloat16', 'float16'")),
    (r"^type$|type_name|typename", ("float", "int")),
    (r"url|endpoint|host_?addr|address", ("http://10.0.0.12:8000", "10.0.0.12:6379")),
    (r"(^|_)ports?($|_)", ("29500", "8265", "30000")),
    (r"ckpt|checkpoint", ("/home/user/ckpt/global_step_400", "/home/user/ckpt/checkpoint-1200")),
    (r"model.*(path|dir)|(path|dir).*model", ("/home/user/models/Qwen2.5-7B-Instruct",)),
    (r"(data|train|eval|file).*(path|file)", ("/home/user/data/train.parquet",)),
    (r"(config|cfg|yaml).*(path|file)", ("/home/user/run/config.yaml",)),
    (r"path|(^|_)dirs?($|_)|directory|file|folder|(^|_)root($|_)|location", ("/home/user/models/Qwen2.5-7B-Instruct", "/home/user/data/train.parquet", "/home/user/run/config.yaml")),
    (r"repo_id|model_id|model_name|pretrained|repo", ("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B")),
    (r"revision|commit|(^|_)sha($|_)", ("main",)),
    (r"version|__version__", ("2.4.0", "0.10.1")),
    (r"dtype", ("torch.bfloat16", "torch.float16")),
    (r"device", ("cuda:0", "cpu")),
    (r"shape|size\(\)|\.size", ("torch.Size([8, 4096])", "torch.Size([2, 512, 128])")),
    (r"world_size|num_gpus|nproc|num_nodes|tp_size|tensor_parallel|pipeline_parallel|pp_size|dp_size|ep_size|parallel_size", ("8", "4", "2")),
    (r"rank|local_rank|gpu_id|device_id|idx|index", ("3", "1", "0")),
    (r"batch|micro|mini", ("256", "64", "16")),
    (r"len|length|max_model|tokens|seq", ("32768", "4096", "8192")),
    (r"vocab", ("151936", "32000")),
    (r"heads|head", ("32", "28")),
    (r"_size$|^size$|_dim$|_len$|_count$|^n$|^k$|_num$", ("4", "2", "16")),
    (r"hidden|dim", ("4096", "3584")),
    (r"lr|learning_rate", ("1e-06",)),
    (r"timeout|seconds|secs|time", ("1800", "600.0")),
    (r"memory|mem|bytes|gib|gb", ("79.25 GiB", "21474836480")),
    (r"num_|count|n_|steps|step|epoch|total|number", ("3", "400", "12")),
    (r"type\(|__class__|__name__|cls", ("Qwen2ForCausalLM", "dict")),
    (r"model_type|arch", ("qwen2", "llama")),
    (r"backend", ("nccl", "flash_attn")),
    (r"strategy|mode|method|policy", ("fsdp", "megatron")),
    (r"quant", ("fp8", "awq")),
    (r"key|name|attr|field|param|(^|_)args?($|_)|(^|_)opt($|_)|option|flag", ("max_model_len", "rollout.n", "gradient_accumulation_steps", "lora_rank")),
    (r"^(e|ex|exc|err|error|exception)$|reason|\bmsg\b|message|error_str|str\(e\)", ("invalid literal for int() with base 10: 'abc'", "expected str, got NoneType")),
    (r"keys|names|list|choices|supported|options|valid", ("['fsdp', 'fsdp2', 'megatron']", "['auto', 'bfloat16', 'float16']")),
    (r"value|val", ("0", "-1", "'abc'")),
]  # fmt: skip
_COMPILED = [(re.compile(p, re.IGNORECASE), v) for p, v in _VALUES]
_DEFAULT = ("8", "3", "None", "'auto'")


def value_for(hint: str, seed: str) -> str:
    """A realistic value for the placeholder whose expression is `hint`."""
    tail = hint.rsplit(".", 1)[-1] if "(" not in hint else hint
    digest = int(hashlib.sha1(seed.encode()).hexdigest()[:8], 16)
    for pattern, values in _COMPILED:
        if pattern.search(tail) or pattern.search(hint):
            return values[digest % len(values)]
    return _DEFAULT[digest % len(_DEFAULT)]


def fill_template(template: str, hints: list[str], seed: str) -> str:
    """The template with each `{}` replaced by a value suited to its expression."""
    parts = template.split("{}")
    out = [parts[0]]
    for i, part in enumerate(parts[1:]):
        hint = hints[i] if i < len(hints) else ""
        out.append(value_for(hint, f"{seed}#{i}"))
        out.append(part)
    return "".join(out)
