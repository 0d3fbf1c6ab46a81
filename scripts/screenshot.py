"""Write a PNG screenshot of an rlfix HTML report, for humans checking the design.

    python scripts/screenshot.py fixtures/logs/cuda-illegal-memory-access--nccl-cascade.log shot.png
    python scripts/screenshot.py report.html shot.png --width 1200 --height 1600

A `.html` input is shot as is; anything else is diagnosed first (extra `--kb` signatures
allowed). Needs Debian's `chromium` (or CHROMIUM=/path/to/chrome). Not used by the tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def chromium() -> str | None:
    """The Chromium binary to drive: $CHROMIUM, else the first on PATH."""
    wanted = os.environ.get("CHROMIUM")
    if wanted:
        return wanted
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def headless_args(binary: str, profile: str) -> list[str]:
    """Flags for a quiet, offline, sandbox-free headless run (root in a container needs --no-sandbox)."""
    return [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
    ]


def report_html(source: str, kb_dirs: list[str]) -> str:
    """The HTML report for a log (or the file itself when it already is a report)."""
    if source.endswith((".html", ".htm")):
        return Path(source).read_text(encoding="utf-8")
    from rlfix import diagnose

    return diagnose(source, kb_dirs=kb_dirs).render("html", show_all=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("source", help="a log (diagnosed first) or an .html report")
    parser.add_argument("png", help="where to write the screenshot")
    parser.add_argument("--width", type=int, default=1200)
    parser.add_argument("--height", type=int, default=1500)
    parser.add_argument("--kb", action="append", default=[], help="extra signatures (repeatable)")
    args = parser.parse_args(argv)
    binary = chromium()
    if binary is None:
        print("screenshot: chromium not found (apt-get install -y chromium, or set CHROMIUM)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rlfix-shot-") as tmp:
        page = Path(tmp, "report.html")
        page.write_text(report_html(args.source, args.kb), encoding="utf-8")
        out = Path(args.png).resolve()
        cmd = [
            *headless_args(binary, str(Path(tmp, "profile"))),
            f"--window-size={args.width},{args.height}",
            f"--screenshot={out}",
            page.as_uri(),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0 or not out.exists():
            print(f"screenshot: chromium failed ({done.returncode}): {done.stderr.strip()[-400:]}", file=sys.stderr)
            return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
