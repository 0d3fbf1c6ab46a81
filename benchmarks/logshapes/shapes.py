"""Real line shapes of a verl + vLLM + Ray job, each with where it comes from.

Numbers, pids and addresses are varied by the generators; the words, punctuation and order are
the frameworks' own. Fixture paths are relative to the repository root.
"""

from __future__ import annotations

# verl's launch line with Hydra overrides (`--flags` of the wrapper script, `key=value` overrides):
# fixtures/logs/ray-oom-killer--simplerl-verl.log (lines 1 and 24).
COMMAND = (
    "+ python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_files=/data/gsm8k/train.parquet "
    "data.val_files=/data/gsm8k/test.parquet data.train_batch_size=1024 data.max_prompt_length=1024 "
    "data.max_response_length=3072 actor_rollout_ref.model.path=Qwen/Qwen2.5-7B actor_rollout_ref.actor.optim.lr=1e-6 "
    "actor_rollout_ref.actor.ppo_mini_batch_size=256 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8 "
    "actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.tensor_model_parallel_size=2 "
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.6 actor_rollout_ref.rollout.n=8 "
    "trainer.n_gpus_per_node=8 trainer.nnodes=1 trainer.total_epochs=15 trainer.logger=['console','wandb'] "
    "--node-ip-address 10.80.11.200 --num-gpus 8"
)

# Ray's driver banner: fixtures/logs/ray-oom-killer--simplerl-verl.log (ray/_private/worker.py, `ray.init`).
RAY_INIT = [
    "2025-03-02 10:02:11,318\tINFO worker.py:1514 -- Using address 10.80.11.200:6379 set in the environment "
    "variable RAY_ADDRESS",
    "2025-03-02 10:02:11,318\tINFO worker.py:1654 -- Connecting to existing Ray cluster at address: "
    "10.80.11.200:6379...",
    "2025-03-02 10:02:11,331\tINFO worker.py:1832 -- Connected to Ray cluster. View the dashboard at "
    "\x1b[1m\x1b[32m127.0.0.1:8265 \x1b[39m\x1b[22m",
]

# verl prints its resolved Hydra config with pprint (verl/trainer/main_ppo.py
# `pprint(OmegaConf.to_container(config, resolve=True))`), one dict line per key, each with the
# TaskRunner's Ray prefix: fixtures/logs/ray-oom-killer--simplerl-verl.log (lines 45-90).
CONFIG_DUMP = [
    "{'actor_rollout_ref': {'actor': {'clip_ratio': 0.2,",
    "                                 'entropy_coeff': 0.001,",
    "                                 'fsdp_config': {'grad_offload': False,",
    "                                                 'optimizer_offload': False,",
    "                                                 'param_offload': False},",
    "                                 'kl_loss_coef': 0.001,",
    "                                 'kl_loss_type': 'low_var_kl',",
    "                                 'optim': {'lr': 1e-06},",
    "                                 'ppo_micro_batch_size_per_gpu': 8,",
    "                                 'ppo_mini_batch_size': 256,",
    "                                 'use_kl_loss': True},",
    "                       'hybrid_engine': True,",
    "                       'model': {'enable_gradient_checkpointing': True,",
    "                                 'path': 'Qwen/Qwen2.5-7B',",
    "                                 'use_remove_padding': True},",
    "                       'ref': {'fsdp_config': {'param_offload': True},",
    "                               'log_prob_micro_batch_size': 160},",
    "                       'rollout': {'dtype': 'bfloat16',",
    "                                   'enforce_eager': False,",
    "                                   'free_cache_engine': True,",
    "                                   'gpu_memory_utilization': 0.6,",
    "                                   'log_prob_micro_batch_size': 160,",
    "                                   'n': 8,",
    "                                   'name': 'vllm',",
    "                                   'temperature': 1.0,",
    "                                   'tensor_model_parallel_size': 2}},",
    " 'algorithm': {'adv_estimator': 'grpo', 'gamma': 1.0, 'kl_ctrl': {'kl_coef': 0.001, 'type': 'fixed'}},",
    " 'data': {'max_prompt_length': 1024, 'max_response_length': 3072, 'train_batch_size': 1024},",
    " 'trainer': {'default_local_dir': 'checkpoints/verl_grpo/qwen2_7b',",
    "             'logger': ['console', 'wandb'],",
    "             'n_gpus_per_node': 8,",
    "             'nnodes': 1,",
    "             'save_freq': 50,",
    "             'total_epochs': 15}}",
]

# NCCL_DEBUG=INFO communicator set-up of one rank, in NCCL's order (src/init.cc, src/bootstrap.cc,
# src/transport/*.cc; prefix `host:pid:tid [cudaDev]` from src/debug.cc): the lines of
# fixtures/logs/healthy--nccl-info.log, whose sources file cites each one. `{r}` is the rank,
# `{n}` the world size, `{nx}` the next rank, `{comm}` a communicator address.
NCCL_INIT = [
    "NCCL INFO Bootstrap : Using bond0:10.80.11.200<0>",
    "NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory "
    "No plugin found (libnccl-net.so), using internal implementation",
    "NCCL INFO cudaDriverVersion 12040",
    "NCCL INFO Failed to open libibverbs.so[.1]",
    "NCCL INFO NET/Socket : Using [0]bond0:10.80.11.200<0>",
    "NCCL INFO Using non-device net plugin version 0",
    "NCCL INFO Using network Socket",
    "NCCL INFO comm {comm} rank {r} nranks {n} cudaDev {r} nvmlDev {r} busId {r}b000 commId 0x3f0a6c9d2e71b845 "
    "- Init START",
    "NCCL INFO Setting affinity for GPU {r} to ffff,ffffffff,00000000,0000ffff,ffffffff",
    "NCCL INFO NVLS multicast support is not available on dev {r}",
    "NCCL INFO comm {comm} rank {r} nRanks {n} nNodes 1 localRanks {n} localRank {r} MNNVL 0",
    "NCCL INFO Trees [0] {nx}/-1/-1->{r}->-1 [1] {nx}/-1/-1->{r}->-1",
    "NCCL INFO P2P Chunksize set to 524288",
    "NCCL INFO Channel 00/0 : {r}[{r}] -> {nx}[{nx}] via P2P/CUMEM/read",
    "NCCL INFO Channel 01/0 : {r}[{r}] -> {nx}[{nx}] via P2P/CUMEM/read",
    "NCCL INFO Connected all rings",
    "NCCL INFO Connected all trees",
    "NCCL INFO threadThresholds 8/8/64 | 32/8/64 | 512 | 512",
    "NCCL INFO 4 coll channels, 4 collnet channels, 0 nvls channels, 4 p2p channels, 2 p2p channels per peer",
    "NCCL INFO TUNER/Plugin: Using internal tuner plugin.",
    "NCCL INFO ncclCommInitRank comm {comm} rank {r} nranks {n} cudaDev {r} nvmlDev {r} busId {r}b000 "
    "commId 0x3f0a6c9d2e71b845 - Init COMPLETE",
]

# vLLM v0 LoggingStatLogger.log (vllm/engine/metrics.py), every 5 s per engine, through vLLM's logger
# format `%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s`, date `%m-%d %H:%M:%S`
# (vllm/logger.py). The line number is the one in vLLM 0.6.x.
VLLM_METRICS = (
    "INFO {ts} metrics.py:351] Avg prompt throughput: {p:.1f} tokens/s, Avg generation throughput: {g:.1f} "
    "tokens/s, Running: {run} reqs, Swapped: 0 reqs, Pending: {pend} reqs, GPU KV cache usage: {kv:.1f}%, "
    "CPU KV cache usage: 0.0%."
)

# Python's warnings.formatwarning: `file:line: Category: message` then the source line indented by
# two spaces, printed once per worker process. The FSDP FutureWarning as a verl worker prints it:
# fixtures/blind/wave2/c008-verl-dapo-step0-nan-val-fsdp-futurewarning-healthy.log (lines 2-3); the
# TypedStorage UserWarning: fixtures/blind/wave1/b051-transformers-from-pretrained-typedstorage-warnings.log.
WARNINGS = [
    (
        "/usr/local/lib/python3.10/dist-packages/torch/distributed/fsdp/fully_sharded_data_parallel.py:690: "
        "FutureWarning: FSDP.state_dict_type() and FSDP.set_state_dict_type() are being deprecated. Please use "
        "APIs, get_state_dict() and set_state_dict(), which can support different parallelisms, FSDP1, FSDP2, DDP. "
        "API doc: https://pytorch.org/docs/stable/distributed.checkpoint.html#torch.distributed.checkpoint."
        "state_dict.get_state_dict .Tutorial: "
        "https://pytorch.org/tutorials/recipes/distributed_checkpoint_recipe.html .",
        "  warnings.warn(",
    ),
    (
        "/usr/local/lib/python3.10/dist-packages/torch/_utils.py:776: UserWarning: TypedStorage is deprecated. It "
        "will be removed in the future and UntypedStorage will be the only storage class. This should only matter "
        "to you if you are using storages directly.  To access UntypedStorage directly, use "
        "tensor.untyped_storage() instead of tensor.storage()",
        "  return self.fget.__get__(instance, owner)()",
    ),
]

# Ray's autoscaler, at most once per 30 s while actors hold the whole cluster
# (python/ray/autoscaler/_private/autoscaler.py: event_summarizer.add_once_per_interval(..., interval_s=30));
# as the driver prints it: fixtures/blind/wave2/d026-verlagent-alfworld-cannot-schedule-cpu2-gpu2.log.
AUTOSCALER = (
    "(autoscaler +{m}m{s}s) Warning: The following resource request cannot be scheduled right now: "
    "{{'CPU': 1.0, 'GPU': 1.0}}. This is likely due to all cluster resources being claimed by actors. "
    "Consider creating fewer actors or adding more nodes to this Ray cluster."
)

# verl's console logger line per step and the tqdm bar of the TaskRunner:
# fixtures/logs/cuda-oom--verl-fsdp-update.log and fixtures/logs/cuda-device-side-assert--verl-vllm06-buried.log.
STEP = (
    "step:{step} - global_seqlen/min:{a} - global_seqlen/max:{b} - actor/entropy:{ent:.3f} - actor/kl_loss:{kl:.4f} "
    "- actor/pg_loss:{pg:.4f} - actor/pg_clipfrac:0.0021 - actor/ppo_kl:0.0001 - actor/grad_norm:{gn:.3f} "
    "- perf/mfu/actor:0.31 - perf/max_memory_allocated_gb:{mem:.2f} - actor/lr:1e-06 - critic/score/mean:{sc:.3f} "
    "- critic/rewards/mean:{sc:.3f} - response_length/mean:{rl:.1f} - response_length/clip_ratio:0.01 "
    "- timing_s/gen:{tg:.1f} - timing_s/old_log_prob:12.3 - timing_s/ref:11.8 - timing_s/update_actor:{tu:.1f} "
    "- timing_s/step:{ts:.1f} - perf/throughput:{thr}"
)
PROGRESS = "Training Progress: {pct:3d}%|{bar:10}| {step}/{total} [{el}<{left}, {rate:.2f}s/it]"

# The failure: a CUDA OOM in a worker's update_actor, then the driver's Hydra error and RayTaskError chain,
# verbatim shapes of fixtures/logs/cuda-oom--verl-fsdp-update.log.
WORKER_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/workspace/verl/verl/workers/fsdp_workers.py", line 553, in update_actor',
    "    metrics = self.actor.update_policy(data=data)",
    '  File "/workspace/verl/verl/workers/actor/dp_actor.py", line 353, in update_policy',
    "    entropy, log_prob = self._forward_micro_batch(micro_batch=data, temperature=temperature, "
    "calculate_entropy=calculate_entropy)",
    '  File "/workspace/verl/verl/utils/torch_functional.py", line 72, in logprobs_from_logits',
    "    output = logprobs_from_logits_flash_attn(logits, labels)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.64 GiB. GPU 3 has a total capacity of "
    "79.14 GiB of which 2.91 GiB is free. Process 412077 has 76.22 GiB memory in use. Of the allocated memory "
    "68.93 GiB is allocated by PyTorch, and 5.87 GiB is reserved by PyTorch but unallocated.",
]
DRIVER_TRACEBACK = [
    "Error executing job with overrides: ['algorithm.adv_estimator=grpo', 'data.max_response_length=3072', "
    "'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8', 'actor_rollout_ref.rollout.gpu_memory_utilization=0.6']",
    "Traceback (most recent call last):",
    '  File "/workspace/verl/verl/trainer/main_ppo.py", line 64, in main',
    "    run_ppo(config)",
    "ray.exceptions.RayTaskError(OutOfMemoryError): \x1b[36mray::TaskRunner.run()\x1b[39m (pid=2210, "
    "ip=10.80.11.200, actor_id=8e0d3a1f55c6b2e7a9d4f01201000000, repr=<main_ppo.TaskRunner object at 0x7fa4c80d5d20>)",
    '  File "/workspace/verl/verl/trainer/ppo/ray_trainer.py", line 1006, in fit',
    "    actor_output = self.actor_rollout_wg.update_actor(batch)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.64 GiB. GPU 3 has a total capacity of "
    "79.14 GiB of which 2.91 GiB is free.",
    "",
    "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.",
]
