"""Hostile pushes: objects an attacker makes with git itself (`git hash-object --literally`,
`git mktree`, `git commit-tree`, `git fast-import`, commits written by hand) and pushes with
`git push` over smart HTTP. Each is refused with git's own fsck message or kiln's (its rules
for ref names and paths, kiln.git.names), and leaves nothing behind: the branch unmoved, none
of its objects in the repository, no quarantine left over.

`git push` talks to the test's own app through a relay on a local socket, so the push takes
kiln's whole receive-pack path (routes, checks, git receive-pack, the pre-receive hook) with
the tests' factories and database."""

from __future__ import annotations

import base64
import http.server
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from kiln.git.names import MAX_PATH_BYTES, MAX_PATH_DEPTH
from kiln.models import Event
from kiln.services.repositories import store
from tests.repositories import clone, new_project

ZERO = "0" * 40
# Headers of one hop only: the relay's own connection sets them.
_HOP = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "expect",
        "accept-encoding",
        "content-encoding",
    }
)


# ---------------------------------------------------------------------------- the relay


class _Relay(http.server.BaseHTTPRequestHandler):
    """Each request git makes, passed to the test client as it came; its answer written back."""

    protocol_version = "HTTP/1.1"
    client: Any

    def do_GET(self) -> None:
        self._relay()

    def do_POST(self) -> None:
        self._relay()

    def _relay(self) -> None:
        body = self._body()
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        answer = self.client.request(
            self.command, self.path, headers=headers, content=body, follow_redirects=False
        )
        self.send_response(answer.status_code)
        for key, value in answer.headers.multi_items():
            if key.lower() not in _HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(answer.content)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(answer.content)
        self.close_connection = True

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0], 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        self.rfile.readline()
        return b"".join(chunks)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def kiln_url(client: Any) -> Iterator[str]:
    """The app at a real `http://127.0.0.1:<port>`, one request at a time."""
    handler = type("Relay", (_Relay,), {"client": client})
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    # A short poll: shutdown() waits for the loop to look (half a second by default, per test).
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


# ---------------------------------------------------------------------------- making objects


@dataclass
class Scratch:
    """A clone of the project's repository where the attacker makes objects with git."""

    path: Path
    env: dict[str, str]

    def git(self, *args: str, stdin: bytes | None = None) -> str:
        result = subprocess.run(
            ["git", *args], cwd=self.path, env=self.env, input=stdin, capture_output=True, check=False
        )
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        return result.stdout.decode(errors="replace").strip()

    def blob(self, data: bytes) -> str:
        return self.git("hash-object", "-w", "--stdin", stdin=data)

    def tree(self, *entries: tuple[str, bytes, str]) -> str:
        """A tree of exactly these entries (mode, raw name, id), in this order, unchecked."""
        data = b"".join(
            f"{mode} ".encode() + name + b"\0" + bytes.fromhex(oid) for mode, name, oid in entries
        )
        return self.git("hash-object", "-t", "tree", "--literally", "-w", "--stdin", stdin=data)

    def commit(self, tree: str, parent: str | None) -> str:
        return self.git("commit-tree", tree, *(["-p", parent] if parent else []), "-m", "hostile")

    def written(self, kind: str, text: bytes) -> str:
        """An object written by hand, exactly as given."""
        return self.git("hash-object", "-t", kind, "--literally", "-w", "--stdin", stdin=text)

    def imported(self, *files: str, parent: str | None = None) -> str:
        """A commit of these paths (each a one-line file) made by `git fast-import`, which
        builds whatever trees the paths need, however deep."""
        commands = [
            "commit refs/kiln-scratch/import",
            "committer Mallory <mallory@example.com> 1700000000 +0000",
            "data 8",
            "imported",
        ]
        if parent:
            commands.append(f"from {parent}")
        for path in files:
            commands += [f"M 100644 inline {path}", "data 2", "x"]
        self.git("fast-import", "--quiet", stdin="\n".join([*commands, ""]).encode())
        return self.git("rev-parse", "refs/kiln-scratch/import")

    def objects(self, *tips: str, since: str | None = None) -> list[str]:
        """Every object these reach that `since` doesn't: what a push of them sends."""
        args = ["rev-list", "--objects", *tips, *([f"^{since}"] if since else [])]
        return [line.split(" ", 1)[0] for line in self.git(*args).splitlines()]


@dataclass
class Target:
    """A project with a README on `main`, its bare repository, and a scratch clone of it."""

    project: dict[str, Any]
    token: str
    bare: Path
    work: Scratch
    url: str
    main: str

    def refs(self) -> str:
        return self.work.git(f"--git-dir={self.bare}", "for-each-ref", "--format=%(objectname) %(refname)")

    def push(self, *refspecs: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "push", "--porcelain", self.url, *refspecs],
            cwd=self.work.path,
            env=self.work.env,
            capture_output=True,
            text=True,
            check=False,
        )

    def held(self, oid: str) -> bool:
        result = subprocess.run(
            ["git", f"--git-dir={self.bare}", "cat-file", "-e", oid], capture_output=True, check=False
        )
        return result.returncode == 0

    def assert_refused(self, refs: str, pushed: subprocess.CompletedProcess[str], objects: list[str]) -> None:
        """Nothing of a refused push remains: refs as they were, none of its objects."""
        assert pushed.returncode != 0, pushed.stdout + pushed.stderr
        assert self.refs() == refs
        assert [oid for oid in objects if self.held(oid)] == []
        assert list((self.bare / "objects").glob("tmp_objdir-*")) == []


@pytest.fixture
def target(api: Any, make: Any, settings: Any, kiln_url: str, tmp_path: Path) -> Target:
    owner = make.user()
    project = new_project(api, make, owner)
    work = clone(settings, project, tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "Mallory",
        "GIT_AUTHOR_EMAIL": "mallory@example.com",
        "GIT_COMMITTER_NAME": "Mallory",
        "GIT_COMMITTER_EMAIL": "mallory@example.com",
        "LC_ALL": "C",
    }
    host = kiln_url.removeprefix("http://")
    url = f"http://mallory:{owner.token}@{host}/{project['path_with_namespace']}.git"
    scratch = Scratch(work, env)
    bare = store(settings).path(project["id"])
    return Target(project, owner.token, bare, scratch, url, scratch.git("rev-parse", "HEAD"))


def _planted(target: Target, name: bytes, mode: str = "40000") -> tuple[str, list[str]]:
    """A commit on top of main whose root holds `name`: a directory with a `config` file in
    it (a blob with mode 100644 when `mode` says so); its id and every object it brings."""
    config = target.work.blob(f"[core]\n\thooksPath = /tmp/{os.urandom(8).hex()}\n".encode())
    entry = target.work.tree(("100644", b"config", config)) if mode == "40000" else config
    commit = target.work.commit(target.work.tree((mode, name, entry)), target.main)
    return commit, target.work.objects(commit, since=target.main)


# ---------------------------------------------------------------------------- a sound push


def test_a_sound_push_goes_through(api, target):
    commit = target.work.imported("src/app/main.py", "docs/index.md", "README.md", parent=target.main)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert pushed.returncode == 0, pushed.stderr
    assert target.refs().splitlines()[0] == f"{commit} refs/heads/main"
    r = api(target.token).get(
        f"/projects/{target.project['id']}/repository/files/src%2Fapp%2Fmain.py?ref=main"
    )
    assert (r.status_code, base64.b64decode(r.json()["content"])) == (200, b"x\n")


# ---------------------------------------------------------------------------- git's fsck


DOTGIT = "hasDotgit: contains '.git'"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (b".git", DOTGIT),
        (b".GIT", DOTGIT),
        (b".Git", DOTGIT),
        (b"git~1", DOTGIT),
        (b".git.", DOTGIT),
        (b".git ", DOTGIT),
        (".g\u200cit".encode(), DOTGIT),
        (b"..", "hasDotdot: contains '..'"),
        (b".", "hasDot: contains '.'"),
        (b"hooks/pre-receive", "fullPathname: contains full pathnames"),
    ],
    ids=[".git", ".GIT", ".Git", "git~1", ".git.", ".git-space", ".g-zwnj-it", "dotdot", "dot", "slash"],
)
def test_a_name_git_refuses_in_a_tree_is_refused_with_gits_message(target, name, message):
    refs = target.refs()
    commit, objects = _planted(target, name)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert message in pushed.stderr
    assert "remote rejected" in pushed.stdout + pushed.stderr
    target.assert_refused(refs, pushed, objects)


def test_a_tree_with_an_empty_name_is_refused(client, target):
    """git itself won't send such a tree (`git push` dies walking it), so the request is
    written by hand around a pack git makes of exactly these objects."""
    refs = target.refs()
    config = target.work.blob(os.urandom(16))
    inner = target.work.tree(("100644", b"config", config))
    root = target.work.tree(("40000", b"", inner))
    commit = target.work.commit(root, target.main)
    objects = [commit, root, inner, config]
    pack = subprocess.run(
        ["git", "pack-objects", "--stdout"],
        cwd=target.work.path,
        input="\n".join(objects).encode(),
        capture_output=True,
        check=True,
    ).stdout
    command = f"{target.main} {commit} refs/heads/main\0report-status side-band-64k\n".encode()
    body = f"{len(command) + 4:04x}".encode() + command + b"0000" + pack
    r = client.post(
        f"/{target.project['path_with_namespace']}.git/git-receive-pack",
        content=body,
        headers={
            "Content-Type": "application/x-git-receive-pack-request",
            "Authorization": "Basic " + base64.b64encode(f"mallory:{target.token}".encode()).decode(),
        },
    )
    assert r.status_code == 200
    assert b"empty filename in tree entry" in r.content
    assert b"ng refs/heads/main" in r.content
    assert target.refs() == refs
    assert [oid for oid in objects if target.held(oid)] == []


def test_duplicate_entries_are_refused(target):
    refs = target.refs()
    blob = target.work.blob(os.urandom(16))
    commit = target.work.commit(target.work.tree(("100644", b"a", blob), ("100644", b"a", blob)), target.main)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert "duplicateEntries: contains duplicate file entries" in pushed.stderr
    target.assert_refused(refs, pushed, target.work.objects(commit, since=target.main))


def test_unsorted_entries_are_refused(target):
    refs = target.refs()
    blob = target.work.blob(os.urandom(16))
    commit = target.work.commit(target.work.tree(("100644", b"b", blob), ("100644", b"a", blob)), target.main)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert "treeNotSorted: not properly sorted" in pushed.stderr
    target.assert_refused(refs, pushed, target.work.objects(commit, since=target.main))


def test_a_gitmodules_url_that_reads_as_an_option_is_refused(target):
    refs = target.refs()
    modules = target.work.blob(b'[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch /tmp/pwned\n')
    commit = target.work.commit(target.work.tree(("100644", b".gitmodules", modules)), target.main)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert "gitmodulesUrl: disallowed submodule url: --upload-pack=touch /tmp/pwned" in pushed.stderr
    target.assert_refused(refs, pushed, target.work.objects(commit, since=target.main))


def test_a_gitmodules_symlink_is_refused(target):
    refs = target.refs()
    link = target.work.blob(f"../../{os.urandom(4).hex()}/config".encode())
    commit = target.work.commit(target.work.tree(("120000", b".gitmodules", link)), target.main)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert "gitmodulesSymlink: .gitmodules is a symbolic link" in pushed.stderr
    target.assert_refused(refs, pushed, target.work.objects(commit, since=target.main))


def test_what_git_fsck_strict_only_warns_about_is_refused_too(target):
    """A file mode git never writes (100664): receive-pack on its own lets it in with a
    warning, and every later `git fsck --strict` would warn again."""
    refs = target.refs()
    commit, objects = _planted(target, b"config", mode="100664")
    pushed = target.push(f"{commit}:refs/heads/main")
    assert "badFilemode: contains bad file modes" in pushed.stderr
    target.assert_refused(refs, pushed, objects)


def _commit_by(target: Target, author: str) -> str:
    tree = target.work.git("rev-parse", f"{target.main}^{{tree}}")
    text = (
        f"tree {tree}\nparent {target.main}\nauthor {author}\n"
        f"committer Mallory <mallory@example.com> 1700000000 +0000\n\n{os.urandom(8).hex()}\n"
    )
    return target.work.written("commit", text.encode())


def test_a_malformed_author_line_is_refused(target):
    refs = target.refs()
    commit = _commit_by(target, "Mallory <mallory@example.com 1700000000 +0000")
    pushed = target.push(f"{commit}:refs/heads/main")
    assert "badEmail: invalid author/committer line - bad email" in pushed.stderr
    target.assert_refused(refs, pushed, [commit])


def test_an_overflowing_date_is_refused(target):
    refs = target.refs()
    commit = _commit_by(target, "Mallory <mallory@example.com> 99999999999999999999 +0000")
    pushed = target.push(f"{commit}:refs/heads/main")
    assert "badDateOverflow: invalid author/committer line - date causes integer overflow" in pushed.stderr
    target.assert_refused(refs, pushed, [commit])


# ---------------------------------------------------------------------------- kiln's ref names


def _new_commit(target: Target) -> str:
    return target.work.imported(f"{os.urandom(4).hex()}.txt", parent=target.main)


@pytest.mark.parametrize("name", ["a" * 40, "0123456789ABCDEF0123456789abcdef01234567", "b" * 64])
def test_a_branch_named_like_an_object_id_is_refused(target, name):
    refs = target.refs()
    commit = _new_commit(target)
    pushed = target.push(f"{commit}:refs/heads/{name}")
    assert "GitLab: You cannot create a branch with a SHA-1 or SHA-256 branch name." in pushed.stderr
    target.assert_refused(refs, pushed, [commit])


@pytest.mark.parametrize("name", ["-x", "--upload-pack=x", "HEAD", "refs/heads/x"])
def test_a_branch_name_the_branches_api_refuses_is_refused(target, name):
    refs = target.refs()
    commit = _new_commit(target)
    pushed = target.push(f"{commit}:refs/heads/{name}")
    assert "GitLab: You cannot create a branch with an invalid name." in pushed.stderr
    target.assert_refused(refs, pushed, [commit])


@pytest.mark.parametrize("name", ["-x", "HEAD", "refs/heads/x", "refs/tags/x"])
def test_a_tag_name_the_tags_api_refuses_is_refused(target, name):
    refs = target.refs()
    commit = _new_commit(target)
    pushed = target.push(f"{commit}:refs/tags/{name}")
    assert "GitLab: You cannot create a tag with a prohibited pattern." in pushed.stderr
    target.assert_refused(refs, pushed, [commit])


def test_a_branch_pointing_at_anything_but_a_commit_is_refused(target):
    refs = target.refs()
    tree = target.work.tree(("100644", b"f", target.work.blob(os.urandom(16))))
    pushed = target.push(f"{tree}:refs/heads/a-tree")
    assert "GitLab: You can only push commits to a branch." in pushed.stderr
    target.assert_refused(refs, pushed, target.work.objects(tree))


def test_a_tag_naming_a_tree_is_accepted_and_its_push_recorded(target, db):
    """git lets a tag name any object; the push is recorded with no commits."""
    tree = target.work.tree(("100644", b"f", target.work.blob(os.urandom(16))))
    pushed = target.push(f"{tree}:refs/tags/a-tree")
    assert pushed.returncode == 0, pushed.stderr
    assert "failed" not in pushed.stderr
    event = db.scalars(
        select(Event).where(Event.project_id == target.project["id"]).order_by(Event.id.desc())
    ).first()
    assert event is not None
    assert (event.data["ref"], event.data["after"], event.data["commits"]) == ("refs/tags/a-tree", tree, [])


# ---------------------------------------------------------------------------- kiln's path rule


def test_a_name_with_a_control_character_is_refused_naming_the_path(target):
    """git's fsck lets a tab in a name through; kiln's rule for paths doesn't."""
    refs = target.refs()
    commit = target.work.imported("docs/tab\tname", parent=target.main)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert 'GitLab: You cannot push "docs/tab\\tname": invalid path.' in pushed.stderr
    target.assert_refused(refs, pushed, target.work.objects(commit, since=target.main))


def test_a_path_deeper_than_the_rule_allows_is_refused(target):
    refs = target.refs()
    deep = "/".join(["d"] * MAX_PATH_DEPTH + ["f"])
    commit = target.work.imported(deep, parent=target.main)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert 'GitLab: You cannot push "d/d/d/d/' in pushed.stderr
    assert f'…": more than {MAX_PATH_DEPTH} levels deep.' in pushed.stderr
    target.assert_refused(refs, pushed, target.work.objects(commit, since=target.main))


def test_a_path_as_deep_as_the_rule_allows_goes_through(target):
    deepest = "/".join(["d"] * (MAX_PATH_DEPTH - 1) + ["f"])
    commit = target.work.imported(deepest, parent=target.main)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert pushed.returncode == 0, pushed.stderr


def test_a_path_longer_than_the_rule_allows_is_refused(target):
    refs = target.refs()
    part = "n" * 255
    long = "/".join([part] * (MAX_PATH_BYTES // 256 + 1))
    commit = target.work.imported(long, parent=target.main)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert f"longer than {MAX_PATH_BYTES} bytes." in pushed.stderr
    target.assert_refused(refs, pushed, target.work.objects(commit, since=target.main))


def test_a_directory_already_held_moved_too_deep_is_refused(target):
    """The moved directory is no object of the push: only its new place makes it too deep."""
    held = target.work.imported("/".join(["a"] * 200 + ["f"]), parent=target.main)
    assert target.push(f"{held}:refs/heads/main").returncode == 0
    refs = target.refs()
    subtree = target.work.git("rev-parse", f"{held}:a")
    moved = target.work.written(
        "commit",
        (
            f"tree {_nest(target, subtree, 60)}\nparent {held}\n"
            "author Mallory <mallory@example.com> 1700000000 +0000\n"
            "committer Mallory <mallory@example.com> 1700000000 +0000\n\nmove\n"
        ).encode(),
    )
    pushed = target.push(f"{moved}:refs/heads/main")
    assert f"more than {MAX_PATH_DEPTH} levels deep." in pushed.stderr
    target.assert_refused(refs, pushed, target.work.objects(moved, since=held))


def _nest(target: Target, tree: str, levels: int) -> str:
    """`tree` as `a` at the bottom of `levels` directories named `b`."""
    inner = target.work.tree(("40000", b"a", tree))
    for _ in range(levels):
        inner = target.work.tree(("40000", b"b", inner))
    return inner


def test_a_tree_shared_at_many_paths_is_checked_once_per_place(target):
    """Forty levels of two entries naming the same tree: 2^40 paths, forty-odd trees. The
    check reads each tree once at each depth it sits at, never once per path."""
    inner = target.work.tree(("100644", b"x\tbad", target.work.blob(os.urandom(16))))
    for _ in range(40):
        inner = target.work.tree(("40000", b"l", inner), ("40000", b"r", inner))
    commit = target.work.commit(inner, target.main)
    refs = target.refs()
    pushed = target.push(f"{commit}:refs/heads/main")
    assert f'GitLab: You cannot push "{"r/" * 40}x\\tbad": invalid path.' in pushed.stderr
    target.assert_refused(refs, pushed, target.work.objects(commit, since=target.main))


# ---------------------------------------------------------------------------- tree bombs


def test_a_tree_bomb_is_refused_naming_its_commit(target):
    """41 trees, each holding the one below as `a` and `b`, over a single file: 2^40 paths
    that git's fsck and the path rule let through."""
    refs = target.refs()
    inner = target.work.git("mktree", stdin=f"100644 blob {target.work.blob(os.urandom(16))}\tf\n".encode())
    for _ in range(40):
        inner = target.work.git("mktree", stdin=f"040000 tree {inner}\ta\n040000 tree {inner}\tb\n".encode())
    commit = target.work.commit(inner, target.main)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert (
        f"GitLab: You cannot push commit {commit[:8]}: its tree holds more than 5000000 files."
        in pushed.stderr
    )
    target.assert_refused(refs, pushed, target.work.objects(commit, since=target.main))


def test_a_tree_holding_exactly_max_tree_entries_paths_goes_through(target, configure):
    """A file, a symlink and a submodule are a path each wherever they sit; a directory is none."""
    blob = target.work.blob(os.urandom(16))
    link = target.work.blob(b"f")
    inner = target.work.tree(("100644", b"f", blob))
    root = target.work.tree(
        ("40000", b"d", inner), ("100644", b"f", blob), ("120000", b"l", link), ("160000", b"m", target.main)
    )
    commit = target.work.commit(root, target.main)
    refs = target.refs()
    configure(max_tree_entries=3)
    refused = target.push(f"{commit}:refs/heads/main")
    assert f"GitLab: You cannot push commit {commit[:8]}: its tree holds more than 3 files." in refused.stderr
    target.assert_refused(refs, refused, target.work.objects(commit, since=target.main))
    configure(max_tree_entries=4)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert pushed.returncode == 0, pushed.stderr
    assert target.refs().splitlines()[0] == f"{commit} refs/heads/main"


def test_a_subtree_already_held_counts_at_every_place_a_push_puts_it(target, configure):
    """Only the new root tree is sent; the directory it names ten times was pushed before."""
    held = target.work.imported("lib/a.py", "lib/b.py", "lib/c/d.py", parent=target.main)
    assert target.push(f"{held}:refs/heads/main").returncode == 0
    lib = target.work.git("rev-parse", f"{held}:lib")
    readme = target.work.git("rev-parse", f"{held}:README.md")
    copies = [("40000", f"lib{n}".encode(), lib) for n in range(10)]
    commit = target.work.commit(target.work.tree(("100644", b"README.md", readme), *copies), held)
    assert target.work.objects(commit, since=held) == [
        commit,
        target.work.git("rev-parse", f"{commit}^{{tree}}"),
    ]
    refs = target.refs()
    configure(max_tree_entries=30)
    refused = target.push(f"{commit}:refs/heads/main")
    assert (
        f"GitLab: You cannot push commit {commit[:8]}: its tree holds more than 30 files." in refused.stderr
    )
    target.assert_refused(refs, refused, target.work.objects(commit, since=held))
    configure(max_tree_entries=31)
    pushed = target.push(f"{commit}:refs/heads/main")
    assert pushed.returncode == 0, pushed.stderr
