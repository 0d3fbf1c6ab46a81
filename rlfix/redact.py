"""Mask credentials in quoted evidence, so a report can be pasted into a public issue."""

from __future__ import annotations

import re

MASK = "***"

# (what it is, pattern, replacement). Replacements keep the key name so the line still reads.
_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("url-password", re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(?=@)"), r"\g<head>" + MASK),
    ("bearer", re.compile(r"(?i)(?P<head>\bbearer\s+)[A-Za-z0-9._~+/-]{8,}=*"), r"\g<head>" + MASK),
    ("huggingface", re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"), "hf_" + MASK),
    ("openai", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), "sk-" + MASK),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "AKIA" + MASK),
    (
        "wandb",
        re.compile(r"(?i)(?P<head>\b(?:WANDB_API_KEY\s*[=:]\s*|wandb\s+login\s+(?:--relogin\s+)?))[0-9a-f]{40}\b"),
        r"\g<head>" + MASK,
    ),
    (
        "assignment",
        re.compile(
            r"(?i)(?P<head>\b(?:[A-Z0-9_]*?(?:API_KEY|APIKEY|SECRET_ACCESS_KEY|SECRET|TOKEN|PASSWORD|PASSWD)"
            r"|api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd)\b['\"]?\s*[=:]\s*['\"]?)"
            r"(?!\*\*\*)[^\s'\",;]{6,}"
        ),
        r"\g<head>" + MASK,
    ),
)


def redact_secrets(text: str) -> str:
    """Replace anything that looks like a credential with `***`."""
    for _name, pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
