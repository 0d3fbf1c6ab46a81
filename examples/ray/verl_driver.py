"""Run verl's PPO trainer under rlfix: a Ray failure in any worker arrives already diagnosed.

Usage (same Hydra overrides as `python -m verl.trainer.main_ppo`):

    python examples/ray/verl_driver.py data.train_files=... actor_rollout_ref.model.path=... \\
        trainer.n_gpus_per_node=8

verl runs its `TaskRunner` as a Ray actor and calls `ray.get` on it from `run_ppo`, so a
crash in a rollout or actor worker surfaces in this driver as `RayTaskError` or
`ActorDiedError`. The decorator diagnoses it with the worker-side logs of every alive node and
the state API, prints the report, attaches it to the exception (`exc.rlfix_report`) and
re-raises, so the job still fails with its own error and exit status.
"""

from __future__ import annotations

import runpy
import sys

from rlfix.integrations.ray import diagnose_on_failure


@diagnose_on_failure(cluster=True)
def main() -> None:
    sys.argv[0] = "verl.trainer.main_ppo"
    runpy.run_module("verl.trainer.main_ppo", run_name="__main__")


if __name__ == "__main__":
    main()
