"""Follow a submitted Ray job: alert on the first root cause, post the report when it fails.

python examples/ray/watch_job.py raysubmit_XXXX --address http://HEAD:8265
"""

from __future__ import annotations

import argparse
import sys

from rlfix.integrations.ray import watch_job
from rlfix.model import Evidence
from rlfix.report import Report


def alert(evidence: Evidence, sig_id: str) -> None:
    # Replace with a Slack / PagerDuty call: this runs while the job is still going.
    print(f"ALERT {sig_id}: {evidence.source}:{evidence.line}: {evidence.text}", file=sys.stderr)


def failed(report: Report) -> None:
    print(report.render("markdown"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("job_id")
    parser.add_argument("--address", default=None)
    args = parser.parse_args()
    report = watch_job(args.job_id, address=args.address, on_alert=alert, on_failure=failed)
    sys.exit(report.exit_code)


if __name__ == "__main__":
    main()
