"""Artifact and cache archives: which files, and extraction that stays in its folder."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from kiln.runner import artifacts
from kiln.runner.cache import CacheSpec, LocalCache


def tree(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)


def test_paths_name_files_folders_and_globs(tmp_path):
    tree(tmp_path, "a.txt", "dist/x.js", "dist/sub/y.js", "logs/1.log", "logs/deep/2.log", "other.md")
    chosen = artifacts.select(tmp_path, ["a.txt", "dist/", "logs/**/*.log"])
    assert sorted(chosen.files) == ["a.txt", "dist/sub/y.js", "dist/x.js", "logs/1.log", "logs/deep/2.log"]


def test_exclude_drops_matching_files_and_folders(tmp_path):
    tree(tmp_path, "out/keep.txt", "out/drop.tmp", "out/cache/x", "out/sub/drop.tmp")
    chosen = artifacts.select(tmp_path, ["out"], exclude=["out/**/*.tmp", "out/*.tmp", "out/cache"])
    assert chosen.files == ["out/keep.txt"]


def test_patterns_matching_nothing_are_reported(tmp_path):
    chosen = artifacts.select(tmp_path, ["missing/", "*.nothing"])
    assert chosen.files == []
    assert chosen.unmatched == ["missing/", "*.nothing"]


def test_paths_never_leave_the_project_folder(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    tree(tmp_path, "outside.txt")
    assert artifacts.select(project, ["../outside.txt", "../*"]).files == []


def test_untracked_adds_files_git_does_not_track(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    tree(tmp_path, "tracked.txt", "new.txt", ".gitignore")
    (tmp_path / ".gitignore").write_text("ignored.txt\n")
    tree(tmp_path, "ignored.txt")
    subprocess.run(["git", "-C", str(tmp_path), "add", "tracked.txt"], check=True)
    chosen = artifacts.select(tmp_path, [], untracked=True)
    assert sorted(chosen.files) == [".gitignore", "ignored.txt", "new.txt"]


def test_a_zip_round_trips_with_modes_and_links(tmp_path):
    source = tmp_path / "src"
    tree(source, "bin/run.sh", "data/x")
    (source / "bin/run.sh").chmod(0o755)
    (source / "link").symlink_to("data/x")
    archive = tmp_path / "a.zip"
    assert artifacts.write_zip(source, ["bin/run.sh", "data/x", "link"], archive) == 3
    target = tmp_path / "dst"
    artifacts.extract(archive, target)
    assert (target / "bin/run.sh").stat().st_mode & 0o777 == 0o755
    assert (target / "link").is_symlink()
    assert (target / "link").read_text() == "data/x"


@pytest.mark.parametrize("name", ["../escape.txt", "/abs.txt", "a/../../escape.txt"])
def test_extraction_refuses_names_leaving_the_folder(tmp_path, name):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr(name, "x")
    with pytest.raises(artifacts.ArchiveError):
        artifacts.extract(archive, tmp_path / "dst")
    assert not (tmp_path / "escape.txt").exists()


def test_extraction_drops_links_pointing_out(tmp_path):
    archive = tmp_path / "links.zip"
    with zipfile.ZipFile(archive, "w") as out:
        entry = zipfile.ZipInfo("out")
        entry.external_attr = (0o120777) << 16
        out.writestr(entry, "../../etc")
    artifacts.extract(archive, tmp_path / "dst")
    assert not (tmp_path / "dst/out").exists()


def test_extraction_refuses_writing_through_a_link_out(tmp_path):
    target = tmp_path / "dst"
    target.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (target / "linked").symlink_to(tmp_path / "elsewhere")
    archive = tmp_path / "through.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("linked/file", "x")
    with pytest.raises(artifacts.ArchiveError):
        artifacts.extract(archive, target)
    assert not (tmp_path / "elsewhere/file").exists()


def test_a_bad_zip_is_an_archive_error(tmp_path):
    archive = tmp_path / "bad.zip"
    archive.write_bytes(b"not a zip")
    with pytest.raises(artifacts.ArchiveError):
        artifacts.extract(archive, tmp_path / "dst")


def test_gzip_reports_are_concatenated_members(tmp_path):
    import gzip

    tree(tmp_path, "r1.xml", "r2.xml")
    target = tmp_path / "report.gz"
    assert artifacts.write_gzip(tmp_path, ["r1.xml", "r2.xml"], target) == 2
    assert gzip.decompress(target.read_bytes()) == b"r1.xmlr2.xml"


def test_cache_keys_are_file_names_never_paths(tmp_path):
    store = LocalCache(tmp_path / "cache")
    path = store.archive("group/project", "../../etc")
    assert path.is_relative_to(tmp_path / "cache")
    assert len(path.relative_to(tmp_path / "cache").parts) == 3


def test_cache_policy_and_when():
    assert CacheSpec(policy="pull").pulls
    assert not CacheSpec(policy="pull").pushes
    assert CacheSpec(policy="push").pushes
    assert not CacheSpec(policy="push").pulls
    assert CacheSpec().saved_when(True)
    assert not CacheSpec().saved_when(False)
    assert CacheSpec(when="on_failure").saved_when(False)
    assert CacheSpec(when="always").saved_when(False)


def test_a_cache_with_nothing_matching_keeps_the_old_archive(tmp_path):
    store = LocalCache(tmp_path / "cache")
    tree(tmp_path / "p", "vendor/a")
    spec = CacheSpec(key="k", paths=["vendor/"])
    assert store.save("proj", spec, tmp_path / "p") == 1
    assert store.save("proj", spec, tmp_path / "empty") is None
    assert store.archive("proj", "k").is_file()
