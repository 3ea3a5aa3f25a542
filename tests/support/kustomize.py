"""Reads deploy/kubernetes/ the way kustomize does before it patches: each kustomization's resources
and components, followed into the folders they name."""

from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = REPO_ROOT / "deploy" / "kubernetes"
KUSTOMIZATION = "kustomization.yaml"

KubernetesObject = dict[str, Any]


def listed_files(directory: Path) -> list[Path]:
    """Every object file a kustomization lists, its bases' and components' included."""
    kustomization = yaml.safe_load((directory / KUSTOMIZATION).read_text())
    files: list[Path] = []
    for entry in kustomization.get("resources", []) + kustomization.get("components", []):
        path = (directory / entry).resolve()
        files += listed_files(path) if path.is_dir() else [path]
    return files


def objects_of(files: list[Path]) -> list[KubernetesObject]:
    return [document for path in files for document in yaml.safe_load_all(path.read_text()) if document]


def one(objects: list[KubernetesObject], kind: str, name: str) -> KubernetesObject:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def pod_spec(workload: KubernetesObject) -> dict[str, Any]:
    return workload["spec"]["template"]["spec"]


def container(workload: KubernetesObject) -> dict[str, Any]:
    [only] = pod_spec(workload)["containers"]
    return only
