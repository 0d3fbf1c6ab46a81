"""Mask credentials in quoted evidence and job context, so a report can be pasted into a public issue.

Every rule is a row of `RULES` with a positive and a negative example; tests run them all. Every
quantifier is bounded, so each rule costs time linear in the line length whatever the line holds
(an unbounded `[a-z]*://` tried at every position of `a.a.a...` was quadratic); a secret longer
than 512 characters is masked in pieces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MASK = "***"


@dataclass(frozen=True)
class Rule:
    """One kind of credential: how to find it, what replaces it, and an example either way."""

    name: str
    pattern: re.Pattern[str]
    replacement: str
    positive: str
    negative: str
    #: Lower-case literals one of which every match holds: a rule runs only on lines that hold one.
    needs: tuple[str, ...]


def _rule(name: str, pattern: str, replacement: str, positive: str, negative: str, needs: tuple[str, ...]) -> Rule:
    return Rule(name, re.compile(pattern), replacement, positive, negative, needs)


_HEAD = r"\g<head>" + MASK
# Names whose value is a secret: `--hf_token X`, `WANDB_API_KEY=X`, `'password': 'X'`.
_SECRET_NAME = (
    r"(?:password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|private[_-]?key"
    r"|wandb[_-]?key|auth[_-]?key|openai[_-]?key|db[_-]?pass|hf[_-]?auth|credentials?)"
)

#: Literals one of which every secret flag's name holds (the words of `_SECRET_NAME`).
_FLAG_NEEDS = (
    "passw",
    "secret",
    "token",
    "key",
    "credential",
    "db-pass",
    "db_pass",
    "dbpass",
    "hf_auth",
    "hf-auth",
    "hfauth",
)

RULES: tuple[Rule, ...] = (
    _rule(
        "url-credentials",
        # The password runs to the last `@` before a space: it may itself hold `@`, `:` or `/`.
        # Any case of scheme (`HTTPS://`), and an empty user (`redis://:pw@cache`).
        r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/@]{0,256}:)\S{1,512}(?=@)",
        _HEAD,
        "fetching https://alice:p@ss:w/rd@storage.example.com/ckpt",
        "fetching https://storage.example.com:8443/ckpt",
        ("://",),
    ),
    _rule(
        "authorization",
        r"(?i)(?P<head>\bauthorization['\"]?\s*[:=]\s*['\"]?(?:bearer|token|basic)\s+)[A-Za-z0-9._~+/=:-]{4,512}",
        _HEAD,
        "header Authorization: Basic YWxpY2U6c2VjcmV0",
        "Authorization failed for user alice",
        ("authorization",),
    ),
    _rule(
        "bearer",
        r"(?i)(?P<head>\bbearer\s+)[A-Za-z0-9._~+/-]{8,512}=*",
        _HEAD,
        "sent Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
        "the bearer of bad news",
        ("bearer",),
    ),
    _rule(
        "github",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
        "gh_" + MASK,
        "clone with ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "see ghp_short and github_pages",
        ("gh", "github_pat_"),
    ),
    _rule(
        "gitlab",
        # Personal, deploy and runner tokens: glpat-, gldt-, glrt-.
        r"\bgl(?:pat|dt|rt)-[A-Za-z0-9_-]{20,255}",
        "glpat-" + MASK,
        "CI_TOKEN glpat-AbCdEfGhIjKlMnOpQrSt",
        "glpat- prefix documented",
        ("glpat-", "gldt-", "glrt-"),
    ),
    _rule(
        "slack",
        # Bot, user, app-level (xapp-) and refresh (xoxe-) tokens.
        r"\b(?:xox[abposre](?:\.xox[abposre])?|xapp)-[A-Za-z0-9-]{10,255}",
        "xox-" + MASK,
        "posting with xoxb-1234567890-abcdefghij",
        "xoxo from the team",
        ("xox", "xapp-"),
    ),
    _rule(
        "google",
        r"\bAIza[0-9A-Za-z_-]{35}",
        "AIza" + MASK,
        "maps key AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "AIza is a prefix",
        ("aiza",),
    ),
    _rule(
        "huggingface",
        r"\bhf_[A-Za-z0-9]{20,255}",
        "hf_" + MASK,
        "token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123 used",
        "tokenizer: hf_hub_download(repo_id='meta-llama/Llama-3')",
        ("hf_",),
    ),
    _rule(
        "sk-key",
        r"\bsk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{20,255}",
        "sk-" + MASK,
        "key=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        "use sk-learn for the probe",
        ("sk-",),
    ),
    _rule(
        "aws-key-pair",
        # An access key id followed by its secret (as `aws configure` and credential dumps print them).
        r"(?P<head>\b(?:AKIA|ASIA)[0-9A-Z]{16}[\s,:;'\"=]{1,10})[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])",
        _HEAD,
        "keys AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "instance i-0abcd1234efgh5678 started",
        ("akia", "asia"),
    ),
    _rule(
        "aws-access-key",
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        "AKIA" + MASK,
        "aws_access_key_id AKIAIOSFODNN7EXAMPLE",
        "AKIA is the prefix of long-term keys",
        ("akia", "asia"),
    ),
    _rule(
        "wandb-login",
        r"(?i)(?P<head>\bwandb\s+login\s+(?:--relogin\s+)?)[0-9a-f]{40}\b",
        _HEAD,
        "wandb login 0123456789abcdef0123456789abcdef01234567",
        "wandb login --relogin",
        ("wandb",),
    ),
    _rule(
        "hex-after-key-name",
        # A bare 40-hex value (a W&B key) right after a key-like name; a git hash after `commit` is kept.
        r"(?i)(?P<head>(?:key|token|secret|auth)['\"]?(?:\s*[=:]\s*|\s+)['\"]?)[0-9a-f]{40}\b",
        _HEAD,
        "wandb api key 0123456789abcdef0123456789abcdef01234567",
        "commit 0123456789abcdef0123456789abcdef01234567",
        ("key", "token", "secret", "auth"),
    ),
    _rule(
        "secret-flag",
        # `--password X`, `--api-key=X`, `--hf_token X`, `--wandb_key X`: the flag name ends in a secret word.
        # `(--api-key X)` and `[--token X]` too: a bracket is as good a start as a space.
        r"(?i)(?P<head>(?:^|(?<=[\s(\[]))--?[\w.-]{0,40}?"
        + _SECRET_NAME
        + r"(?:=|\s+))(?!['\"]?\*\*\*)(?:\"[^\"\n]{1,512}\"|'[^'\n]{1,512}'|[^\s'\"]{1,512})",
        _HEAD,
        "python train.py --wandb_key 0123456789abcdef --lr 1e-5",
        "python train.py --max_new_tokens 1024 --token_budget 8",
        # The flag's name ends in one of `_SECRET_NAME`'s words (file names hold `-` everywhere).
        _FLAG_NEEDS,
    ),
    _rule(
        "secret-flag-argv",
        # A command as a Python list, as subprocess.CalledProcessError and `print(sys.argv)` show it:
        # `'--wandb_key', 'X'` (and JSON's double quotes).
        r"(?i)(?P<head>['\"]--?[\w.-]{0,40}?" + _SECRET_NAME + r"['\"],\s{0,8}['\"])(?!\*\*\*)[^'\"\n]{1,512}",
        _HEAD,
        "Command '['python3', 'train.py', '--wandb_key', 'fedcba9876543210fedc']' returned non-zero exit status 1.",
        "Command '['python3', 'train.py', '--max_new_tokens', '1024']' returned non-zero exit status 1.",
        _FLAG_NEEDS,
    ),
    _rule(
        "assignment",
        # Names in any case, with `_`, `-` or nothing between words (`x-api-key`, `SecretAccessKey`,
        # `AccountKey`, `openai_key`, `private_key`, `db-pass`); a quoted value may hold spaces.
        r"(?i)(?P<head>\b[A-Z0-9_-]{0,64}?(?:API[_-]?KEY|SECRET[_-]?ACCESS[_-]?KEY|ACCOUNT[_-]?KEY|PRIVATE[_-]?KEY|"
        r"OPENAI[_-]?KEY|HF[_-]?AUTH|SECRET|TOKEN|PASSWORD|PASSWD|DB[_-]?PASS)"
        r"\b['\"]?\s*[=:]\s*)(?!['\"]?\*\*\*)(?:\"[^\"\n]{6,512}\"|'[^'\n]{6,512}'|['\"]?[^\s'\",;]{6,512})",
        _HEAD,
        "export WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567",
        "max_new_tokens=512 and num_tokens: 77",
        ("key", "secret", "token", "passw", "db-pass", "db_pass", "dbpass", "hf_auth", "hf-auth", "hfauth"),
    ),
    _rule(
        "short-password",
        # A password's value is a secret whatever its length (`db password=abc12`).
        r"(?i)(?P<head>\b[\w-]{0,64}?(?:password|passwd|pwd)['\"]?\s*[=:]\s*['\"]?)(?!\*\*\*)[^\s'\",;]{1,512}",
        _HEAD,
        "connecting with db password=abc12 to postgres",
        "password_policy=strict and passwords: none",
        ("passw", "pwd"),
    ),
    _rule(
        "netrc",
        # ~/.netrc, where W&B keeps its key: `machine api.wandb.ai login user password X`.
        r"(?i)(?P<head>\bmachine\s+[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}\s+login\s+\S{1,256}\s+password\s+)(?!\*\*\*)\S{1,512}",
        _HEAD,
        "machine api.wandb.ai login user password 9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
        "machine learning login page password reset",
        ("machine",),
    ),
    _rule(
        "pem-private-key",
        # A PEM private key block, in a config dump or an exception: its base64 body to the END line.
        r"(?P<head>-----BEGIN [A-Z ]{0,24}PRIVATE KEY-----)(?:\\n|\s|[A-Za-z0-9+/=]){1,8192}",
        _HEAD,
        "ValueError: bad key -----BEGIN RSA PRIVATE KEY-----MIIEpAIBAAKCAQEAx9Zq\\nQ2b3-----END RSA PRIVATE KEY-----",
        "-----BEGIN CERTIFICATE-----MIIC",
        ("private key-----",),
    ),
    _rule(
        "jwt",
        # A JSON Web Token without `Bearer` before it: header.payload.signature, both halves JSON.
        r"\beyJ[A-Za-z0-9_-]{8,2048}\.eyJ[A-Za-z0-9_-]{8,2048}\.[A-Za-z0-9_-]{8,2048}",
        MASK,
        "id_token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N",
        "eyJ is how base64 of '{\"' starts",
        ("eyj",),
    ),
    _rule(
        "slack-webhook",
        r"(?P<head>\bhttps://hooks\.slack\.com/services/)[A-Za-z0-9/]{10,256}",
        _HEAD,
        "notify https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "see https://api.slack.com/messaging/webhooks",
        ("hooks.slack.com",),
    ),
    _rule(
        "google-oauth",
        r"\bya29\.[A-Za-z0-9_-]{20,2048}",
        "ya29." + MASK,
        "gcloud token ya29.a0AfH6SMBx3kLmNoPqRsTuVwXyZ0123456789",
        "ya29. is Google's prefix",
        ("ya29.",),
    ),
    _rule(
        "pypi",
        r"\bpypi-AgE[A-Za-z0-9_-]{50,2048}",
        "pypi-" + MASK,
        "twine -p pypi-AgEIcHlwaS5vcmcCJGE0ZjY0YjE2LTk0ZjUtNGQxNi1hYjY3LTEyMzQ1Njc4OTBhYgACKlsz",
        "pip install pypi-simple",
        ("pypi-",),
    ),
    _rule(
        "aliyun-access-key",
        r"\bLTAI[0-9A-Za-z]{12,30}\b",
        "LTAI" + MASK,
        "ALIBABA_CLOUD_ACCESS_KEY_ID LTAI5tQz7xK2mP9vL4nR8tW1",
        "LTAI is the prefix",
        ("ltai",),
    ),
    _rule(
        "azure-sas",
        # The signature of an Azure SAS URL (`?sv=...&sig=X`); a short `sig=9` (a signal) is kept.
        r"(?P<head>[?&]sig=)[A-Za-z0-9%+/=]{10,512}",
        _HEAD,
        "GET https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=QwErTyUiOp1234567890%2Bab%3D",
        "Process killed with sig=9",
        ("sig=",),
    ),
    _rule(
        "cli-password",
        # `curl -u user:pass`, `docker login -p pass`: the password a command line carries.
        r"(?P<head>\b(?:curl\b[^\n]{0,200}?\s(?:-u|--user)\s+['\"]?[^\s:'\"]{1,256}:|"
        r"docker\s+login\b[^\n]{0,200}?\s(?:-p|--password)[\s=]+['\"]?))(?!\*\*\*)[^\s'\"]{1,512}",
        _HEAD,
        "curl -sS -u deploy:s3cr3tPw https://repo.example/x",
        "curl -u reads user:password; docker login --password-stdin < token.txt",
        ("curl", "docker"),
    ),
)

_SECRET_KEY = re.compile(r"(?i)" + _SECRET_NAME + "$")


#: Every literal some rule needs: most texts (file names, log lines) hold none and skip every rule.
_ALL_NEEDS = tuple(dict.fromkeys(lit for rule in RULES for lit in rule.needs))


def redact_secrets(text: str) -> str:
    """Replace anything that looks like a credential with `***` (linear in `len(text)`)."""
    # The rules' literals screen ASCII text only: a `(?i)` regex folds more than `str.lower` does
    # (`ſ` matches `s`, `ı` matches `i`), so other text goes through every rule.
    screened = text.isascii()
    lowered = text.lower()
    if screened:
        for lit in _ALL_NEEDS:
            if lit in lowered:
                break
        else:
            return text
    masked = False
    for rule in RULES:
        # `str.find` is a memchr-speed scan: a rule whose literals are absent costs next to nothing.
        if not screened or any(lit in lowered for lit in rule.needs):
            text, count = rule.pattern.subn(rule.replacement, text)
            if count:
                masked = True
                lowered = text.lower()
    return _mask_tails(text) if masked else text


#: What is left of a secret longer than its rule's bound: token characters right after a mask.
_TAIL_PIECE = re.compile(r"[A-Za-z0-9_+/=-]{1,4096}")
_TAIL_BOUND = 4096


def _mask_tails(text: str) -> str:
    """Drop what follows a mask directly (a secret longer than a rule's bound), in bounded pieces.

    Every rule's quantifier is bounded (no rule may backtrack over a megabyte line), so a 1,000
    character token is matched for its first 255 or 512 characters; the rest stands right after
    the `***`. It is cut here, 4,096 characters at a time, in one pass over the text.
    """
    out: list[str] = []
    start = 0
    while (at := text.find(MASK, start)) >= 0:
        end = at + len(MASK)
        out.append(text[start:end])
        while (piece := _TAIL_PIECE.match(text, end)) is not None:
            end = piece.end()
            if end - piece.start() < _TAIL_BOUND:
                break
        start = end
    out.append(text[start:])
    return "".join(out)


def redact_setting(key: str, value: str) -> str:
    """A setting's value as a report may show it: masked whole when its name says it is a secret."""
    name = key.lstrip("+-").rsplit(".", 1)[-1]
    if value and _SECRET_KEY.search(name):
        return MASK
    return redact_secrets(value)
