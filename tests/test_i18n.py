"""Reports in Chinese (issue 15): --lang, RLFIX_LANG and the locale; every signature in both languages;
golden Chinese reports; no English sentence of the knowledge base in a Chinese report; JSON the same."""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rlfix
from rlfix import i18n
from rlfix.kb.load import KnowledgeBase
from rlfix.kb.parse import parse_signature_file
from rlfix.model import Evidence, Signature
from rlfix.render import RenderOptions, render
from rlfix.report import Diagnosis, Remedy, Report, SourceStats
from rlfix.tools.lint import check_languages

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logs"
SEED_CASE = FIXTURES / "cuda-device-side-assert--bare-generate.log"
_spec = importlib.util.spec_from_file_location("update_golden", ROOT / "scripts" / "update_golden.py")
assert _spec is not None and _spec.loader is not None
update_golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(update_golden)
HAN = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize(
    ("explicit", "env", "want"),
    [
        (None, {}, "en"),
        (None, {"LANG": "zh_CN.UTF-8"}, "zh"),
        (None, {"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),
        (None, {"LC_MESSAGES": "zh_TW", "LANG": "en_US.UTF-8"}, "zh"),
        (None, {"LANG": "C"}, "en"),
        (None, {"LANG": "fr_FR.UTF-8"}, "en"),
        (None, {"RLFIX_LANG": "zh", "LANG": "en_US.UTF-8"}, "zh"),
        (None, {"RLFIX_LANG": "en", "LANG": "zh_CN.UTF-8"}, "en"),
        ("en", {"RLFIX_LANG": "zh", "LANG": "zh_CN.UTF-8"}, "en"),
        ("zh", {}, "zh"),
    ],
)
def test_language_comes_from_the_flag_then_rlfix_lang_then_the_locale(
    explicit: str | None, env: dict[str, str], want: str
) -> None:
    assert i18n.resolve(explicit, env) == want


def test_an_unknown_language_is_a_usage_error() -> None:
    with pytest.raises(rlfix.UsageError):
        i18n.resolve("fr", {})


def test_every_signature_speaks_both_languages(builtin_kb: KnowledgeBase) -> None:
    assert not list(check_languages(builtin_kb, None))  # type: ignore[arg-type]
    for sig in builtin_kb:
        assert sig.zh is not None, sig.id
        assert HAN.search(sig.zh.title) and HAN.search(sig.zh.summary), sig.id
        assert len(sig.zh.steps) == len(sig.remediation.steps), sig.id


def test_lint_reports_a_missing_language_and_a_step_count_that_differs(builtin_kb: KnowledgeBase) -> None:
    text = (ROOT / "tests" / "data" / "zh_lint.yaml").read_text(encoding="utf-8")
    sigs, problems = parse_signature_file(text, "zh_lint.yaml")
    assert not problems
    kb = KnowledgeBase(tuple(sigs))
    messages = [i.message for i in check_languages(kb, None)]  # type: ignore[arg-type]
    assert all(i.severity == "error" for i in check_languages(kb, None))  # type: ignore[arg-type]
    assert any("no-chinese: has no `zh:`" in m for m in messages), messages
    assert any("steps-differ: zh has 1 step(s), the English 2" in m for m in messages), messages


def _report_for(sig: Signature) -> Report:
    line = sig.examples.match[0]
    evidence = Evidence(source="job.log", line=3, text=line, message=line)
    remedies = tuple(Remedy(flag=f, applies=True) for f in sig.remediation.flags)
    diag = Diagnosis(signature=sig, evidence=(evidence,), count=1, confidence=0.9, remedies=remedies)
    return Report(diagnoses=(diag,), sources=(SourceStats("job.log", 10, 100),))


def _english_sentences(sig: Signature) -> list[str]:
    texts = [sig.title, sig.summary, *sig.remediation.steps]
    texts += [t for f in sig.remediation.flags for t in (f.cost, f.note) if t and len(t) > 24]
    return texts


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
def test_every_signature_renders_in_both_languages(builtin_kb: KnowledgeBase, fmt: str) -> None:
    for sig in builtin_kb:
        report = _report_for(sig)
        english = render(report, fmt, RenderOptions(lang="en", all_flags=True))
        chinese = render(report, fmt, RenderOptions(lang="zh", all_flags=True))
        assert sig.id in english and sig.id in chinese
        assert not HAN.search(english), f"{sig.id}: Chinese in the English {fmt}"
        assert sig.zh is not None and HAN.search(chinese), sig.id
        for flag in sig.remediation.flags:  # flags are never translated: shown alike in both
            token = flag.value.split()[0]
            assert (token in english) == (token in chinese), (sig.id, fmt, flag.value)
        for e in report.top.evidence if report.top else ():
            assert (e.text[:40] in english) == (e.text[:40] in chinese), (sig.id, fmt)


@pytest.mark.parametrize("fmt", ["text", "markdown", "html"])
def test_no_english_sentence_of_the_knowledge_base_leaks_into_a_chinese_report(
    builtin_kb: KnowledgeBase, fmt: str
) -> None:
    for sig in builtin_kb:
        chinese = render(_report_for(sig), fmt, RenderOptions(lang="zh", all_flags=True))
        flat = " ".join(chinese.split())
        assert sig.zh is not None
        words = [t for _i, w in sig.zh.flags for t in (w.cost, w.note) if t]
        own = " ".join([sig.zh.title, sig.zh.summary, *sig.zh.steps, *words])
        for sentence in _english_sentences(sig):
            if sentence in sig.examples.match[0] or sentence in own:
                continue  # quoted as evidence (never translated), or a term the Chinese itself keeps
            assert " ".join(sentence.split()) not in flat, f"{sig.id} ({fmt}): {sentence!r}"


def test_json_is_the_same_in_every_language() -> None:
    report = rlfix.diagnose(SEED_CASE)
    assert render(report, "json", RenderOptions(lang="zh")) == render(report, "json", RenderOptions(lang="en"))


def test_api_renders_chinese_and_the_notebook_fragment_too() -> None:
    report = rlfix.diagnose(SEED_CASE)
    assert "修复" in report.render("text", lang="zh")
    assert "修复" in report.render("html", lang="zh", compact=True)
    assert "Fix" in report._repr_html_()


@pytest.mark.parametrize("name", update_golden.ZH_FIXTURES)
def test_chinese_report_is_unchanged(name: str) -> None:
    golden = ROOT / "tests" / "golden_zh" / (name + ".txt")
    want = golden.read_text(encoding="utf-8")
    got = update_golden.golden_zh(FIXTURES / name)
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "golden", "now", n=2))
        pytest.fail(f"{name}: the Chinese report changed (scripts/update_golden.py rewrites it):\n{diff[:4000]}")


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_ALL", "LC_MESSAGES", "RLFIX_LANG")}
    return subprocess.run(
        [sys.executable, "-m", "rlfix", *args],
        capture_output=True,
        text=True,
        env={**base, "NO_COLOR": "1", **env},
        cwd=ROOT,
        timeout=120,
    )


def test_a_chinese_locale_gives_a_chinese_report_with_flags_and_evidence_unchanged() -> None:
    rel = SEED_CASE.relative_to(ROOT).as_posix()
    chinese = _cli("diagnose", rel, env={"LANG": "zh_CN.UTF-8"})
    english = _cli("diagnose", rel, env={})
    assert chinese.returncode == english.returncode == 1
    assert "根因" in chinese.stdout and "修复" in chinese.stdout
    doc = json.loads(_cli("diagnose", rel, "-f", "json", env={}).stdout)
    top = doc["diagnoses"][0]
    for flag in top["remediation"]["flags"]:
        if flag["applies"]:
            assert flag["value"] in chinese.stdout
    for e in top["evidence"][:3]:
        assert e["text"] in chinese.stdout
    overridden = _cli("diagnose", rel, "--lang", "en", env={"LANG": "zh_CN.UTF-8", "RLFIX_LANG": "zh"})
    assert overridden.stdout == english.stdout
    assert not HAN.search(overridden.stdout)


def test_explain_kb_show_and_errors_speak_chinese() -> None:
    explained = _cli("explain", "cuda-oom", env={"RLFIX_LANG": "zh"})
    assert "怎么修" in explained.stdout and "PYTORCH_CUDA_ALLOC_CONF" in explained.stdout
    assert "Patterns" in _cli("kb", "show", "cuda-oom", "--lang", "zh", env={}).stdout
    missing = _cli("diagnose", "--lang", "zh", "no-such.log", env={})
    assert missing.returncode == 2 and "文件或目录不存在" in missing.stderr
    unknown = _cli("explain", "no-such-id", env={"LANG": "zh_CN.UTF-8"})
    assert unknown.returncode == 2 and unknown.stderr.startswith("rlfix：错误：未知的 id")


def test_chinese_readme_gives_the_same_quick_start_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    zh = (ROOT / "docs" / "zh" / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line for line in quick.splitlines() if line.strip()]
    assert len(commands) == 2
    assert all(command in zh for command in commands)


def test_conclusions_speak_chinese_too() -> None:
    """Quantities, collective hangs and version mismatches are sentences rlfix writes: zh too."""
    import rlfix

    root = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
    oom = rlfix.diagnose(root / "cuda-oom--verl-fsdp-update.log").render("text", lang="zh")
    assert "尝试分配" in oom and "tried to allocate" not in oom
    hang = rlfix.diagnose(root / "nccl-timeout--allreduce-torchrun.log").render("text", lang="zh")
    assert "集合通信卡住" in hang and "先看 rank 3" in hang and "look at" not in hang
    log = (
        "trl==0.19.0\nvllm==0.7.2\nTraceback (most recent call last):\n"
        '  File "/x/site-packages/trl/scripts/vllm_serve.py", line 238, in main\n    llm = LLM(\n'
        '  File "/x/site-packages/vllm/entrypoints/llm.py", line 212, in __init__\n    e = EngineArgs(\n'
        "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_extension_cls'\n"
    )
    text = rlfix.diagnose(log).render("text", lang="zh")
    assert "版本不匹配：trl 0.19.0 调用 vllm 0.7.2" in text and "calls vllm" not in text


def test_the_fleet_table_and_rlfix_run_speak_chinese() -> None:
    import subprocess
    import sys

    root = str(Path(__file__).resolve().parent.parent / "fixtures" / "logs")
    table = subprocess.run([sys.executable, "-m", "rlfix", "triage", root, "--lang", "zh", "-j", "1"],
                           capture_output=True, text=True)  # fmt: skip
    assert table.stdout.startswith("rlfix triage：") and "原因" in table.stdout.splitlines()[2]
    html = subprocess.run([sys.executable, "-m", "rlfix", "triage", root, "-f", "html", "-j", "1"],
                          capture_output=True, text=True, env={**__import__("os").environ, "LANG": "zh_CN.UTF-8"})  # fmt: skip
    assert '<html lang="zh-CN">' in html.stdout and "点击表头排序" in html.stdout
    run = subprocess.run([sys.executable, "-m", "rlfix", "run", "--lang", "zh", "--", sys.executable, "-c",
                          "import os; os.kill(os.getpid(), 9)"], capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 137 and "进程被 SIGKILL 杀掉" in run.stderr
