"""kiln's pre-receive hook: `git receive-pack` runs it (`python -m kiln.git.pre_receive`)
once the pack has arrived and passed git's own object checks, inside receive-pack's
quarantine, before any ref moves. Whatever it refuses leaves nothing behind.

It refuses non-fast-forward updates of the refs the caller may not force, a branch that
would point at anything but a commit, any path that kiln's one rule for paths
(kiln.git.names) refuses in a tree the push brings in: a bad name anywhere, or a path too
deep or too long, and a new commit whose tree holds more paths than kiln walks at most (a
"tree bomb": a subtree twice at each of 40 levels is 2^40 paths in 41 trees, which every
diff, archive or checkout of it would try to visit). git's fsck sees each object alone, so
depth, length and size are this hook's.

Only what the push changes is read. The trees of each new commit are compared with its first
parent's, path by path: an entry the parent had at the same path with the same object was
accepted there and is not walked again; an older directory put somewhere new is. A tree seen
again no deeper and no longer than before is not walked again, so shared subtrees cost once
per depth at most, never once per path.

A commit's size can't be judged by what changed: an old subtree may be put anywhere any number
of times. Every tree a new commit reaches is counted, old or new, but each distinct tree once
per push (its count remembered by id), and the count stops once past the bound: a tree bomb
is refused after reading its 41 trees."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import pygit2

from kiln.git.names import INVALID_PATH, MAX_PATH_BYTES, MAX_PATH_DEPTH, path_problem

# The environment variable that carries a push's Rules to the hook.
RULES_VARIABLE = "KILN_PUSH_RULES"
TREE_MODE = 0o040000
# A tree entry's mode as written: git's, and the zero-padded one old tools wrote.
_TREE_MODES = frozenset({b"40000", b"040000"})
ZERO = "0" * 40
TOO_DEEP = f"more than {MAX_PATH_DEPTH} levels deep"
TOO_LONG = f"longer than {MAX_PATH_BYTES} bytes"
# A path shown in a message is cut here: a refused path can be 4 KiB and 256 levels long.
SHOWN_CHARS = 300

_COMMIT = pygit2.enums.ObjectType.COMMIT
_TREE = pygit2.enums.ObjectType.TREE
_TAG = pygit2.enums.ObjectType.TAG

Entry = tuple[bytes, int, pygit2.Oid]


@dataclass(slots=True, frozen=True)
class Rules:
    """What the hook refuses beyond git's own checks, and the message git shows for each;
    `path_refused` names the path as `{path}` and why as `{reason}`."""

    no_force: tuple[str, ...]
    force_refused: str
    not_a_commit: str
    path_refused: str
    check_failed: str
    # Paths (files, symlinks, submodules) a new commit's tree may hold, and the message
    # refusing one past it, naming the commit as `{commit}` and the bound as `{limit}`.
    max_tree_entries: int
    tree_refused: str

    def environment(self) -> dict[str, str]:
        return {RULES_VARIABLE: json.dumps(asdict(self))}

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Rules:
        fields = json.loads(environ[RULES_VARIABLE])
        return cls(**{**fields, "no_force": tuple(fields["no_force"])})


@dataclass(slots=True, frozen=True)
class PathProblem:
    """A path of a pushed tree, as the raw bytes of its names, and why it is refused."""

    path: bytes
    reason: str

    def shown(self) -> str:
        """The path as a message shows it: quoted, escapes for what isn't printable, cut short."""
        text = self.path.decode("utf-8", "backslashreplace")
        text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)
        if len(text) > SHOWN_CHARS:
            text = text[:SHOWN_CHARS] + "…"
        return f'"{text}"'


@dataclass(slots=True)
class _Node:
    """Where a tree sits: its name and the node of the tree holding it (None: a root)."""

    name: bytes
    up: _Node | None

    def path(self, name: bytes) -> bytes:
        parts = [name]
        node: _Node | None = self
        while node is not None:
            parts.append(node.name)
            node = node.up
        return b"/".join(reversed(parts))


@dataclass
class TreeWalk:
    """The trees a push brings in, walked from their roots with each path's depth and length.
    It remembers where each tree was walked (a few numbers per tree) and each distinct name's
    verdict, never a tree's entries: memory grows with the trees walked, not with their sizes."""

    odb: pygit2.Odb
    _reached: dict[pygit2.Oid, list[tuple[int, int]]] = field(default_factory=dict)
    _names: dict[bytes, str | None] = field(default_factory=dict)

    def entries(self, oid: pygit2.Oid) -> list[Entry]:
        """A tree's entries from its raw form (names as bytes, whatever their encoding)."""
        return _parse_tree(self.odb.read(oid)[1])

    def reached(self, oid: pygit2.Oid) -> bool:
        return oid in self._reached

    def check(self, root: pygit2.Oid, before: pygit2.Oid | None) -> PathProblem | None:
        """The first refused path under `root`, compared with `before` (the same place in
        the parent commit) where there is one."""
        stack: list[tuple[pygit2.Oid, pygit2.Oid | None, int, int, _Node | None]] = [
            (root, before, 0, 0, None)
        ]
        while stack:
            oid, was, depth, length, node = stack.pop()
            if self._seen_as_deep(oid, depth, length):
                continue
            previous = self._by_name(was)
            for name, mode, child in self.entries(oid):
                if previous.get(name) == (mode, child):
                    continue
                size = length + len(name) + (1 if depth else 0)
                reason = self._name_problem(name)
                if reason is None and depth + 1 > MAX_PATH_DEPTH:
                    reason = TOO_DEEP
                if reason is None and size > MAX_PATH_BYTES:
                    reason = TOO_LONG
                if reason is not None:
                    path = name if node is None else node.path(name)
                    return PathProblem(path, reason)
                if mode == TREE_MODE:
                    older = previous.get(name)
                    under = older[1] if older is not None and older[0] == TREE_MODE else None
                    stack.append((child, under, depth + 1, size, _Node(name, node)))
        return None

    def _seen_as_deep(self, oid: pygit2.Oid, depth: int, length: int) -> bool:
        """Whether `oid` was walked at least this deep and this long (then nothing under it
        can be refused now that wasn't then); else it is remembered at this place."""
        places = self._reached.setdefault(oid, [])
        if any(d >= depth and n >= length for d, n in places):
            return True
        places[:] = [(d, n) for d, n in places if not (depth >= d and length >= n)]
        places.append((depth, length))
        return False

    def _by_name(self, oid: pygit2.Oid | None) -> dict[bytes, tuple[int, pygit2.Oid]]:
        if oid is None:
            return {}
        try:
            return {name: (mode, child) for name, mode, child in self.entries(oid)}
        except (KeyError, ValueError):
            return {}

    def _name_problem(self, name: bytes) -> str | None:
        if name not in self._names:
            text = name.decode("utf-8", "surrogateescape")
            self._names[name] = INVALID_PATH if b"/" in name else path_problem(text)
        return self._names[name]


@dataclass(slots=True)
class _Counting:
    """A tree being counted: its id, its subtrees' ids, the next one to add, its count so far."""

    tree: bytes
    subtrees: list[bytes]
    next: int
    count: int


@dataclass
class TreeCount:
    """Paths under trees, counted up to a bound: a tree's count is its files, symlinks and
    submodules plus its subtrees' counts. Counts are remembered by tree id, so each distinct
    tree is read once however often it is met; memory grows with the distinct trees."""

    odb: pygit2.Odb
    bound: int
    _counts: dict[bytes, int] = field(default_factory=dict)

    def within(self, root: pygit2.Oid) -> bool:
        """Whether the tree `root` holds at most `bound` paths; reading stops past it."""
        if root.raw in self._counts:
            return True
        stack = [self._frame(root.raw)]
        while stack:
            frame = stack[-1]
            if frame.count > self.bound:
                return False  # a tree holds at least what any of its subtrees holds
            if frame.next == len(frame.subtrees):
                stack.pop()
                self._counts[frame.tree] = frame.count
                if stack:
                    stack[-1].count += frame.count
                continue
            child = frame.subtrees[frame.next]
            frame.next += 1
            known = self._counts.get(child)
            if known is None:
                stack.append(self._frame(child))
            else:
                frame.count += known
        return True

    def _frame(self, raw: bytes) -> _Counting:
        leaves, subtrees = self._shape(raw)
        return _Counting(raw, subtrees, 0, leaves)

    def _shape(self, raw: bytes) -> tuple[int, list[bytes]]:
        """A tree's count of entries that are paths, and its subtrees' ids, once each entry."""
        data = self.odb.read(pygit2.Oid(raw=raw))[1]
        leaves = 0
        subtrees: list[bytes] = []
        pos, end = 0, len(data)
        while pos < end:
            space = data.index(b" ", pos)
            nul = data.index(b"\0", space)
            if data[pos:space] in _TREE_MODES:
                oid = data[nul + 1 : nul + 21]
                if len(oid) != 20:
                    raise ValueError("truncated tree")
                subtrees.append(oid)
            else:
                leaves += 1
            pos = nul + 21
        return leaves, subtrees


def _parse_tree(data: bytes) -> list[Entry]:
    """`<octal mode> <name>\\0<20-byte id>`, repeated."""
    entries: list[Entry] = []
    pos, end = 0, len(data)
    while pos < end:
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        oid = data[nul + 1 : nul + 21]
        if len(oid) != 20:
            raise ValueError("truncated tree")
        entries.append((data[space + 1 : nul], int(data[pos:space], 8), pygit2.Oid(raw=oid)))
        pos = nul + 21
    return entries


def _header(data: bytes, key: bytes) -> bytes | None:
    """The first `key <value>` line of a commit's or tag's header."""
    for line in data.split(b"\n\n", 1)[0].split(b"\n"):
        if line.startswith(key + b" "):
            return line[len(key) + 1 :]
    return None


def _tree_of_commit(odb: pygit2.Odb, oid: pygit2.Oid) -> pygit2.Oid | None:
    try:
        kind, data = odb.read(oid)
    except (KeyError, ValueError):
        return None
    tree = _header(data, b"tree") if kind == _COMMIT else None
    return pygit2.Oid(hex=tree.decode()) if tree else None


@dataclass(slots=True)
class Pushed:
    """The push's own objects (`incoming`, receive-pack's quarantine) by kind, each commit
    with its tree and first parent; `odb` reads them and everything older."""

    odb: pygit2.Odb
    incoming: pygit2.Odb
    commits: list[tuple[pygit2.Oid, pygit2.Oid, pygit2.Oid | None]] = field(default_factory=list)
    trees: list[pygit2.Oid] = field(default_factory=list)
    tags: list[pygit2.Oid] = field(default_factory=list)

    @classmethod
    def sort(cls, odb: pygit2.Odb, incoming: pygit2.Odb) -> Pushed:
        """Each object of the push read once, for every check after."""
        pushed = cls(odb, incoming)
        for oid in incoming:
            kind = incoming.read_header(oid)[0]
            if kind == _TREE:
                pushed.trees.append(oid)
            elif kind == _TAG:
                pushed.tags.append(oid)
            elif kind == _COMMIT:
                data = odb.read(oid)[1]
                tree = _header(data, b"tree")
                if tree is None:
                    continue
                parent = _header(data, b"parent")
                pushed.commits.append(
                    (oid, pygit2.Oid(hex=tree.decode()), pygit2.Oid(hex=parent.decode()) if parent else None)
                )
        return pushed


def path_problem_in_push(pushed: Pushed) -> PathProblem | None:
    """The first refused path among the trees the push brings, each new commit's tree
    compared with its first parent's. Trees no new commit holds (a tag's, a ref's, none at
    all) are checked as roots."""
    odb = pushed.odb
    walk = TreeWalk(odb)
    for _, root, parent in pushed.commits:
        if not pushed.incoming.exists(root):
            continue  # a tree already held at the root of some commit is as good there
        before = _tree_of_commit(odb, parent) if parent is not None else None
        problem = walk.check(root, before)
        if problem is not None:
            return problem
    trees = list(pushed.trees)
    for tag in pushed.tags:
        target = _tag_target(odb, tag)
        if target is not None and not walk.reached(target):
            trees.append(target)
    for tree in trees:
        if not walk.reached(tree) and (problem := walk.check(tree, None)) is not None:
            return problem
    return None


def crowded_commit(pushed: Pushed, bound: int) -> pygit2.Oid | None:
    """A new commit whose tree holds more than `bound` paths, or None. Its tree is counted
    whole, old subtrees too, each distinct tree once for the whole push."""
    count = TreeCount(pushed.odb, bound)
    for commit, root, _ in pushed.commits:
        if not count.within(root):
            return commit
    return None


def _tag_target(odb: pygit2.Odb, oid: pygit2.Oid) -> pygit2.Oid | None:
    """The tree a tag names through any chain of tags, or None."""
    for _ in range(64):
        try:
            kind, data = odb.read(oid)
        except (KeyError, ValueError):
            return None
        if kind == _TREE:
            return oid
        target = _header(data, b"object") if kind == _TAG else None
        if target is None:
            return None
        oid = pygit2.Oid(hex=target.decode())
    return None


def fast_forward(repo: pygit2.Repository, old: str, new: str) -> bool:
    """Whether `new` has `old` in its history (or is it)."""
    if old == new:
        return True
    try:
        return repo.descendant_of(pygit2.Oid(hex=new), pygit2.Oid(hex=old))
    except (KeyError, ValueError, pygit2.GitError):
        return False


def is_commit(odb: pygit2.Odb, oid: str) -> bool:
    try:
        return odb.read_header(pygit2.Oid(hex=oid))[0] == _COMMIT
    except (KeyError, ValueError):
        return False


def refusal(
    repo: pygit2.Repository,
    incoming: pygit2.Odb | None,
    commands: list[tuple[str, str, str]],
    rules: Rules,
) -> str | None:
    """The message refusing the whole push, or None to let it through."""
    odb = repo.odb
    for old, new, ref in commands:
        if new == ZERO:
            continue
        if ref.startswith("refs/heads/") and not is_commit(odb, new):
            return rules.not_a_commit
        if old != ZERO and ref in rules.no_force and not fast_forward(repo, old, new):
            return rules.force_refused
    if incoming is None:
        return None
    pushed = Pushed.sort(odb, incoming)
    problem = path_problem_in_push(pushed)
    if problem is not None:
        return rules.path_refused.replace("{path}", problem.shown()).replace("{reason}", problem.reason)
    crowded = crowded_commit(pushed, rules.max_tree_entries)
    if crowded is not None:
        return rules.tree_refused.replace("{commit}", str(crowded)[:8]).replace(
            "{limit}", str(rules.max_tree_entries)
        )
    return None


def main() -> int:
    """Reads receive-pack's `<old> <new> <ref>` lines; a refusal's message goes to stderr,
    which git shows the pusher, and the exit status declines the whole push."""
    try:
        rules = Rules.from_environment(os.environ)
    except (KeyError, TypeError, ValueError):
        sys.stderr.write("The push could not be checked.\n")
        return 1
    try:
        commands = []
        for line in sys.stdin.buffer.read().decode("utf-8", "surrogateescape").splitlines():
            old, new, ref = line.split(" ", 2)
            commands.append((old, new, ref))
        repo = pygit2.Repository(os.environ.get("GIT_DIR", "."))
        quarantine = os.environ.get("GIT_QUARANTINE_PATH")
        incoming = None
        if quarantine:
            repo.odb.add_disk_alternate(quarantine)
            incoming = pygit2.Odb(quarantine)
        message = refusal(repo, incoming, commands, rules)
    except Exception:  # a push that can't be checked is not let through
        message = rules.check_failed
    if message is None:
        return 0
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    return 1


if __name__ == "__main__":
    sys.exit(main())
