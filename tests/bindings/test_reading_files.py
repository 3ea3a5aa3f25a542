"""``spec.chat.files`` read, refused and written back (bindings/manifest/reading_files.py)."""

from __future__ import annotations

import pytest

from bindings import manifest

from .manifests import binding, documents


def read(files) -> manifest.FilesSpec:
    [spec] = manifest.validate(documents(binding(chat={"files": files})), connections=["acme"]).bindings
    return spec.chat.files


def test_files_default_to_images_pdfs_text_and_json_within_ten_and_twenty_megabytes():
    files = read({})
    assert files.types == ("image/*", "application/pdf", "text/*", "application/json")
    assert (files.max_file_bytes, files.max_turn_bytes, files.max_files_out, files.from_urls) == (
        10 * 1024 * 1024,
        20 * 1024 * 1024,
        5,
        (),
    )


def test_a_binding_narrows_the_types_and_sizes_and_names_the_urls_it_fetches():
    files = read(
        {
            "types": ["image/png"],
            "maxFileBytes": 1000,
            "maxTurnBytes": 2000,
            "maxFilesOut": 0,
            "fromUrls": ["https://f.example.com/out/"],
        }
    )
    assert files == manifest.FilesSpec(
        types=("image/png",),
        max_file_bytes=1000,
        max_turn_bytes=2000,
        max_files_out=0,
        from_urls=("https://f.example.com/out/",),
    )


def test_a_binding_that_leaves_files_as_they_are_exports_no_files_section():
    [spec] = manifest.validate(documents(binding()), connections=["acme"]).bindings
    assert "files" not in manifest.binding_manifest(spec)["spec"]["chat"]


@pytest.mark.parametrize(
    ("files", "error"),
    [
        ({"types": "image/png"}, "spec.chat.files.types: must be a list of at most 50 media types"),
        ({"types": ["png"]}, "spec.chat.files.types: must name media types such as image/png or text/*"),
        (
            {"maxFileBytes": 0},
            "spec.chat.files.maxFileBytes: must be a whole number from 1 to 104857600 (got 0)",
        ),
        ({"maxTurnBytes": "20MB"}, "spec.chat.files.maxTurnBytes: must be a whole number"),
        ({"maxFilesOut": 21}, "spec.chat.files.maxFilesOut: must be a whole number from 0 to 20"),
        ({"fromUrls": ["files.example.com"]}, "spec.chat.files.fromUrls: must be URL prefixes"),
        ({"maxBytes": 5}, "spec.chat.files.maxBytes"),
    ],
)
def test_files_past_their_limits_are_refused(files, error):
    validation = manifest.validate(documents(binding(chat={"files": files})), connections=["acme"])
    [problem] = validation.errors
    assert error in str(problem)
