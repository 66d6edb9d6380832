"""YAML text to plain Python values, the way GitLab loads a CI file: aliases, anchors and
merge keys allowed, `!reference [job, key]` kept as a `Reference` to resolve later, and limits
that turn hostile input (alias bombs, deep nesting, huge files) into an error instead of a
hang. Parser messages are libyaml's, formatted as Ruby's Psych prints them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

# GitLab's max_yaml_size_bytes and the depth its deep-size check allows.
MAX_YAML_BYTES = 2 * 1024 * 1024
MAX_DEPTH = 100
# Nodes a file may expand to once every alias is followed (an alias bomb goes far beyond).
MAX_NODES = 500_000

TOO_BIG = "The parsed YAML is too big"
INVALID_FORMAT = "Invalid configuration format"

_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class Reference:
    """`!reference [a, b]`: the value at that path of the configuration."""

    path: tuple[str, ...]
    valid: bool = True

    def inspect(self) -> str:
        """As Ruby prints the tag in its messages: `!reference ["a", "b"]`."""
        return "!reference [" + ", ".join(_ruby_str(p) for p in self.path) + "]"


class YamlError(Exception):
    """A file that is not YAML GitLab would load; the message is GitLab's."""


def _ruby_str(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


class _Loader(_Base):  # type: ignore[misc,valid-type]
    pass


def _reference(loader: yaml.SafeLoader, node: yaml.Node) -> Reference:
    if not isinstance(node, yaml.SequenceNode):
        return Reference((), valid=False)
    items = loader.construct_sequence(node, deep=True)
    if not items or not all(isinstance(i, str) for i in items):
        return Reference(tuple(str(i) for i in items), valid=False)
    return Reference(tuple(items))


_Loader.add_constructor("!reference", _reference)


def _psych_message(err: yaml.MarkedYAMLError) -> str:
    """Psych's SyntaxError text: `(<unknown>): <problem> <context> at line L column C`."""
    words = " ".join(part for part in (err.problem, err.context) if part)
    mark = err.context_mark or err.problem_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    return f"(<unknown>): {words} at line {line} column {column}"


def _check_shape(text: str) -> None:
    """Depth from the parser's events (iterative in libyaml), before composing recurses."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlError(TOO_BIG)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _expanded_size(root: yaml.Node, budget: int) -> int:
    """Nodes the document holds with every alias followed, counted once per shared node
    (memoised), without recursion; stops early past `budget`."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in sizes and not done:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                children.extend((k, v))
        if not done:
            sizes[key] = -1  # in progress: a cycle counts as nothing more
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        total = 1 + sum(max(sizes.get(id(child), 0), 0) for child in children)
        sizes[key] = total
        if total > budget:
            return total
    return sizes.get(id(root), 0)


def _document(loader: yaml.SafeLoader) -> yaml.Node | None:
    """The configuration's document: the first, or the one after a `spec:` header document
    (GitLab's header for inputs)."""
    nodes: list[yaml.Node] = []
    while len(nodes) < 2 and loader.check_node():
        nodes.append(loader.get_node())
    if not nodes:
        return None
    first = nodes[0]
    if len(nodes) > 1 and isinstance(first, yaml.MappingNode):
        keys = [k.value for k, _ in first.value if isinstance(k, yaml.ScalarNode)]
        if keys == ["spec"]:
            return nodes[1]
    return first


def load(text: str, *, budget: int = MAX_NODES) -> tuple[Any, int]:
    """The document's value and how many nodes it expands to; raises YamlError."""
    if len(text) > MAX_YAML_BYTES:
        raise YamlError(TOO_BIG)
    try:
        _check_shape(text)
        loader = _Loader(text)
        try:
            node = _document(loader)
            if node is None:
                return None, 0
            size = _expanded_size(node, budget)
            if size > budget:
                raise YamlError(TOO_BIG)
            return loader.construct_document(node), size
        finally:
            loader.dispose()
    except YamlError:
        raise
    except yaml.MarkedYAMLError as err:
        raise YamlError(_psych_message(err)) from None
    except yaml.YAMLError as err:
        raise YamlError(f"(<unknown>): {err}") from None
    except (RecursionError, MemoryError):
        raise YamlError(TOO_BIG) from None
    except (TypeError, ValueError) as err:  # unhashable keys, bad timestamps and the like
        raise YamlError(f"(<unknown>): {err}") from None
