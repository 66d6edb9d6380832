"""The configuration as one hash: `include: local` files merged in, `extends` expanded and
`!reference` tags replaced, as GitLab composes it before reading jobs. Every step counts its
work against one budget, so inputs built to multiply (aliases, references, extends chains)
end in an error instead of a hang."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from kiln.services.ci_yaml import expressions, globs
from kiln.services.ci_yaml.loader import TOO_BIG, Reference, YamlError, load
from kiln.services.ci_yaml.plan import Context

MAX_WORK = 1_000_000
MAX_EXTENDS_DEPTH = 11
MAX_REFERENCE_DEPTH = 10
MAX_INCLUDE_DEPTH = 100


class ConfigError(Exception):
    """The configuration cannot be read; the message is GitLab's."""


class Budget:
    """Work done composing, shared by every step."""

    def __init__(self, limit: int = MAX_WORK) -> None:
        self.limit = limit
        self.used = 0

    def spend(self, amount: int = 1) -> None:
        self.used += amount
        if self.used > self.limit:
            raise ConfigError(TOO_BIG)


def clean(value: Any, budget: Budget) -> Any:
    """Keys as strings and dates as text, as GitLab's symbolised Psych values print."""
    budget.spend()
    if isinstance(value, dict):
        return {_key(k): clean(v, budget) for k, v in value.items()}
    if isinstance(value, list):
        return [clean(v, budget) for v in value]
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    return value


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return ""
    return str(key)


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any], budget: Budget) -> dict[str, Any]:
    """Hashes merged key by key, everything else replaced by `over`'s (Hash#deep_merge)."""
    out = dict(base)
    budget.spend(len(base) + len(over) + 1)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v, budget)
        else:
            out[k] = v
    return out


_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def expand(text: str, variables: Mapping[str, str]) -> str:
    """`$VAR` and `${VAR}` replaced by their values (unknown ones by nothing)."""
    return _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), ""), text)


# ------------------------------------------------------------------------------- includes


class Includes:
    """`include:` of the root file and of every included file, merged under the root."""

    def __init__(self, ctx: Context, budget: Budget) -> None:
        self.ctx = ctx
        self.budget = budget
        self.seen: set[str] = set()
        self.listed: list[dict[str, Any]] = []
        self.total_size = 0

    def merge(self, config: dict[str, Any], depth: int = 0) -> dict[str, Any]:
        if "include" not in config:
            return config
        if depth >= MAX_INCLUDE_DEPTH:
            raise ConfigError(f"Maximum of {self.ctx.max_includes} nested includes are allowed!")
        merged: dict[str, Any] = {}
        for location in self._locations(config["include"]):
            merged = deep_merge(merged, self._file(location, depth), self.budget)
        own = {k: v for k, v in config.items() if k != "include"}
        return deep_merge(merged, own, self.budget)

    def _locations(self, spec: Any) -> list[str]:
        items = spec if isinstance(spec, list) else [spec]
        out = []
        for item in items:
            if isinstance(item, str):
                if re.match(r"https?://", item):
                    raise ConfigError(f"Included file `{item}`: remote includes are not supported")
                out.append(item)
            elif isinstance(item, dict):
                if "rules" in item and not self._rules_allow(item["rules"]):
                    continue
                if "local" in item and isinstance(item["local"], str):
                    out.append(item["local"])
                    continue
                for kind in ("project", "remote", "template", "component", "artifact"):
                    if kind in item:
                        raise ConfigError(f"Included file `{item[kind]}`: {kind} includes are not supported")
                raise ConfigError(f"Unknown include: `{_inspect(item)}`")
            else:
                raise ConfigError(
                    "include config should be a hash, a string or an array containing hashes and strings"
                )
        return out

    def _rules_allow(self, rules: Any) -> bool:
        if not isinstance(rules, list):
            raise ConfigError("include rule config should be an array of hashes")
        for rule in rules:
            if not isinstance(rule, dict):
                raise ConfigError("include rule config should be a hash")
            if rule_matches(rule, self.ctx, self.ctx.variables, "include:rules:rule"):
                return rule.get("when", "always") != "never"
        return False

    def _file(self, location: str, depth: int) -> dict[str, Any]:
        path = expand(location, self.ctx.variables).lstrip("/")
        if path in self.seen:
            return {}
        if len(self.seen) >= self.ctx.max_includes:
            raise ConfigError(f"Maximum of {self.ctx.max_includes} nested includes are allowed!")
        if not re.search(r"\.ya?ml\Z", path):
            raise ConfigError(f"Included file `{path}` does not have YAML extension!")
        if any(ch in path for ch in "*?[{"):
            raise ConfigError(f"Local file `{path}`: wildcard includes are not supported")
        text = self.ctx.read_file(path)
        if text is None:
            raise ConfigError(f"Local file `{path}` does not exist!")
        self.seen.add(path)
        self.total_size += len(text.encode("utf-8", "surrogatepass"))
        if self.total_size > self.ctx.max_size:
            raise ConfigError(TOO_BIG)
        if not text.strip():
            raise ConfigError(f"Local file `{path}` is empty!")
        try:
            value, size = load(text, budget=max(self.budget.limit - self.budget.used, 0))
        except YamlError as err:
            if str(err) == TOO_BIG:
                raise ConfigError(TOO_BIG) from None
            raise ConfigError(f"Included file `{path}` does not have valid YAML syntax!") from None
        self.budget.spend(size)
        if not isinstance(value, dict):
            raise ConfigError(f"Included file `{path}` does not have valid YAML syntax!")
        self.listed.append(
            {
                "type": "local",
                "location": path,
                "blob": None,
                "raw": None,
                "extra": {},
                "context_project": self.ctx.variables.get("CI_PROJECT_PATH"),
                "context_sha": self.ctx.variables.get("CI_COMMIT_SHA"),
            }
        )
        return self.merge(clean(value, self.budget), depth + 1)


def _inspect(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_inspect(k)}=>{_inspect(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_inspect(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if value is None:
        return "nil"
    return str(value).lower() if isinstance(value, bool) else str(value)


# ---------------------------------------------------------------------------------- rules


def path_list(value: Any) -> list[str] | None:
    """`changes`/`exists` as a list of globs ({paths: [...]} or [...]); None when malformed."""
    if isinstance(value, dict):
        value = value.get("paths")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        return None
    return value


def rule_matches(rule: Mapping[str, Any], ctx: Context, variables: Mapping[str, str], where: str) -> bool:
    """A rule's `if`, `changes` and `exists` all hold (an absent clause holds)."""
    if "if" in rule:
        condition = rule["if"]
        try:
            if not isinstance(condition, str) or not expressions.evaluate(condition, variables):
                if not isinstance(condition, str):
                    raise expressions.ExpressionError("not a string")
                return False
        except expressions.ExpressionError:
            raise ConfigError(f"{where} if invalid expression syntax") from None
    if "changes" in rule:
        paths = path_list(rule["changes"])
        if paths is None:
            raise ConfigError(f"{where} changes should be an array of strings")
        if ctx.changed_paths is not None:
            wanted = [expand(p, variables) for p in paths]
            if not globs.any_match(wanted, ctx.changed_paths()):
                return False
    if "exists" in rule:
        paths = path_list(rule["exists"])
        if paths is None:
            raise ConfigError(f"{where} exists should be an array of strings")
        if not ctx.exists([expand(p, variables) for p in paths]):
            return False
    return True


# -------------------------------------------------------------------------------- extends


class Extends:
    """Each top-level hash with `extends` merged over its bases, deepest first."""

    def __init__(self, config: dict[str, Any], budget: Budget) -> None:
        self.config = config
        self.budget = budget
        self.done: set[str] = set()

    def run(self) -> dict[str, Any]:
        for name in list(self.config):
            value = self.config[name]
            if isinstance(value, dict) and "extends" in value:
                self._resolve(name, [])
        return self.config

    def _resolve(self, name: str, chain: list[str]) -> dict[str, Any]:
        value = self.config[name]
        if name in self.done or not isinstance(value, dict) or "extends" not in value:
            return value if isinstance(value, dict) else {}
        if name in chain:
            raise ConfigError(f"{chain[0]}: circular dependency detected in `extends`")
        if len(chain) >= MAX_EXTENDS_DEPTH:
            raise ConfigError(f"{chain[0]}: nesting too deep in `extends`")
        bases = value["extends"]
        if isinstance(bases, str):
            bases = [bases]
        if not isinstance(bases, list) or not all(isinstance(b, str) for b in bases):
            raise ConfigError(f"jobs:{name}:extends config should be an array of strings or a string")
        unknown = [b for b in bases if b not in self.config]
        if unknown:
            raise ConfigError(f"{name}: unknown keys in `extends` ({', '.join(unknown)})")
        invalid = [b for b in bases if not isinstance(self.config[b], dict)]
        if invalid:
            raise ConfigError(f"{name}: invalid base hashes in `extends` ({', '.join(invalid)})")
        merged: dict[str, Any] = {}
        for base in bases:
            merged = deep_merge(merged, self._resolve(base, [*chain, name]), self.budget)
        result = deep_merge(merged, value, self.budget)
        self.config[name] = result
        self.done.add(name)
        return result


# ----------------------------------------------------------------------------- references


class References:
    """`!reference [a, b]` replaced by the configuration's value there, references inside it
    resolved too (at most ten deep)."""

    def __init__(self, config: dict[str, Any], budget: Budget) -> None:
        self.config = config
        self.budget = budget

    def run(self) -> dict[str, Any]:
        resolved = self._walk(self.config, 0)
        assert isinstance(resolved, dict)
        return resolved

    def _walk(self, value: Any, depth: int) -> Any:
        self.budget.spend()
        if isinstance(value, Reference):
            return self._target(value, depth)
        if isinstance(value, dict):
            return {k: self._walk(v, depth) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v, depth) for v in value]
        return value

    def _target(self, ref: Reference, depth: int) -> Any:
        if not ref.valid:
            raise ConfigError(f"{ref.inspect()} is not valid")
        if depth >= MAX_REFERENCE_DEPTH:
            raise ConfigError(f"{ref.inspect()} is part of a circular chain")
        found: Any = self.config
        for part in ref.path:
            if not isinstance(found, dict) or part not in found:
                raise ConfigError(f"{ref.inspect()} could not be found")
            found = found[part]
        if found is None:
            raise ConfigError(f"{ref.inspect()} could not be found")
        return self._walk(found, depth + 1)


def strip_references(value: Any) -> Any:
    """A value with no Reference left (for text output of an unresolved configuration)."""
    if isinstance(value, Reference):
        return list(value.path)
    if isinstance(value, dict):
        return {k: strip_references(v) for k, v in value.items()}
    if isinstance(value, list):
        return [strip_references(v) for v in value]
    return value
