"""Run OpenRLHF's Ray PPO driver under rlfix: a Ray failure arrives already diagnosed.

Usage (same arguments as `python -m openrlhf.cli.train_ppo_ray`):

    python examples/ray/openrlhf_driver.py --pretrain ... --vllm.num_engines 2 ...

or submitted as a Ray job:

    ray job submit --address http://HEAD:8265 -- python examples/ray/openrlhf_driver.py ...

When a `RayTaskError`, `ActorDiedError`, `OutOfMemoryError` or `GetTimeoutError` escapes the
trainer, rlfix reads the exception, this job's worker logs and the raylet / GCS logs of every
alive node (`cluster=True`), plus the state API's dead workers and actors, prints the ranked
report to stderr, writes it as JSON next to the run, and re-raises the original exception.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from rlfix.integrations.ray import diagnose_on_failure
from rlfix.report import Report


def save(report: Report) -> None:
    Path("rlfix-report.json").write_text(report.to_json(), encoding="utf-8")


def main() -> None:
    # OpenRLHF's entry point parses sys.argv itself and calls ray.init() inside; the hook
    # only needs Ray to be initialised by the time the error escapes.
    sys.argv[0] = "openrlhf.cli.train_ppo_ray"
    with diagnose_on_failure(cluster=True, on_report=save):
        runpy.run_module("openrlhf.cli.train_ppo_ray", run_name="__main__")


if __name__ == "__main__":
    main()
