"""The docs name files the repository has, and nothing of one machine.

- Every repository path a Markdown file names (README.md, docs/*.md and the READMEs beside the code)
  in backticks or as a link exists, and so does every one a Python docstring or comment names. A path
  starts with a top-level folder of the repository and a ``/`` (``sessions/runner.py``,
  ``kourier/doors/``); a module's attribute counts as its module (``sessions/runner.drive``); a
  migration is named as ``audit.0004_hash_chain``. Globs, placeholders and commands are no paths
  (``captures_*``, ``tests/<app>/test_<module>.py``, ``git show f255b0a~1:bench/…``), nor is what is
  made at run time (``var/``, ignored by git). A doc's plain prose is not read for paths: there a
  history may say what a file was called once (docs/performance.md).
- A section a reference names is there: ``docs/slack-platform.md §4.7`` names a heading numbered 4.7
  of that page.
- No doc, docstring or comment names a machine's absolute path (``/work/…``, ``/home/…``), nor notes
  kept outside the repository (``research/…``), but in the project's sibling folder (``../shared/``).
  ``/tmp/`` is a machine's path in prose only: in a command or a configuration (a code span, a code
  block, a container's settings) it is where that command writes.
"""

from __future__ import annotations

import ast
import functools
import io
import os
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_THE_REPOSITORY = {
    ".git",
    ".venv",
    "var",
    "build",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
}
FILE_SUFFIXES = {
    ".py", ".md", ".yaml", ".yml", ".toml", ".json", ".jsonl", ".txt", ".html", ".js", ".css", ".sh",
    ".cfg", ".ini", ".lock", ".patch", ".csv", ".sql",
}  # fmt: skip
NOT_A_PATH = re.compile(r"[\s*?\[\]{}<>…$~]|://")  # a command, a glob, a placeholder, a variable, a URL
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_BLOCK = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1", re.S | re.M)
MIGRATION = re.compile(r"^(?P<app>\w+)\.(?P<number>\d{4})(?P<name>_\w+)?$")
SECTION_REFERENCE = re.compile(r"(docs/[\w-]+\.md)`?((?:(?:,|;| and)?\s*§\d+(?:\.\d+)*(?:[-\u2013]\d+)?)+)")
SECTION_NUMBER = re.compile(r"§(\d+(?:\.\d+)*)(?:[-\u2013](\d+))?")
NUMBERED_HEADING = re.compile(r"^#{2,6} (\d+(?:\.\d+)*)\.? ", re.M)

# A machine's absolute paths: anywhere in a doc, docstring or comment. Not inside a URL or a longer path.
MACHINE_PATH = re.compile(r"(?<![\w.~/-])/(?:work|home|Users|root|mnt|var/folders)/")
SCRATCH_PATH = re.compile(r"(?<![\w.~/-])/tmp/")  # in prose only
RESEARCH = re.compile(r"(?<![\w-])(?:research/|kagent_probe\b)")
SIBLING = "../shared/"
OTHER_TEXT_FILES = {".html", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".ini", ".sh", ".example"}
OTHER_TEXT_NAMES = {"Makefile", "Dockerfile", "run"}


def repository_files(root: Path) -> Iterator[Path]:
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(
            name for name in subfolders if name not in NOT_THE_REPOSITORY and not name.endswith(".egg-info")
        )
        for name in sorted(names):
            yield Path(folder) / name


def top_level_folders(root: Path) -> set[str]:
    return {
        path.name
        for path in root.iterdir()
        if path.is_dir()
        and not path.name.startswith(".")
        and path.name not in NOT_THE_REPOSITORY
        and not path.name.endswith(".egg-info")
    }


def markdown_files(root: Path) -> list[Path]:
    return [path for path in repository_files(root) if path.suffix == ".md"]


def without_code_blocks(text: str) -> str:
    """The text with each fenced block blanked, its lines kept so that line numbers still match."""
    return CODE_BLOCK.sub(lambda block: "\n" * block.group(0).count("\n"), text)


def named_path(span: str, top_level: set[str]) -> str | None:
    """The repository path a code span names, or None when it names none."""
    text = span.strip()
    if NOT_A_PATH.search(text):
        return None
    text = re.sub(r"(:\d+(-\d+)?|#.*|::.*|\(\))$", "", text)  # a line, an anchor, a test's id, a call
    if "/" not in text or text.split("/", 1)[0] not in top_level:
        return None
    return text


def path_exists(path: str, folders: tuple[Path, ...]) -> bool:
    """Whether ``path`` is a file or folder below one of ``folders``, or a module's attribute
    (``sessions/runner.drive``, ``kourier/a2a/factory``) of a module there."""
    if any((folder / path).exists() for folder in folders):
        return True
    directory, _, last = path.rpartition("/")
    if not last or Path(last).suffix in FILE_SUFFIXES:
        return False
    module = f"{directory}/{last.split('.', 1)[0]}"
    return any((folder / f"{module}.py").exists() or (folder / module).is_dir() for folder in folders)


def migration_exists(span: str, root: Path) -> bool | None:
    """Whether a migration named as ``app.0004_name`` (or ``app.0004``) exists; None when the span
    names no migration of an app of the repository."""
    found = MIGRATION.match(span.strip())
    if found is None or not (root / found["app"] / "migrations").is_dir():
        return None
    pattern = f"{found['number']}{found['name']}.py" if found["name"] else f"{found['number']}_*.py"
    return any((root / found["app"] / "migrations").glob(pattern))


def missing_paths(root: Path) -> list[str]:
    """``file:line: path`` for each path a Markdown file, a docstring or a comment names that the
    repository does not have."""
    top_level = top_level_folders(root)
    missing = []
    first_names = "|".join(map(re.escape, sorted(top_level)))
    in_prose = re.compile(rf"(?<![\w./:$~-])(?:{first_names})/[^\s`'\"(),;]*")
    for module in repository_files(root):
        if module.suffix != ".py":
            continue
        for start, text in python_prose(module):
            for found in in_prose.finditer(text):
                path = named_path(found.group(0).rstrip(".:"), top_level)
                if path and not path_exists(path, (root, module.parent)):
                    number = start + text.count("\n", 0, found.start())
                    missing.append(f"{module.relative_to(root)}:{number}: {path}")
    for doc in markdown_files(root):
        folders = (root, doc.parent)
        lines = without_code_blocks(doc.read_text()).splitlines()
        for number, line in enumerate(lines, 1):
            for span in CODE_SPAN.findall(line):
                path = named_path(span, top_level)
                if migration_exists(span, root) is False or (path and not path_exists(path, folders)):
                    missing.append(f"{doc.relative_to(root)}:{number}: {span}")
            for target in LINK.findall(line):
                target = target.split("#", 1)[0]
                local = target and "://" not in target and not target.startswith("mailto:")
                if local and not (doc.parent / target).exists():
                    missing.append(f"{doc.relative_to(root)}:{number}: ({target})")
    return missing


@functools.cache
def numbered_headings(page: Path) -> set[str]:
    return set(NUMBERED_HEADING.findall(page.read_text())) if page.exists() else set()


def missing_sections(root: Path) -> list[str]:
    """``file:line: page §N`` for each numbered section a reference names that its page does not have."""
    missing = []
    for path in repository_files(root):
        if path.suffix == ".py":
            texts = python_prose(path)
        else:
            texts = [(1, path.read_text())] if path.suffix in {".md", ".txt"} else []
        for start, text in texts:
            for found in SECTION_REFERENCE.finditer(text):
                headings = numbered_headings(root / found[1])
                for first, last in SECTION_NUMBER.findall(found[2]):
                    for number in filter(None, (first, last)):
                        if number not in headings:
                            line = start + text.count("\n", 0, found.start())
                            missing.append(f"{path.relative_to(root)}:{line}: {found[1]} §{number}")
    return missing


@functools.cache
def python_prose(path: Path) -> list[tuple[int, str]]:
    """A Python file's comments and docstrings, each with its first line's number, in line order (read
    once: every check reads them)."""
    source = path.read_text()
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                found.append((node.body[0].lineno, docstring))
    return sorted(found)


def texts_to_check(path: Path) -> Iterator[tuple[int, str, bool]]:
    """(line, text, whether it is prose) of what a file says in words: a Markdown file whole (its
    code spans and blocks not prose), a Python file's comments and docstrings, another text file whole
    (configuration, not prose)."""
    if path.suffix == ".md":
        text = path.read_text()
        prose = CODE_SPAN.sub("", without_code_blocks(text)).splitlines()
        for number, line in enumerate(text.splitlines(), 1):
            yield number, line, False
            if number <= len(prose):
                yield number, prose[number - 1], True
    elif path.suffix == ".py":
        for number, text in python_prose(path):
            yield number, text, True
    elif path.suffix in OTHER_TEXT_FILES or path.name in OTHER_TEXT_NAMES:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            yield number, line, False


def outside_references(text: str, *, prose: bool) -> Iterator[re.Match[str]]:
    yield from MACHINE_PATH.finditer(text)
    if prose:
        yield from SCRATCH_PATH.finditer(text)
    yield from (match for match in RESEARCH.finditer(text) if not text[: match.start()].endswith(SIBLING))


def machine_and_research_references(root: Path) -> list[str]:
    """``file:line: what`` for each machine's path or outside note a doc, docstring or comment names."""
    findings = []
    for path in repository_files(root):
        if path.resolve() == Path(__file__).resolve():
            continue  # this module names them to find them
        for start, text, prose in texts_to_check(path):
            for found in outside_references(text, prose=prose):
                line = start + text.count("\n", 0, found.start())
                findings.append(f"{path.relative_to(root)}:{line}: {found.group(0)}")
    return sorted(set(findings))


# -- the repository ---------------------------------------------------------------------------------


def test_every_path_the_docs_name_exists():
    assert len(markdown_files(ROOT)) >= 10
    assert missing_paths(ROOT) == []


def test_every_section_a_reference_names_exists():
    assert missing_sections(ROOT) == []


def test_no_doc_docstring_or_comment_names_a_machines_path_or_notes_outside_the_repository():
    assert machine_and_research_references(ROOT) == []


# -- the checks themselves ----------------------------------------------------------------------------


def write(root: Path, path: str, text: str = "") -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


def a_repository(root: Path) -> Path:
    write(root, "sessions/runner.py")
    write(root, "kourier/doors/slack.py")
    write(root, "audit/migrations/0004_hash_chain.py")
    write(root, "tests/e2e/helpers.py")
    write(root, "docs/other.md")
    return root


def test_a_doc_that_names_a_missing_file_is_found(tmp_path):
    root = a_repository(tmp_path)
    write(
        root,
        "kourier/limits.py",
        '"""Limits, as the runner (sessions/runner.py) and the captures (tests/a2a/data/kagent_*) have\n'
        'them; summed up in docs/slack-fake.md."""\n\n'
        "LIMIT = 'docs/gone.md'  # code, not a comment; kourier/doors/slack.py, kourier/gone.py.\n",
    )
    write(
        root,
        "docs/guide.md",
        "The runner (`sessions/runner.py`, `sessions/runner.drive`, `kourier/doors/`), its helpers\n"
        "(`tests/e2e/helpers.py:12`) and [another page](other.md#part).\n"
        "Gone: `sessions/gone.py`, `kourier/pages/`, `docs/slack-fake.md`, [a page](gone.md).\n"
        "Migrations `audit.0004_hash_chain`, `audit.0004`, and one that is not: `audit.0003_hash_chain`.\n",
    )

    assert missing_paths(root) == [
        "kourier/limits.py:2: docs/slack-fake.md",
        "kourier/limits.py:4: kourier/gone.py",
        "docs/guide.md:3: sessions/gone.py",
        "docs/guide.md:3: kourier/pages/",
        "docs/guide.md:3: docs/slack-fake.md",
        "docs/guide.md:3: (gone.md)",
        "docs/guide.md:4: audit.0003_hash_chain",
    ]


def test_a_reference_to_a_section_a_page_does_not_have_is_found(tmp_path):
    root = a_repository(tmp_path)
    write(
        root,
        "docs/platform.md",
        "# Slack\n\n## 1. Streams\n\n### 1.2 Chunks\n\n## 2. Status\n\n## 4. Events\n",
    )
    write(
        root,
        "kourier/limits.py",
        '"""Chunks (docs/platform.md §1.2), statuses (docs/platform.md §2, §3) and\n'
        'events (docs/platform.md\n    §4.7)."""\n# docs/platform.md §1-2, not a section: docs/platform.md, "Streams"\n',
    )
    write(root, "docs/guide.md", "As `docs/platform.md` §1.3 and docs/gone.md §1 say.\n")

    assert missing_sections(root) == [
        "docs/guide.md:1: docs/platform.md §1.3",
        "docs/guide.md:1: docs/gone.md §1",
        "kourier/limits.py:1: docs/platform.md §3",
        "kourier/limits.py:2: docs/platform.md §4.7",
    ]


def test_globs_placeholders_commands_and_other_repositories_paths_are_no_paths(tmp_path):
    root = a_repository(tmp_path)
    write(
        root,
        "README.md",
        "`tests/a2a/data/captures_*`, `tests/<app>/test_<module>.py`, `manage.py serve --port 8001`,\n"
        "`git show f255b0a~1:bench/experiments/x.patch`, `bolt-python/docs/english/x.md`, `var/metrics`,\n"
        "`https://example.com/docs/x.md`, `kourier.asgi:application`, `$KOURIER_VAR_DIR/x`\n"
        "```sh\ncat sessions/not-here.py\n```\n",
    )

    assert missing_paths(root) == []


def test_a_machines_path_or_an_outside_note_is_found_in_docs_docstrings_and_comments(tmp_path):
    root = a_repository(tmp_path)
    write(
        root,
        "kourier/limits.py",
        '"""Limits of Slack\n(research/slack.md §3)."""\n'
        "SCRATCH = '/tmp/kourier'  # code, not a comment: where it writes\n"
        "TIMEOUT = 120  # as /home/ada/notes.md says\n"
        "def f():\n    '''Captured in kagent_probe/captures_v010.'''\n",
    )
    write(
        root,
        "docs/guide.md",
        "Read `/work/shared/research/slack.md`, or `../shared/research/slack.md` and `../shared/spec/`.\n"
        "Copy it to /tmp/notes first.\n"
        "Run `celery beat --schedule /tmp/celerybeat-schedule`, see https://example.com/home/x.\n"
        "```sh\nmkdir -p /tmp/kourier-var\n```\n",
    )
    write(
        root, "deploy/beat.yaml", "mountPath: /tmp\nschedule: /tmp/celerybeat-schedule\n# see /Users/ada/x\n"
    )

    assert machine_and_research_references(root) == [
        "deploy/beat.yaml:3: /Users/",
        "docs/guide.md:1: /work/",
        "docs/guide.md:1: research/",
        "docs/guide.md:2: /tmp/",
        "kourier/limits.py:2: research/",
        "kourier/limits.py:4: /home/",
        "kourier/limits.py:6: kagent_probe",
    ]
