"""Mine the error messages a Python project raises, asserts, logs or exits with, from its source.

Run at development time on unpacked sources (a wheel or sdist from PyPI, or a git snapshot); it
writes `fixtures/messages/<project>.yaml` through `common.write_catalogue`. CI only reads the
committed files. See scripts/catalogue/README.md for the exact commands and versions.

    python scripts/catalogue/mine_python.py --sources /path/to/unpacked --all
    python scripts/catalogue/mine_python.py --sources /path/to/unpacked vllm ray

`--sources` holds one folder per project, named as in PROJECTS (`<sources>/<folder>`); each
project's package folders are found under it by name. Nothing here imports rlfix.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import re
import sys
from dataclasses import dataclass
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from scripts.catalogue.apply_review import apply as apply_review  # noqa: E402
from scripts.catalogue.apply_review import load_review  # noqa: E402
from scripts.catalogue.common import (  # noqa: E402
    CATALOGUE,
    Entry,
    cap,
    catalogue_files,
    dedupe,
    load_catalogue_file,
    template_key,
    write_catalogue,
)
from scripts.catalogue.fill import fill_template  # noqa: E402
from scripts.catalogue.labels import label  # noqa: E402

GENERATOR = "python scripts/catalogue/mine_python.py --sources SRC --all"

#: Folders never mined: tests, examples, docs, benchmarks, vendored third-party code.
SKIP_DIRS = {
    "tests", "test", "testing", "_testing", "examples", "example", "docs", "doc", "benchmarks",
    "benchmark", "_vendor", "vendor", "vendored", "thirdparty", "third_party", "thirdparty_files",
    "cloudpickle", "_internal_testing", "test_utils", "vllm_flash_attn",
}  # fmt: skip

LOG_METHODS = {"error", "critical", "exception", "fatal"}
ERROR_WORD = re.compile(r"[A-Za-z]{2,}")
_PERCENT = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.\d+)?[sdifrxXeEgGcuo]")
_BRACE = re.compile(r"\{[^{}]*\}")


@dataclass(frozen=True)
class Project:
    """Where a project's source lives and how it prints a log line."""

    folder: str  # folder under --sources
    packages: tuple[str, ...]  # package folder names to mine (found anywhere under folder)
    log_style: str  # key of LOG_STYLES
    version: str  # wheel version or git commit
    origin: str  # how the source was obtained (README)
    files: tuple[str, ...] = ()  # single modules instead of packages


PROJECTS: dict[str, Project] = {
    "pytorch": Project("torch", ("torch",), "torch", "2.13.0", "pip download --no-deps torch==2.13.0 (+cpu wheel; Python part)"),
    "vllm": Project("vllm", ("vllm",), "vllm", "0.33.0", "pip download --no-deps vllm==0.33.0"),
    "sglang": Project("sglang", ("sglang",), "sglang", "0.5.23", "pip download --no-deps sglang==0.5.23"),
    "ray": Project("ray", ("ray",), "ray", "2.60.0", "pip download --no-deps ray==2.60.0 (Python part)"),
    "deepspeed": Project("deepspeed-0.19.8", ("deepspeed",), "deepspeed", "0.19.8", "pip download --no-deps deepspeed==0.19.8 (sdist)"),
    "transformers": Project("transformers", ("transformers",), "hf", "5.24.0", "pip download --no-deps transformers==5.24.0"),
    "accelerate": Project("accelerate", ("accelerate",), "plain", "1.15.0", "pip download --no-deps accelerate==1.15.0"),
    "trl": Project("trl", ("trl",), "hf", "1.16.0", "pip download --no-deps trl==1.16.0"),
    "peft": Project("peft", ("peft",), "hf", "0.21.2", "pip download --no-deps peft==0.21.2"),
    "datasets": Project("datasets", ("datasets",), "hf", "5.2.0", "pip download --no-deps datasets==5.2.0"),
    "huggingface_hub": Project("huggingface-hub", ("huggingface_hub",), "hf", "2.4.0", "pip download --no-deps huggingface_hub==2.4.0"),
    "verl": Project("verl", ("verl",), "verl", "0.9.1", "pip download --no-deps verl==0.9.1"),
    "openrlhf": Project("openrlhf", ("openrlhf",), "openrlhf", "0.11.2", "pip download --no-deps openrlhf==0.11.2"),
    "megatron-core": Project("megatron-core", ("megatron",), "plain", "0.16.1", "pip download --no-deps megatron-core==0.16.1"),
    "flash-attn": Project("flash-attn", ("flash_attn", "hopper"), "plain", "2.8.4 (git 0251105a2fb1)", "fetch github:Dao-AILab/flash-attention; git archive HEAD flash_attn hopper"),
    "hydra-core": Project("hydra-core", ("hydra",), "hydra", "1.3.8", "pip download --no-deps hydra-core==1.3.8"),
    "omegaconf": Project("omegaconf", ("omegaconf",), "plain", "2.4.0", "pip download --no-deps omegaconf==2.4.0"),
    "argparse": Project("argparse", (), "plain", "CPython 3.11.7", "the interpreter's Lib/argparse.py", ("argparse.py",)),
}  # fmt: skip

STAMP = "2026-11-26 14:10:50"


def log_prefix(style: str, level: str, path: str, lineno: int, func: str, logger_name: str) -> str:
    """The text a project's logging setup prints before an ERROR/CRITICAL message."""
    filename = path.rsplit("/", 1)[-1]
    if style == "vllm":
        proc = "APIServer" if "/entrypoints/" in path else "EngineCore_DP0"
        return f"({proc} pid=2417) {level} 11-26 14:10:50 [{filename}:{lineno}] "
    if style == "ray":
        return f"2026-11-26 14:10:50,123\t{level} {filename}:{lineno} -- "
    if style == "sglang":
        return f"[{STAMP}] "
    if style == "deepspeed":
        return f"[{STAMP},123] [{level}] [{filename}:{lineno}:{func}] "
    if style == "openrlhf":
        return f"{level} 11-26 14:10:50 {filename}:{lineno}] "
    if style == "verl":
        return f"{level}:{STAMP},123:"
    if style == "torch":
        return f"{level[0]}1126 14:10:50.123000 2417 {path}:{lineno}] "
    if style == "hydra":
        return f"[{STAMP},123][{logger_name}][{level}] - "
    if style == "hf":
        return ""  # transformers-style loggers print the bare message by default
    return f"{level}:{logger_name}:"


def _fmt_to_braces(text: str, how: str) -> str:
    """A %-format or str.format template written with `{}` placeholders."""
    if how == "percent":
        return _PERCENT.sub("{}", text.replace("%%", "%"))
    if how == "format":
        return _BRACE.sub("{}", text).replace("{{", "{").replace("}}", "}")
    return text


class _Builder:
    """Turns a message expression into a template (`{}` placeholders) and placeholder hints."""

    def __init__(self, assigned: dict[str, ast.expr]):
        self.assigned = assigned
        self.hints: list[str] = []

    def build(self, node: ast.expr, depth: int = 0) -> str | None:
        if depth > 4:
            return None
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) else None
        if isinstance(node, ast.JoinedStr):
            return self._joined(node)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            left = self.build(node.left, depth + 1)
            if left is None:
                return None
            named = re.findall(r"%\((\w+)\)", left)
            args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            self.hints.extend(named or [_hint(a) for a in args])
            return _fmt_to_braces(left, "percent")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            parts = [self.build(node.left, depth + 1), self.build(node.right, depth + 1)]
            for side, part in zip((node.left, node.right), parts):
                if part is None:
                    self.hints.append(_hint(side))
            return "".join("{}" if p is None else p for p in parts)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "format":
                base = self.build(node.func.value, depth + 1)
                if base is None:
                    return None
                fields = re.findall(r"\{([^{}:!]*)", base)
                if fields and all(f and not f.isdigit() for f in fields):
                    self.hints.extend(fields)
                else:
                    self.hints.extend(_hint(a) for a in node.args)
                    self.hints.extend(k.arg or "" for k in node.keywords)
                return _fmt_to_braces(base, "format")
            if node.func.attr in ("strip", "rstrip", "lstrip") or node.func.attr == "join":
                return self.build(node.func.value, depth + 1) if node.func.attr != "join" else None
        if isinstance(node, ast.Call) and _call_name(node.func) in ("_", "gettext", "ngettext"):
            return self.build(node.args[0], depth + 1) if node.args else None
        if isinstance(node, ast.Name) and node.id in self.assigned:
            return self.build(self.assigned[node.id], depth + 1)
        return None

    def _joined(self, node: ast.JoinedStr) -> str:
        out = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                out.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                inner = value.value
                text = self.build(inner, 1) if isinstance(inner, ast.Constant | ast.JoinedStr) else None
                if text is not None and "{}" not in text:
                    out.append(text)
                else:
                    self.hints.append(_hint(inner))
                    out.append("{}")
        return "".join(out)


def _hint(node: ast.expr) -> str:
    """A short name for a placeholder's expression (`args.max_model_len` -> `max_model_len`)."""
    try:
        text = ast.unparse(node)
    except Exception:  # pragma: no cover - ast.unparse covers every expression node
        return ""
    return text[-80:]


def _call_name(func: ast.expr) -> str:
    """`ValueError` for `ValueError(...)`, `errors.ConfigKeyError(...)` and the like."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _receiver(func: ast.Attribute) -> str:
    try:
        return ast.unparse(func.value)
    except Exception:  # pragma: no cover
        return ""


@dataclass
class Site:
    """One raise/assert/log/exit site, before labelling."""

    path: str
    lineno: int
    func: str
    kind: str
    cls: str  # exception class (raise/assert) or logger level
    template: str
    hints: list[str]


class _Visitor(ast.NodeVisitor):
    """Collects the message sites of one module, with the function each is in."""

    def __init__(self, path: str, is_argparse: bool):
        self.path = path
        self.is_argparse = is_argparse
        self.scopes: list[tuple[str, dict[str, ast.expr]]] = [("<module>", {})]
        self.sites: list[Site] = []

    def _scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        outer = self.scopes[-1][0]
        name = node.name if outer == "<module>" else f"{outer}.{node.name}"
        self.scopes.append((name, {}))
        self.generic_visit(node)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scope

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.scopes[-1][1][node.targets[0].id] = node.value
        self.generic_visit(node)

    def _add(
        self, node: ast.AST, kind: str, cls: str, msg: ast.expr | None, log_args: list[ast.expr] | None = None
    ) -> None:
        if msg is None:
            return
        builder = _Builder(self.scopes[-1][1])
        template = builder.build(_ungettext(msg))
        if template is None:
            return
        if log_args:
            # logging formats `msg % args` itself: `logger.error("failed: %s", err)`
            template = _fmt_to_braces(template, "percent")
            builder.hints.extend(_hint(a) for a in log_args)
        self.sites.append(Site(self.path, node.lineno, self.scopes[-1][0], kind, cls, template, builder.hints))

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call):
            cls = _call_name(exc.func)
            if cls[:1].isupper() or cls.endswith("Error"):
                args = list(exc.args)
                kind = f"raise {cls}"
                if self.is_argparse and cls in ("ArgumentError", "ArgumentTypeError"):
                    args = args[1:] if cls == "ArgumentError" else args
                    # Raised while parsing the command line, argparse prints it as a usage error.
                    if not re.search(r"add_|conflict|_registry|__init__", self.scopes[-1][0]):
                        kind, cls = "parser.error", "argument"
                kw = {k.arg: k.value for k in exc.keywords}
                msg = args[0] if args else kw.get("msg", kw.get("message"))
                self._add(node, kind, cls, msg)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._add(node, "assert", "AssertionError", node.msg)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and node.args:
            recv = _receiver(func)
            if func.attr in LOG_METHODS and ("log" in recv.lower()):
                self._add(node, f"logger.{func.attr}", func.attr, node.args[0], node.args[1:])
            elif func.attr == "exit" and recv == "sys":
                self._add(node, "sys.exit", "exit", node.args[0])
            elif func.attr == "error" and ("parser" in recv.lower() or (self.is_argparse and recv == "self")):
                self._add(node, "parser.error", "error", node.args[0])
        self.generic_visit(node)


def _ungettext(node: ast.expr) -> ast.expr:
    """`_('text') % x` -> `'text' % x` (argparse and others wrap messages in gettext)."""
    if isinstance(node, ast.Call) and _call_name(node.func) in ("_", "gettext", "ngettext"):
        return node.args[0] if node.args else node
    if isinstance(node, ast.BinOp):
        return ast.BinOp(_ungettext(node.left), node.op, node.right)
    return node


def module_files(root: Path, project: Project) -> list[tuple[Path, str]]:
    """Each .py file to mine with its path relative to the package root's parent."""
    found: list[tuple[Path, str]] = []
    for name in project.files:
        for path in sorted(root.rglob(name)):
            found.append((path, name))
            break
    for package in project.packages:
        tops = sorted(
            (p for p in root.rglob(package) if p.is_dir() and any(p.glob("*.py"))),
            key=lambda p: len(p.parts),
        )
        tops = tops or sorted((p for p in root.rglob(package) if p.is_dir()), key=lambda p: len(p.parts))
        if not tops:
            raise SystemExit(f"no package folder {package} under {root}")
        top = tops[0]
        for path in sorted(top.rglob("*.py")):
            rel = path.relative_to(top.parent)
            if SKIP_DIRS.intersection(rel.parts[:-1]) or rel.name.startswith("test_"):
                continue
            found.append((path, rel.as_posix()))
    return found


def class_index(files: list[tuple[Path, str]]) -> dict[str, list[str]]:
    """Exception class name -> the dotted modules that define it in this project."""
    index: dict[str, list[str]] = {}
    for path, rel in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        module = rel[:-3].replace("/", ".").removesuffix(".__init__")
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                index.setdefault(node.name, []).append(module)
    return index


def printed_class(cls: str, rel: str, index: dict[str, list[str]]) -> str:
    """The class as a traceback prints it: builtins bare, project classes with their module."""
    if cls in dir(builtins) or cls not in index:
        return cls
    here = rel[:-3].replace("/", ".").removesuffix(".__init__")
    module = here if here in index[cls] else index[cls][0]
    if module.startswith("torch._C") or module == "__main__":
        return cls
    return f"{module}.{cls}"


def keep(site: Site) -> bool:
    """Drop sites that are no error a user would read: warnings, bare variables, too few words."""
    if "Warning" in site.cls or site.cls in (
        "StopIteration",
        "StopAsyncIteration",
        "KeyboardInterrupt",
        "SystemExit",
        "GeneratorExit",
    ):
        return False
    words = ERROR_WORD.findall(_BRACE.sub(" ", site.template))
    # argparse prints its messages after `prog: error:`, so two words already say what is wrong.
    return len(words) >= (2 if site.kind == "parser.error" and site.path == "argparse.py" else 3)


def render(project: str, proj: Project, site: Site, index: dict[str, list[str]]) -> Entry:
    """The entry of one site: template, the log line with values filled in, the label."""
    filled = fill_template(site.template, site.hints, f"{site.path}:{site.lineno}")
    logger_name = site.path[:-3].replace("/", ".").removesuffix(".__init__")
    if site.kind.startswith("raise") or site.kind == "assert":
        shown = printed_class(site.cls, site.path, index)
        line = f"{shown}: {filled}"
    elif site.kind.startswith("logger."):
        level = "CRITICAL" if site.cls in ("critical", "fatal") else "ERROR"
        line = (
            log_prefix(proj.log_style, level, site.path, site.lineno, site.func.rsplit(".", 1)[-1], logger_name)
            + filled
        )
    elif site.kind == "parser.error":
        arg = "argument --lr: " if site.cls == "argument" else ""
        line = f"usage: train.py [-h] [options]\ntrain.py: error: {arg}{filled}"
    else:
        line = filled
    expect, why = label(project, f"{site.path}:{site.lineno}", site.kind, site.cls, site.template)
    source = f"{site.path}:{site.lineno} [{site.func}]"
    return Entry(project, proj.version, source, site.kind, site.template.strip(), line.strip(), expect, why)


def mine(project: str, sources: Path) -> list[Entry]:
    """Every kept message site of one project, as catalogue entries (not yet deduplicated)."""
    proj = PROJECTS[project]
    files = module_files(sources / proj.folder, proj)
    index = class_index(files)
    entries = []
    for path, rel in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        visitor = _Visitor(rel, project == "argparse")
        visitor.visit(tree)
        entries.extend(render(project, proj, s, index) for s in visitor.sites if keep(s))
    return entries


def foreign_keys(directory: Path = CATALOGUE) -> set[str]:
    """Template keys of catalogue files another generator wrote (the native miner's)."""
    keys: set[str] = set()
    for path in catalogue_files(directory):
        head = path.read_text(encoding="utf-8").split("\n", 1)[0]
        if "mine_python.py" not in head and path.stem not in PROJECTS:
            keys.update(template_key(e.template) for e in load_catalogue_file(path))
    return keys


#: Folder of the second readers' reviews of the Python files (review_python_a.yaml, review_python_b.yaml).
REVIEWS_DIR = Path(__file__).resolve().parent


def apply_python_reviews(entries: list[Entry], strict: bool = True) -> list[Entry]:
    """`entries` (one project's, already capped) with every review_python_*.yaml applied.

    Applied after the cap, as mine_native.py does with its review, so that a regeneration keeps the
    reviewed labels and drops; `strict` fails on a row that matches no entry or several (stale review).
    """
    rows = [row for path in sorted(REVIEWS_DIR.glob("review_python_*.yaml")) for row in load_review(path)]
    return apply_review(entries, rows, strict=strict)


def relabel() -> int:
    """Re-run the label rules (and the hand table) on the committed files, keeping all else."""
    for name in PROJECTS:
        path = CATALOGUE / f"{name}.yaml"
        if not path.exists():
            continue
        entries = []
        for e in load_catalogue_file(path):
            cls = {"assert": "AssertionError", "sys.exit": "exit", "parser.error": "error"}.get(
                e.kind, e.kind.split(" ", 1)[-1].split(".", 1)[-1]
            )
            expect, why = label(name, e.source.split(" ", 1)[0], e.kind, cls, e.template)
            entries.append(Entry(**{**e.__dict__, "expect": expect, "why": why}))
        # The committed files are capped and reviewed already: reviewed entries get their review
        # label back, dropped ones are absent (hence not strict).
        write_catalogue(name, apply_python_reviews(entries, strict=False), GENERATOR, capped=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=Path, required=True, help="folder of unpacked sources")
    parser.add_argument("--all", action="store_true", help="mine every project in PROJECTS")
    parser.add_argument("--relabel", action="store_true", help="only re-run the label rules on the committed files")
    parser.add_argument("projects", nargs="*", help="project names (keys of PROJECTS)")
    args = parser.parse_args(argv)
    if args.relabel:
        return relabel()
    # Always mine every project in the fixed order, so that the cross-project dedupe (a
    # template goes to the first project that has it) gives the same files for any subset.
    names = list(PROJECTS)
    wanted = names if args.all else args.projects
    taken = foreign_keys()
    for name in names:
        entries = []
        for entry in mine(name, args.sources):
            key = template_key(entry.template)
            if key not in taken:
                entries.append(entry)
        kept_keys = {template_key(e.template) for e in entries}
        taken |= kept_keys
        if name in wanted:
            entries = apply_python_reviews(cap(dedupe(entries)))
            path = write_catalogue(name, entries, GENERATOR, capped=True)
            print(f"{name}: {len(kept_keys)} entries -> {path.relative_to(CATALOGUE.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
