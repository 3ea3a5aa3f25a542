"""The Dockerfile, read as Docker would (no daemon here): a slim Python 3.11, the runtime from the lock
and nothing more, static files collected at build, and a user that is not root."""

import re
from pathlib import Path

import pytest

from tests.support.kustomize import KUBERNETES, listed_files, objects_of, pod_spec

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCK = "requirements.lock"


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined and comments left out."""
    text = re.sub(r"\\\n", " ", path.read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (words[0].upper(), words[1].strip() if len(words) > 1 else "")
        for line in lines
        if line and not line.startswith("#")
        for words in [line.split(maxsplit=1)]
    ]


DOCKERFILE = instructions(REPO_ROOT / "Dockerfile")


def stages() -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for instruction in DOCKERFILE:
        if instruction[0] == "FROM":
            found.append([])
        if found:
            found[-1].append(instruction)
    return found


def arguments(stage: list[tuple[str, str]], instruction: str) -> list[str]:
    return [args for name, args in stage if name == instruction]


def test_every_stage_is_built_on_slim_python_3_11():
    [image] = [
        args.split("=", 1)[1] for args in arguments(DOCKERFILE, "ARG") if args.startswith("PYTHON_IMAGE=")
    ]
    bases = [arguments(stage, "FROM")[0].split()[0] for stage in stages()]

    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", image)
    assert bases == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]


def test_the_runtime_is_installed_from_the_lock_with_every_hash_checked():
    [pip_install] = [args for name, args in DOCKERFILE if name == "RUN" and "pip install" in args]

    assert f"COPY {LOCK}" in " ".join(f"{name} {args}" for name, args in DOCKERFILE)
    assert "--require-hashes" in pip_install.split()
    assert pip_install.split()[-2:] == ["-r", f"/tmp/{LOCK}"]


def test_make_installs_the_same_lock():
    makefile = (REPO_ROOT / "Makefile").read_text()

    assert f"pip install --quiet --require-hashes -r {LOCK}" in makefile


def test_nothing_of_the_dev_extras_reaches_the_image():
    run = " ".join(args for name, args in DOCKERFILE if name == "RUN")

    assert "[dev]" not in run
    assert "pip install" not in " ".join(arguments(stages()[-1], "RUN"))


def test_static_files_are_collected_when_the_image_is_built():
    final = stages()[-1]
    environment = " ".join(arguments(final, "ENV"))

    assert "STATIC_ROOT=/app/static" in environment
    assert any("manage.py collectstatic --noinput" in args for args in arguments(final, "RUN"))


def test_the_image_runs_as_the_unprivileged_user_the_pods_ask_for():
    [user] = arguments(stages()[-1], "USER")
    uid = user.split(":")[0]
    pods = [
        pod_spec(o)
        for o in objects_of(listed_files(KUBERNETES / "base"))
        if o["kind"] in ("Deployment", "Job")
    ]

    assert uid.isdigit()  # a number, so that Kubernetes can check runAsNonRoot
    assert int(uid) != 0
    assert {pod["securityContext"]["runAsUser"] for pod in pods} == {int(uid)}
    # The user is made in the stage that runs it.
    assert any(f"--uid {uid}" in args for args in arguments(stages()[-1], "RUN"))


def test_the_default_command_is_the_web_process():
    [command] = arguments(stages()[-1], "CMD")

    assert command.startswith('["python", "-m", "daphne"')
    assert command.endswith('"kourier.asgi:application"]')


@pytest.mark.parametrize("kept_out", [".env", ".git", ".venv", "var", "tests", "bench"])
def test_secrets_state_and_tooling_stay_out_of_the_build_context(kept_out):
    ignored = (REPO_ROOT / ".dockerignore").read_text().splitlines()

    assert kept_out in ignored
