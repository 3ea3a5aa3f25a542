"""The admin's fields for ``spec.chat.files`` (issue 30: sessions/file_rules.py), kept beside the
Binding form (bindings/forms.py) so that it stays one readable module."""

from __future__ import annotations

from typing import Any

from django import forms

from bindings import manifest

FILES_FIELD_PATHS = {
    "spec.chat.files.types": "files_types",
    "spec.chat.files.maxFileBytes": "files_max_file_bytes",
    "spec.chat.files.maxTurnBytes": "files_max_turn_bytes",
    "spec.chat.files.maxFilesOut": "files_max_out",
    "spec.chat.files.fromUrls": "files_from_urls",
    "spec.chat.files": "files_types",
}
FILES_FIELDS = list(dict.fromkeys(FILES_FIELD_PATHS.values()))


def _words(text: str) -> list[str]:
    return [word for word in text.replace(",", " ").split() if word]


class FilesFields(forms.Form):
    """Mixed into the Binding form: the fields, declared once."""

    files_types = forms.CharField(
        label="Files: media types",
        required=False,
        initial=", ".join(manifest.DEFAULT_FILE_TYPES),
        help_text="spec.chat.files.types: the media types of the files people share that go to the agent "
        "(image/png, or image/* for a family), when the agent's card takes them too.",
    )
    files_max_file_bytes = forms.IntegerField(
        label="Files: most bytes a file",
        required=False,
        initial=manifest.DEFAULT_MAX_FILE_BYTES,
        help_text="spec.chat.files.maxFileBytes: for a file shared and a file the agent returns.",
    )
    files_max_turn_bytes = forms.IntegerField(
        label="Files: most bytes a turn",
        required=False,
        initial=manifest.DEFAULT_MAX_TURN_FILE_BYTES,
        help_text="spec.chat.files.maxTurnBytes",
    )
    files_max_out = forms.IntegerField(
        label="Files: most files an answer uploads",
        required=False,
        initial=manifest.DEFAULT_MAX_FILES_OUT,
        help_text="spec.chat.files.maxFilesOut",
    )
    files_from_urls = forms.CharField(
        label="Files: agent URLs fetched",
        required=False,
        help_text="spec.chat.files.fromUrls: URL prefixes under which a file the agent names by URL is "
        "fetched and uploaded (none: only files the agent sends whole).",
    )


def files_section(cleaned_data: dict[str, Any]) -> dict[str, Any]:
    """The manifest's ``files`` as the form gives it (an empty field: the default)."""
    types = _words(cleaned_data.get("files_types") or "")
    return {
        "types": types or None,
        "maxFileBytes": cleaned_data.get("files_max_file_bytes"),
        "maxTurnBytes": cleaned_data.get("files_max_turn_bytes"),
        "maxFilesOut": cleaned_data.get("files_max_out"),
        "fromUrls": _words(cleaned_data.get("files_from_urls") or ""),
    }


def files_values(spec: manifest.BindingSpec) -> dict[str, Any]:
    files = spec.chat.files
    return {
        "files_types": ", ".join(files.types),
        "files_max_file_bytes": files.max_file_bytes,
        "files_max_turn_bytes": files.max_turn_bytes,
        "files_max_out": files.max_files_out,
        "files_from_urls": " ".join(files.from_urls),
    }
