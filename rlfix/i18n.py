"""The languages rlfix speaks to people: which one to use, and one table of its phrases.

English is the source: a phrase is its English template (`str.format` fields), and `phrase()`
gives the Chinese of it when one is written here, else the English. Knowledge-base text
(titles, summaries, steps, flag words) lives beside the English in knowledge/*.yaml instead
(`Signature.localized()`). Flags, ids, evidence, file names and JSON keys are never translated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rlfix.errors import UsageError

#: Languages a user can ask for.
LANGUAGES = ("en", "zh")
DEFAULT = "en"
#: The environment variable that picks a language ahead of the locale.
ENV = "RLFIX_LANG"
_LOCALE_VARS = ("LC_ALL", "LC_MESSAGES", "LANG")


def normalize(value: str) -> str | None:
    """`zh`, `zh_CN.UTF-8`, `zh-Hans`, `en_US` -> `zh` / `en`; None for anything else (C, POSIX, fr)."""
    head = re.split(r"[_.@-]", value.strip().lower(), maxsplit=1)[0]
    return head if head in LANGUAGES else None


def resolve(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The language to speak: `--lang`, else RLFIX_LANG, else the locale (LC_ALL, LC_MESSAGES, LANG)."""
    if explicit:
        lang = normalize(explicit)
        if lang is None:
            raise UsageError(f"unknown language {explicit!r}; choose from {', '.join(LANGUAGES)}")
        return lang
    env = environ if environ is not None else _environ()
    if env.get(ENV):
        return normalize(env[ENV]) or DEFAULT
    for name in _LOCALE_VARS:  # the first one set decides, as in POSIX
        if env.get(name):
            return normalize(env[name]) or DEFAULT
    return DEFAULT


def _environ() -> Mapping[str, str]:
    import os

    return os.environ


def phrase(template: str, lang: str = DEFAULT, /, **fields: Any) -> str:
    """`template` (English, with `{fields}`) in `lang`, filled in."""
    text = ZH.get(template, template) if lang == "zh" else template
    return text.format(**fields) if fields else text


def word(value: str, lang: str = DEFAULT) -> str:
    """One enum word (root, fatal, fix, ...) in `lang`."""
    return WORDS.get(value, value) if lang == "zh" else value


def sentence(text: str, lang: str = DEFAULT) -> str:
    """A sentence the conclusions wrote in English (a ranking reason, why a flag applies), in `lang`."""
    if lang != "zh":
        return text
    for pattern, chinese in SENTENCES:
        match = pattern.fullmatch(text)
        if match:
            text = match.expand(chinese)
            break
    # Pieces the conclusions put inside their sentences (signal meanings, checks).
    for pattern, chinese in FRAGMENTS:
        text = pattern.sub(chinese, text)
    return text


def said(text: str, lang: str = DEFAULT) -> str:
    """A sentence built from numbers in the evidence (conclude/quantities.py), in `lang`."""
    if lang != "zh":
        return text
    for pattern, chinese in QUANTITIES:
        text = pattern.sub(chinese, text)
    return text


def join(parts: list[str], lang: str = DEFAULT) -> str:
    """Clauses joined with `; ` (English) or `；` (Chinese)."""
    return ("；" if lang == "zh" else "; ").join(parts)


WORDS: dict[str, str] = {
    "root": "根因",
    "symptom": "症状",
    "fatal": "致命",
    "error": "错误",
    "warning": "警告",
    "fix": "修复",
    "mitigate": "缓解",
    "diagnose": "诊断",
    "workaround": "绕过",
    "start-up": "启动",
    "model-load": "模型加载",
    "rollout": "rollout",
    "weight-sync": "权重同步",
    "training": "训练",
    "checkpoint": "存 checkpoint",
    "evaluation": "评估",
    # Actions and owners (rlfix.model.Action, Owner): the English id stays beside the Chinese, since
    # scripts and `rlfix triage --action` use the id.
    "retry": "重试 retry",
    "fix-config": "改配置 fix-config",
    "fix-code": "改代码 fix-code",
    "fix-environment": "修环境 fix-environment",
    "cordon-node": "摘除节点 cordon-node",
    "report-upstream": "报告上游 report-upstream",
    "investigate": "排查 investigate",
    "user-code": "用户代码",
    "config": "配置",
    "framework": "框架",
    "environment": "环境",
    "platform": "平台",
    "hardware": "硬件",
    "unknown": "未知",
}

#: Reasons (conclude/rank.py, conclude/__init__.py) and flag notes (conclude/remedies.py), by shape.
SENTENCES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), zh)
    for p, zh in (
        (
            r"fallback: an uncaught exception that no more specific signature explains",
            "兜底：未捕获的异常，没有更具体的 signature 能解释它",
        ),
        (r"root cause \(fatal\)", "根因（致命）"),
        (
            r"no exact pattern matched: named by a concept of this signature, so less sure",
            "没有精确模式匹配：由这个 signature 的概念认出，所以把握小一些",
        ),
        (
            r"no exact pattern matched: a message its framework's source prints for this cause",
            "没有精确模式匹配：这是框架源码里为这个原因打印的一条已知消息",
        ),
        (r"root cause \(error\)", "根因（错误）"),
        (r"root cause \(warning\)", "根因（警告）"),
        (
            r"symptom with no recognised root cause in the log: the cause may be elsewhere",
            "症状，日志里没有识别到根因：原因可能在别处",
        ),
        (r"preceded by warnings? (.+)", r"之前出现过警告 \1"),
        (r"more specific than (.+)", r"比 \1 更具体"),
        (r"explains (\d+) other findings?: (.+)", r"可解释另外 \1 个问题：\2"),
        (r"earliest fatal error in the log \((.+)\)", r"日志中最早的致命错误（\1）"),
        (r"earliest fatal error the job did not go on after \((.+)\)", r"任务没能越过的最早的致命错误（\1）"),
        (
            r"the job went on after it \(from step (\d+) to step (\d+)\): not what stopped it",
            r"它出现之后任务还在继续（从第 \1 步到第 \2 步）：不是让任务停下来的原因",
        ),
        (
            r"the job went on after it \(from before the first step to step (\d+)\): not what stopped it",
            r"它出现之后任务还在继续（从第一步之前到第 \1 步）：不是让任务停下来的原因",
        ),
        (r"another fatal error came first \((\S+) at (.+)\)", r"另一个致命错误出现得更早（\1，位于 \2）"),
        (r"seen on (\d+) ranks", r"在 \1 个 rank 上出现"),
        (r"seen in (\d+) workers", r"在 \1 个 worker 中出现"),
        (r"(\d+) matching lines", r"\1 行匹配"),
        (
            r"inferred: (.+); a silent death is most often a SIGKILL from the OOM killer",
            r"推断：\1；进程无声无息地死掉，多半是被 OOM killer 发了 SIGKILL",
        ),
        (r"(\S+) is (.+) in this job", r"这个任务里 \1 是 \2"),
        (r"to confirm: (.+)", r"确认方法：\1"),
        (r"inferred: (.+); (.+)", r"推断：\1；\2"),
        (
            r"a (\S+) raised where (\S+) calls (\S+): the installed versions do not fit together",
            r"在 \2 调用 \3 的地方抛出的 \1：装的两个版本对不上",
        ),
        (
            r"a (\S+) about (\S+): the installed version is not the one this code expects",
            r"关于 \2 的 \1：装的版本不是这段代码要的版本",
        ),
        (
            r"the exception \((\S+), raised at (.+)\) names this failure",
            r"异常（\1，抛出位置 \2）本身就说明了是这个故障",
        ),
        (r"this job was started with (`.+`)", r"这个任务是用 \1 启动的"),
        # Decisions made per finding (conclude/actions.py, rlfix.model.INVESTIGATE).
        (
            r"known only by its shape, not by a line that names the cause: read the evidence",
            "只是从形态上认出来的，没有一行日志直接说出原因：先读证据",
        ),
        (
            r"Xid (\d+) is usually the application's own fault \(NVIDIA: restart the app, check it\), not the GPU's",
            r"Xid \1 通常是应用自己的问题（NVIDIA：重启应用并检查它），不是 GPU 的问题",
        ),
        (
            r"Xid (\d+): NVIDIA's resolution bucket is (\w+): take the node out until the GPU is reset or repaired",
            r"Xid \1：NVIDIA 的处理建议是 \2：在 GPU 重置或修好之前把节点摘掉",
        ),
        (
            r"Xid (\d+): NVIDIA's resolution bucket is RESTART_APP: the error was contained, the GPU stays usable",
            r"Xid \1：NVIDIA 的处理建议是 RESTART_APP：错误已被隔离，GPU 仍可使用",
        ),
        (
            r"Xid (\d+): NVIDIA's resolution bucket asks for no immediate action: "
            r"it is unlikely to be what ended the job",
            r"Xid \1：NVIDIA 的处理建议是无需立即处理：它不太可能是任务结束的原因",
        ),
        (
            r"(\S+): (.+) -> (\S+) \(the usual (.+) is not below this job's (.+); lower it by about 0\.2\)",
            r"\1: \2 -> \3（常用值 \4 并不比这个任务的 \5 低；降低约 0.2）",
        ),
    )
)

#: Pieces of reasons written by conclude/tail.py and rlfix.details.SIGNAL_MEANINGS, replaced in order.
FRAGMENTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), zh)
    for p, zh in (
        (r"the worker died without printing an error", "worker 没有打印任何错误就死了"),
        (r"exit status (\d+): killed by signal (\d+) \((\w+)\)", r"退出码 \1：被信号 \2（\3）杀掉"),
        (r"exit status (-?\d+)", r"退出码 \1"),
        (
            r"killed by SIGKILL, which training jobs most often get from the kernel or container OOM killer",
            "被 SIGKILL 杀掉，训练任务收到它多半是因为内核或容器的 OOM killer",
        ),
        (r", or oom_kill in the cgroup's memory\.events", "，或者看 cgroup 的 memory.events 里的 oom_kill"),
        (r"a segmentation fault in native code", "native 代码里的段错误"),
        (r"a bus error, often a too-small /dev/shm", "总线错误，常见原因是 /dev/shm 太小"),
        (r"an illegal instruction: a binary built for another CPU", "非法指令：二进制是为别的 CPU 编译的"),
        (r"a floating point exception in native code", "native 代码里的浮点异常"),
        (
            r"aborted in native code \(a failed C\+\+ assert, std::terminate\)",
            "native 代码里 abort 了（C++ assert 失败、std::terminate）",
        ),
        (r"terminated from outside \(scheduler, operator, launcher\)", "被外部终止（调度器、运维、launcher）"),
        (r"the terminal that started it went away", "启动它的终端断开了"),
        (r"interrupted \(Ctrl-C\)", "被中断（Ctrl-C）"),
        (r"run with PYTHONFAULTHANDLER=1 for the stack", "用 PYTHONFAULTHANDLER=1 再跑一次拿到调用栈"),
        (r"run with PYTHONFAULTHANDLER=1", "用 PYTHONFAULTHANDLER=1 再跑一次"),
        (r"pip check; the wheel's arch", "pip check；看 wheel 的架构"),
        (r"the lines before it", "看它前面的几行"),
        (r"run it under nohup or tmux", "用 nohup 或 tmux 运行"),
        (r"who stopped it", "查清是谁停掉了它"),
    )
)

#: The pieces numbers are said in (conclude/quantities.py), replaced in order.
QUANTITIES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), zh)
    for p, zh in (
        (r"tried to allocate (\S+ \S+)", r"尝试分配 \1"),
        (r"on a GPU with (\S+ \S+) in total, of which (\S+ \S+) was free", r"GPU 总容量 \1，其中空闲 \2"),
        (r"on a GPU with (\S+ \S+) in total", r"GPU 总容量 \1"),
        (r"(\S+ \S+) reserved by PyTorch but unallocated \(fragmentation\)", r"PyTorch 预留但未分配 \1（显存碎片）"),
        (r"node memory (\S+) GB of (\S+) GB", r"节点内存已用 \1 GB，共 \2 GB"),
        (r", above Ray's kill threshold (\S+)", r"，超过 Ray 的 kill 阈值 \1"),
        (r"^killed: ", "被杀："),
        (r" ran (\d+) s against a (\d+) s timeout", r" 已运行 \1 s，超时阈值 \2 s"),
        (r" ran (\d+) s", r" 已运行 \1 s"),
        (r"the kernel killed a process", "内核杀掉了一个进程"),
        (r"the kernel killed (\S+)", r"内核杀掉了 \1"),
        (r" using (\S+) GiB of resident memory", r"，常驻内存 \1 GiB"),
        (r"requested (.+), which no node of the cluster can provide", r"申请了 \1，集群里没有任何节点能满足"),
        (r"(\S+) GiB of (\S+) GiB free on the GPU when vLLM started", r"vLLM 启动时 GPU 空闲 \1 GiB（共 \2 GiB）"),
        (r"(\S+) GiB free on the GPU when vLLM started", r"vLLM 启动时 GPU 空闲 \1 GiB"),
        (
            r"max model length (\d+) tokens does not fit in the KV cache",
            r"max model length \1 个 token 放不进 KV cache",
        ),
        (r"; ", "；"),
    )
)

#: English template -> Simplified Chinese, for every phrase a report, `explain` or the CLI prints.
ZH: dict[str, str] = {
    # reports, every format
    "{n} inputs": "{n} 个输入",
    "line {line}": "第 {line} 行",
    "seen on {n} ranks ({shown})": "在 {n} 个 rank 上出现（{shown}）",
    "{n} workers": "{n} 个 worker",
    "{n} nodes": "{n} 个节点",
    "any framework": "任意框架",
    "; cost: {cost}": "；代价：{cost}",
    "; {n} thing{s} worth knowing below": "；下面有 {n} 条值得留意的信息",
    "{id}{count}: {title} — first at {where}": "{id}{count}：{title} — 最早出现在 {where}",
    "during {stage}": "发生在{stage}阶段",
    "after step {step}": "在 step {step} 之后",
    "first seen on {place}": "最早出现在 {place}",
    "first at {where}": "最早出现在 {where}",
    "then collateral on {listed}": "随后波及 {listed}",
    "exception: {text}": "异常：{text}",
    "raised at: {text}": "抛出位置：{text}",
    "named by concept: {name}": "由概念认出：{name}",
    "known message: {source}": "已知消息：{source}",
    "exit code: {code}": "退出码：{code}",
    "error x{n}: {template}": "错误 x{n}：{template}",
    "collective hang: {text}": "集合通信卡住：{text}",
    "version mismatch: {text}": "版本不匹配：{text}",
    "similar known failures: {text}": "相似的已知故障：{text}",
    "(nothing recognised)": "（未识别到）",
    "{kind}, {severity}, confidence {confidence:.2f}": "{kind}，{severity}，置信度 {confidence:.2f}",
    "{n} matching lines": "{n} 行匹配",
    # text
    "rlfix: no failure recognised": "rlfix：未识别到故障",
    " in {what} ({lines:,} lines){notes}.": "（{what}，{lines:,} 行）{notes}。",
    "rlfix: {n} finding{s}": "rlfix：{n} 个问题",
    " in {what} ({lines:,} lines), most likely cause first.": "（{what}，{lines:,} 行），最可能的原因排在最前。",
    "job: ": "任务：",
    "failed: ": "失败：",
    "({n} more finding{s}; --all shows them)": "（还有 {n} 个问题未显示；--all 可全部显示）",
    "worth knowing (warnings, not the cause):": "值得留意（警告，不是原因）：",
    "skipped {name}: {why}": "已跳过 {name}：{why}",
    "error: {text}": "错误：{text}",
    "   evidence:": "   证据：",
    "   action: ": "   处理：",
    "{action} (owner: {owner}): {reason}": "{action}（负责方：{owner}）：{reason}",
    "**Action:** ": "**处理：** ",
    "## rlfix excerpt: no failure recognised": "## rlfix 摘录：没有识别到故障",
    "excerpt of {lines} lines": "摘自 {lines} 行日志",
    "; {n} more finding(s) left out": "；另有 {n} 个问题未列出",
    "**Flags:** ": "**参数：** ",
    "Action": "处理",
    "What to do": "怎么处理",
    "   values: {values}": "   提取的数值：{values}",
    "   explains: {explained}": "   可解释：{explained}",
    "   why first: ": "   为什么排第一：",
    "   why here: ": "   为什么排在这里：",
    "   fix:": "   修复：",
    "     ({n} flag{s} for other frameworks; --all-flags)": "     （另有 {n} 个其他框架的参数；--all-flags 可显示）",
    # Markdown
    "## rlfix diagnosis": "## rlfix 诊断",
    "No failure recognised{notes}.": "未识别到故障{notes}。",
    "**Job:** {text}": "**任务：** {text}",
    "**Failed:** {text}": "**失败：** {text}",
    "*{n} more finding(s) not shown.*": "*还有 {n} 个问题未显示。*",
    "**Worth knowing** (warnings, not the cause):": "**值得留意**（警告，不是原因）：",
    "> error: {text}": "> 错误：{text}",
    "**Evidence**": "**证据**",
    "**Explains:** ": "**可解释：** ",
    "**Why ranked here:** ": "**排序理由：** ",
    "**Fix**": "**修复**",
    "| flag | framework | purpose | cost | note |": "| 参数 | 框架 | 用途 | 代价 | 说明 |",
    "References: ": "参考资料：",
    # HTML
    "rlfix report": "rlfix 报告",
    "Copy to the clipboard": "复制到剪贴板",
    "copy": "复制",
    "now {current}": "当前为 {current}",
    "Explains {n} other finding{s}: ": "可解释另外 {n} 个问题：",
    "{n} line(s)": "{n} 行",
    "Why it ranks first": "为什么排第一",
    "Why it ranks here": "为什么排在这里",
    "Fix": "修复",
    "flag": "参数",
    "form": "形式",
    "framework": "框架",
    "purpose": "用途",
    "cost": "代价",
    "note": "说明",
    "confidence {confidence:.2f}": "置信度 {confidence:.2f}",
    "values: ": "提取的数值：",
    "{n} flag{s} for frameworks not detected in the log (<code>--all-flags</code> shows them).": (
        "另有 {n} 个参数属于日志里没有检测到的框架（<code>--all-flags</code> 可显示）。"
    ),
    "frameworks": "框架",
    "versions": "版本",
    "GPUs": "GPU",
    "inputs": "输入",
    "skipped": "已跳过",
    "error": "错误",
    "{name} ({lines:,} lines)": "{name}（{lines:,} 行）",
    ", and {n} more": "，另有 {n} 个",
    "{n} setting(s) seen in the log": "日志中出现的 {n} 个配置项",
    "Job": "任务",
    "No failure recognised in {what} ({lines:,} lines){notes}.": "{what}（{lines:,} 行）中未识别到故障{notes}。",
    "{n} finding{s} in {what} ({lines:,} lines). ": "{what}（{lines:,} 行）中有 {n} 个问题。",
    "Most likely cause: {id}, {title}, first at {where}.": "最可能的原因：{id}，{title}，最早出现在 {where}。",
    "Failed {text}.": "失败：{text}。",
    "Diagnoses, most likely cause first": "诊断结果，最可能的原因排在最前",
    "{n} more finding{s} not shown (<code>--all</code> shows them).": (
        "还有 {n} 个问题未显示（<code>--all</code> 可全部显示）。"
    ),
    "Worth knowing": "值得留意",
    "Warnings, not the cause.": "这些是警告，不是原因。",
    "rlfix {version}{engine}. Self-contained page: nothing is fetched.": (
        "rlfix {version}{engine}。独立页面：不会从网络加载任何内容。"
    ),
    ", engine {engine}": "，匹配引擎 {engine}",
    "rlfix: no failure recognised in the log": "rlfix：日志中未识别到故障",
    "rank{s} {shown}": "rank {shown}",
    "{n} worker{s}": "{n} 个 worker",
    "node{s} {shown}": "节点 {shown}",
    # timeline (svg.py)
    "Timeline": "时间线",
    "first failure: {label}": "最早的故障：{label}",
    "time (from the log's timestamps)": "时间（取自日志时间戳）",
    "log position (matched lines, in order)": "日志位置（按顺序排列的匹配行）",
    "Timeline of matched lines by {what}": "匹配行的时间线（按 {what}）",
    "rank, worker or source": "rank、worker 或来源文件",
    "folded under {id}": "折叠在 {id} 之下",
    "click to highlight": "点击高亮",
    "{kind}, {n} line(s)": "{kind}，{n} 行",
    "Showing the first {drawn:,} of {matched:,} matched lines.": "只显示了 {matched:,} 个匹配行中的前 {drawn:,} 个。",
    # explain, kb show
    "What happened": "发生了什么",
    "How to fix": "怎么修",
    "Flags by framework": "各框架的参数",
    "Explains: ": "可解释：",
    "Supersedes: ": "优先于：",
    "Looks like": "日志长这样",
    "References": "参考资料",
    # catalogue
    "# Failure catalogue": "# 故障目录",
    "**How to fix**": "**怎么修**",
    "**Flags by framework**": "**各框架的参数**",
    "**Looks like**": "**日志长这样**",
    "**References:** ": "**参考资料：** ",
    # version mismatches and collective hangs (rlfix/details.py)
    "the installed {callee} is not the version this code was written for": "装的 {callee} 不是这段代码适配的版本",
    "{caller} calls {callee} in a way that version does not support": "{caller} 调用 {callee} 的方式，这个版本不支持",
    "; it asks for {wanted} ({source})": "；它要求 {wanted}（{source}）",
    "rank {rank} is at {where}": "rank {rank} 停在 {where}",
    " while {ranks} {verb} in {where}": "，而 {ranks} 在 {where} 里等待",
    "{ranks} {verb} in {where}": "{ranks} 在 {where} 里等待",
    "; {ranks} never reported a timeout (dead or stuck before it)": (
        "；{ranks} 始终没有报超时（在此之前已经挂掉或卡住）"
    ),
    ": look at {ranks}": "：先看 {ranks}",
    ": every rank waits in the same collective, so the cause is outside it (a rank that stopped "
    "calling collectives, or the network)": (
        "：所有 rank 都在同一个集合通信里等待，原因不在它本身（有 rank 不再调用集合通信，或者网络有问题）"
    ),
    "rlfix: the command failed ({how})": "rlfix：命令失败（{how}）",
    "; no known failure recognised in {what} ({lines:,} lines){notes}.": (
        "；在 {what}（{lines:,} 行）里没有识别到已知故障{notes}。"
    ),
    # the fleet table (rlfix triage)
    "rlfix triage: {jobs} job{s}, {failed} failed, {causes} cause{cs}{since}": (
        "rlfix triage：{jobs} 个任务，{failed} 个失败，{causes} 种原因{since}"
    ),
    " since {since} ({n} older left out)": "（{since} 之后；略去了 {n} 个更早的任务）",
    "dead worker: {text}": "死掉的 worker：{text}",
    "kernel OOM: {text}": "内核 OOM：{text}",
    "last words ({place}): {text}": "最后的输出（{place}）：{text}",
    # one section per job of a Ray cluster (rlfix ray logs / ray cluster)
    "{title}: {jobs} job{s}, {failed} failed": "{title}：{jobs} 个任务，{failed} 个失败",
    "findings of no job (node logs outside every job's time)": "不属于任何任务的发现（所有任务时间之外的节点日志）",
    "cause": "原因",
    "action": "处理",
    "owner": "负责方",
    " with action {actions} ({n} other left out)": "（处理方式 {actions}；略去了 {n} 个其他任务）",
    "by action: {listed}": "按处理方式：{listed}",
    "{n} job{s}": "{n} 个任务",
    "**Nodes to cordon:** ": "**要摘除的节点：** ",
    "Nodes to cordon": "要摘除的节点",
    "jobs": "任务数",
    "first seen": "最早出现",
    "last seen": "最近出现",
    "example job": "示例任务",
    "evidence": "证据",
    "unreadable": "无法读取",
    "Unreadable": "无法读取",
    "rlfix: unreadable: {what}": "rlfix：无法读取：{what}",
    "Skipped": "已跳过",
    "rlfix: skipped: {what}": "rlfix：已跳过：{what}",
    "rlfix: {job} failed ({how})": "rlfix：{job} 失败（{how}）",
    "no known failure recognised": "未识别出已知故障",
    "rlfix: {job} failed: {cause}": "rlfix：{job} 失败：{cause}",
    "fix: {fix}": "修复：{fix}",
    "rlfix: warning: notification not sent: {why}": "rlfix：警告：通知未发送：{why}",
    "Click a column header to sort.": "点击表头排序。",
    # CLI
    "rlfix: error: {message}": "rlfix：错误：{message}",
    "rlfix: warning: {message}": "rlfix：警告：{message}",
    "rlfix: interrupted": "rlfix：已中断",
}

#: One-line errors the CLI prints, by shape (errors.py and the commands raise them in English).
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), zh)
    for p, zh in (
        (r"cannot write (.+?): (.+)", r"无法写入 \1：\2"),
        (r"unknown id (.+); `rlfix kb list` shows the known ids", r"未知的 id \1；`rlfix kb list` 会列出所有已知 id"),
        (r"unknown format (.+); choose from (.+)", r"未知的输出格式 \1；可选：\2"),
        (r"unknown language (.+); choose from (.+)", r"未知的语言 \1；可选：\2"),
        (r"unknown matching engine (.+); use one of: (.+)", r"未知的匹配引擎 \1；可选：\2"),
        (r"--follow needs exactly one FILE", r"--follow 只能跟一个 FILE"),
        (r"(.+): is a directory; --follow needs one file", r"\1：是一个目录；--follow 只能跟一个文件"),
        (r"(.+): no such file or directory", r"\1：文件或目录不存在"),
        (r"(.+): no such directory(.*)", r"\1：目录不存在\2"),
        (r"no failure found in the log to draft a signature from", r"日志里没有找到可以用来起草 signature 的故障"),
        (r"the log is already diagnosed as (.+); nothing to draft", r"这个日志已经被诊断为 \1，不需要起草"),
        (r"the Ray integration needs Ray: (.+)", r"Ray 集成需要先安装 Ray：\1"),
        (r"cannot reach a Ray cluster at (.+)", r"连不上 \1 的 Ray 集群"),
        (r"no Ray job (.+); `ray job list` shows the jobs", r"没有 Ray job \1；`ray job list` 会列出所有 job"),
        (r"invalid knowledge base: (.+)", r"知识库无效：\1"),
    )
)


def error(message: str, lang: str = DEFAULT) -> str:
    """A one-line error message in `lang` (the shapes rlfix raises; anything else as it is)."""
    if lang != "zh":
        return message
    for pattern, chinese in ERRORS:
        match = pattern.fullmatch(message)
        if match:
            return match.expand(chinese)
    return message
