"""Reading a composed configuration into a PipelinePlan: global keywords, each job's keywords
checked and normalised into the shapes runners and the API use, `rules`/`only`/`except`
evaluated against the Context, `parallel` expanded, `needs` and stages checked."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from kiln.models.ci import RETRYABLE_FAILURE_REASONS
from kiln.services.ci_yaml import durations, expressions
from kiln.services.ci_yaml.compose import (
    Budget,
    ConfigError,
    Extends,
    Includes,
    References,
    clean,
    expand,
    path_list,
    rule_matches,
    strip_references,
)
from kiln.services.ci_yaml.globs import any_match
from kiln.services.ci_yaml.loader import INVALID_FORMAT, TOO_BIG, YamlError, load
from kiln.services.ci_yaml.plan import Context, JobPlan, Need, PipelinePlan

DEFAULT_STAGES = ["build", "test", "deploy"]
GLOBAL_KEYS = {
    "default",
    "include",
    "stages",
    "variables",
    "workflow",
    "image",
    "services",
    "cache",
    "before_script",
    "after_script",
}
DEFAULT_KEYS = {
    "after_script",
    "artifacts",
    "before_script",
    "cache",
    "hooks",
    "id_tokens",
    "identity",
    "image",
    "interruptible",
    "retry",
    "services",
    "tags",
    "timeout",
}
COMMON_JOB_KEYS = {
    "extends",
    "stage",
    "only",
    "except",
    "rules",
    "variables",
    "inherit",
    "allow_failure",
    "when",
    "needs",
    "resource_group",
    "environment",
    "parallel",
}
JOB_KEYS = COMMON_JOB_KEYS | {
    "tags",
    "script",
    "run",
    "type",
    "image",
    "services",
    "start_in",
    "artifacts",
    "cache",
    "dependencies",
    "before_script",
    "after_script",
    "hooks",
    "coverage",
    "retry",
    "timeout",
    "release",
    "id_tokens",
    "secrets",
    "publish",
    "pages",
    "manual_confirmation",
    "interruptible",
    "identity",
}
BRIDGE_KEYS = COMMON_JOB_KEYS | {"trigger", "inherit"}
JOB_WHEN = ("on_success", "on_failure", "always", "manual", "delayed")
RULE_WHEN = ("on_success", "on_failure", "always", "manual", "delayed", "never")
RULE_KEYS = {
    "if",
    "changes",
    "exists",
    "when",
    "start_in",
    "allow_failure",
    "variables",
    "needs",
    "interruptible",
}
RETRY_WHEN = {"always", *RETRYABLE_FAILURE_REASONS}
# Report types: (format, the file name runners store them under), as GitLab's job artifacts.
REPORTS = {
    "junit": ("gzip", "junit.xml.gz"),
    "metrics": ("gzip", "metrics.txt.gz"),
    "dotenv": ("gzip", ".env.gz"),
    "cobertura": ("gzip", "cobertura-coverage.xml.gz"),
    "jacoco": ("gzip", "jacoco.xml.gz"),
    "terraform": ("raw", "tfplan.json"),
    "accessibility": ("raw", "gl-accessibility.json"),
    "codequality": ("raw", "gl-code-quality-report.json"),
    "sast": ("raw", "gl-sast-report.json"),
    "secret_detection": ("raw", "gl-secret-detection-report.json"),
    "dependency_scanning": ("raw", "gl-dependency-scanning-report.json"),
    "container_scanning": ("raw", "gl-container-scanning-report.json"),
    "cluster_image_scanning": ("raw", "gl-cluster-image-scanning-report.json"),
    "dast": ("raw", "gl-dast-report.json"),
    "license_scanning": ("raw", "gl-license-scanning-report.json"),
    "performance": ("raw", "performance.json"),
    "browser_performance": ("raw", "browser-performance.json"),
    "load_performance": ("raw", "load-performance.json"),
    "requirements": ("raw", "requirements.json"),
    "requirements_v2": ("raw", "requirements_v2.json"),
    "api_fuzzing": ("raw", "gl-api-fuzzing-report.json"),
    "coverage_fuzzing": ("raw", "gl-coverage-fuzzing.json"),
    "cyclonedx": ("gzip", "gl-sbom.cdx.json.gz"),
    "annotations": ("gzip", "gl-annotations.json.gz"),
    "repository_xray": ("gzip", "gl-repository-xray.json.gz"),
}
ARTIFACT_KEYS = {
    "name",
    "untracked",
    "paths",
    "exclude",
    "when",
    "expire_in",
    "reports",
    "expose_as",
    "public",
    "access",
}
CACHE_KEYS = {"key", "untracked", "paths", "policy", "when", "fallback_keys", "unprotect"}
MAX_PARALLEL = 200
MAX_NEEDS = 50
SCRIPT_ERROR = "config should be a string or a nested array of strings up to 10 levels deep"


def _str(value: Any) -> str:
    """A YAML scalar as GitLab stringifies variable values."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _flatten(value: Any, depth: int = 0) -> list[str] | None:
    """A script: a string, or strings nested up to ten lists deep, flattened."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or depth >= 10:
        return None
    out: list[str] = []
    for item in value:
        inner = _flatten(item, depth + 1)
        if inner is None:
            return None
        out.extend(inner)
    return out


@dataclass(slots=True)
class _Job:
    """A job as read, before rules and parallel decide its instances."""

    name: str
    order: int
    stage: str
    bridge: bool
    when: str
    start_in: int | None
    allow_failure: bool
    exit_codes: list[int] | None
    tags: list[str]
    variables: dict[str, dict[str, Any]]
    rules: list[dict[str, Any]] | None
    only: dict[str, Any] | None
    except_: dict[str, Any] | None
    needs: list[Need] | None
    needs_raw: list[dict[str, Any]] | None
    options: dict[str, Any]
    parallel: Any = None
    instances: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)


class Reader:
    def __init__(self, ctx: Context, plan: PipelinePlan, static: bool) -> None:
        self.ctx = ctx
        self.plan = plan
        self.static = static
        self.budget = Budget()
        self.errors: list[str] = []
        self.workflow_rules = False

    def err(self, message: str) -> None:
        if message not in self.errors:
            self.errors.append(message)

    def invalid(self, message: str) -> None:
        """An entry's validation error: GitLab prints these in lower case, job names too."""
        self.err(message.lower())

    # ------------------------------------------------------------------------- top level

    def run(self, text: str) -> None:
        if not text.strip():
            raise ConfigError("Please provide content of .gitlab-ci.yml")
        if len(text.encode("utf-8", "surrogatepass")) > self.ctx.max_size:
            raise ConfigError(TOO_BIG)
        try:
            value, size = load(text, budget=self.budget.limit)
        except YamlError as err:
            raise ConfigError(str(err)) from None
        self.budget.spend(size)
        if not isinstance(value, dict):
            raise ConfigError(INVALID_FORMAT)
        config = clean(value, self.budget)
        includes = Includes(self.ctx, self.budget)
        includes.total_size = len(text.encode("utf-8", "surrogatepass"))
        try:
            config = includes.merge(config)
        finally:
            self.plan.includes = includes.listed
        config = Extends(config, self.budget).run()
        config = References(config, self.budget).run()
        self.plan.merged_yaml = _dump(config)
        self._read(config)

    def _read(self, config: dict[str, Any]) -> None:
        stages = self._stages(config)
        global_vars = self._variables(
            config.get("variables"), "variables", ("value", "description", "expand", "options")
        )
        defaults = self._defaults(config)
        jobs_cfg = {k: v for k, v in config.items() if k not in GLOBAL_KEYS}
        self.workflow_rules = isinstance(config.get("workflow"), dict) and "rules" in config["workflow"]
        workflow_vars = self._workflow(config.get("workflow"), global_vars)
        jobs: list[_Job] = []
        visible = False
        for order, (name, cfg) in enumerate(jobs_cfg.items()):
            if name.startswith("."):
                continue
            if not isinstance(cfg, dict) or not any(k in cfg for k in ("script", "run", "trigger")):
                # GitLab's Jobs entry: the job's name humanised, then lower-cased.
                self.invalid(f"jobs {name} config should implement the script:, run:, or trigger: keyword")
                continue
            visible = True
            job = self._job(name, cfg, order, defaults, global_vars)
            if job is not None:
                jobs.append(job)
        if not visible:
            self.invalid("jobs config should contain at least one visible job")
        if self.errors:
            return
        for job in jobs:
            if job.stage not in stages:
                available = ", ".join(stages)
                self.err(
                    f"{job.name} job: chosen stage {job.stage} does not exist; available stages are {available}"
                )
        if self.errors:
            return
        for job in jobs:
            self._parallel(job)
        self._check_needs(jobs, stages)
        if self.errors or self.plan.filtered:
            return
        self._build(jobs, stages, global_vars, workflow_vars)

    def _stages(self, config: dict[str, Any]) -> list[str]:
        given = config.get("stages")
        if given is None:
            given = DEFAULT_STAGES
        elif not _strings(given):
            self.invalid("stages config should be an array of strings")
            given = DEFAULT_STAGES
        middle = list(dict.fromkeys(s for s in given if s not in (".pre", ".post")))
        return [".pre", *middle, ".post"]

    def _defaults(self, config: dict[str, Any]) -> dict[str, Any]:
        legacy = {
            k: config[k]
            for k in ("image", "services", "cache", "before_script", "after_script")
            if k in config
        }
        given = config.get("default", {})
        if given is None:
            given = {}
        if not isinstance(given, dict):
            self.invalid("default config should be a hash")
            return legacy
        unknown = [k for k in given if k not in DEFAULT_KEYS]
        if unknown:
            self.invalid(f"default config contains unknown keys: {', '.join(unknown)}")
        return {**legacy, **given}

    def _workflow(self, workflow: Any, global_vars: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        if workflow is None:
            return {}
        if not isinstance(workflow, dict):
            self.invalid("workflow config should be a hash")
            return {}
        unknown = [k for k in workflow if k not in ("rules", "name", "auto_cancel")]
        if unknown:
            self.invalid(f"workflow config contains unknown keys: {', '.join(unknown)}")
        rules = workflow.get("rules")
        chosen: dict[str, dict[str, Any]] = {}
        if rules is not None:
            checked = self._rules(rules, "workflow:rules", workflow=True)
            if checked is not None and not self.static and not self.errors:
                seen = self._eval_vars(global_vars)
                for rule in checked:
                    if rule_matches(rule, self.ctx, seen, "workflow:rules:rule"):
                        if rule.get("when", "always") == "never":
                            self.plan.filtered = True
                        chosen = self._variables(rule.get("variables"), "workflow:rules:rule:variables") or {}
                        break
                else:
                    self.plan.filtered = True
        self.plan.variables = [_var_entry(k, v) for k, v in chosen.items()]
        name = workflow.get("name")
        if name is not None:
            if not isinstance(name, str) or len(name) > 255:
                self.invalid("workflow:name config should be a string up to 255 characters")
            else:
                seen = {**{k: v["value"] for k, v in global_vars.items()}, **self.ctx.variables}
                seen.update({k: v["value"] for k, v in chosen.items()})
                self.plan.name = expand(name, seen) if not self.static else name
        return chosen

    def _eval_vars(self, *layers: Mapping[str, dict[str, Any]]) -> dict[str, str]:
        """What `if` expressions see: YAML variables under the pipeline's own."""
        out: dict[str, str] = {}
        for layer in layers:
            out.update({k: v["value"] for k, v in layer.items()})
        out.update(self.ctx.variables)
        return out

    # ------------------------------------------------------------------------------ a job

    def _job(
        self,
        name: str,
        cfg: Any,
        order: int,
        defaults: dict[str, Any],
        global_vars: dict[str, dict[str, Any]],
    ) -> _Job | None:
        where = f"jobs:{name}"
        if len(name) > 255:
            self.invalid(f"{where} name is too long (maximum is 255 characters)")
        bridge = "trigger" in cfg and "script" not in cfg and "run" not in cfg
        allowed = BRIDGE_KEYS if bridge else JOB_KEYS
        unknown = [k for k in cfg if k not in allowed]
        if unknown:
            self.invalid(f"{where} config contains unknown keys: {', '.join(unknown)}")
        for pair in (("script", "trigger"), ("run", "trigger")):
            if all(k in cfg for k in pair):
                self.invalid(f"{where} config these keys cannot be used together: {', '.join(pair)}")
        inherit = self._inherit(cfg.get("inherit"), where)
        own_defaults = {
            k: v for k, v in defaults.items() if k not in cfg and (inherit[0] is True or k in inherit[0])
        }
        eff = {**own_defaults, **cfg} if not bridge else cfg
        options: dict[str, Any] = {}
        if bridge:
            options["trigger"] = self._trigger(cfg["trigger"], where)
        else:
            self._scripts(eff, where, options)
        stage = cfg.get("stage", cfg.get("type", "test"))
        if not isinstance(stage, str):
            self.invalid(f"{where}:stage config should be a string")
            stage = "test"
        when = cfg.get("when", "on_success")
        if when not in JOB_WHEN:
            self.invalid(f"{where} when should be one of: {', '.join(JOB_WHEN)}")
            when = "on_success"
        start_in = self._start_in(cfg, when, where)
        allow_failure, exit_codes = self._allow_failure(cfg, where)
        if allow_failure is None:
            allow_failure = when == "manual"
        if exit_codes is not None:
            options["allow_failure_exit_codes"] = exit_codes
        tags = eff.get("tags", [])
        if tags is None:
            tags = []
        if not _strings(tags):
            self.invalid(f"{where}:tags config should be an array of strings")
            tags = []
        variables = self._variables(cfg.get("variables"), f"{where}:variables")
        if inherit[1] is not True:
            keep = inherit[1]
            base_vars = {k: v for k, v in global_vars.items() if keep and k in keep}
        else:
            base_vars = dict(global_vars)
        rules = self._rules(cfg["rules"], f"{where}:rules") if "rules" in cfg else None
        if rules is not None:
            clash = [k for k in ("only", "except", "start_in") if cfg.get(k) is not None]
            if clash:
                self.invalid(f"{where} config key may not be used with `rules`: {', '.join(clash)}")
            last = rules[-1] if rules else None
            if (
                not self.workflow_rules
                and last is not None
                and list(last) == ["when"]
                and last["when"] != "never"
            ):
                self.plan.warnings.append(
                    f"{where} may allow multiple pipelines to run for a single action due to `rules:when` "
                    "clause with no `workflow:rules` - read more: https://docs.gitlab.com/ee/ci/jobs/"
                    "job_troubleshooting.html#job-may-allow-multiple-pipelines-to-run-for-a-single-action-warning"
                )
        only = self._policy(cfg.get("only"), f"{where}:only")
        except_ = self._policy(cfg.get("except"), f"{where}:except")
        if rules is None and only is None and not self.workflow_rules:
            only = {"refs": ["branches", "tags"]}
        needs_raw = self._needs(cfg["needs"], f"{where}:needs") if "needs" in cfg else None
        if not bridge:
            self._job_options(eff, where, options)
        self._shared_options(cfg, eff, where, options)
        if "dependencies" in cfg:
            deps = cfg["dependencies"]
            if deps is None:
                deps = []
            if not _strings(deps):
                self.invalid(f"{where} dependencies should be an array of strings")
            else:
                options["dependencies"] = list(deps)
                if needs_raw:
                    missing = [d for d in deps if d not in {n["job"] for n in needs_raw}]
                    if missing:
                        self.invalid(f"{where} dependencies the {', '.join(missing)} should be part of needs")
        else:
            options["dependencies"] = None
        return _Job(
            name=name,
            order=order,
            stage=stage,
            bridge=bridge,
            when=when,
            start_in=start_in,
            allow_failure=allow_failure,
            exit_codes=exit_codes,
            tags=list(tags),
            variables={**base_vars, **variables},
            rules=rules,
            only=only,
            except_=except_,
            needs=None,
            needs_raw=needs_raw,
            options=options,
            parallel=cfg.get("parallel"),
        )

    def _inherit(self, value: Any, where: str) -> tuple[Any, Any]:
        """(default, variables): True for all, or the list of names inherited."""
        if value is None:
            return True, True
        if not isinstance(value, dict):
            self.invalid(f"{where}:inherit config should be a hash")
            return True, True
        out = []
        for key in ("default", "variables"):
            given = value.get(key, True)
            if isinstance(given, bool):
                out.append(True if given else [])
            elif _strings(given):
                out.append(list(given))
            else:
                self.invalid(f"{where}:inherit:{key} config should be a boolean value or an array of strings")
                out.append(True)
        return out[0], out[1]

    def _scripts(self, eff: dict[str, Any], where: str, options: dict[str, Any]) -> None:
        if "run" in eff and "script" not in eff:
            options["run"] = eff["run"]
            options["script"] = []
        for key in ("before_script", "script", "after_script"):
            if key not in eff:
                continue
            lines = _flatten(eff[key])
            if lines is None or (key == "script" and not lines):
                self.invalid(f"{where}:{key} {SCRIPT_ERROR}")
                continue
            options[key] = lines

    def _start_in(self, cfg: dict[str, Any], when: str, where: str) -> int | None:
        if when != "delayed":
            if "start_in" in cfg:
                self.invalid(f"{where} start in must be blank")
            return None
        seconds = durations.parse(cfg.get("start_in"))
        if seconds is None:
            self.invalid(f"{where} start in should be a duration")
            return None
        if seconds > 7 * 86400:
            self.invalid(f"{where} start in should not exceed the limit")
        return seconds

    def _allow_failure(self, cfg: dict[str, Any], where: str) -> tuple[bool | None, list[int] | None]:
        if "allow_failure" not in cfg:
            return None, None
        value = cfg["allow_failure"]
        if isinstance(value, bool):
            return value, None
        if isinstance(value, dict) and set(value) == {"exit_codes"}:
            codes = value["exit_codes"]
            codes = [codes] if isinstance(codes, int) and not isinstance(codes, bool) else codes
            if (
                isinstance(codes, list)
                and codes
                and all(isinstance(c, int) and not isinstance(c, bool) for c in codes)
            ):
                return False, list(codes)
            self.invalid(f"{where}:allow_failure exit_codes should be an array of integers or an integer")
            return False, None
        self.invalid(f"{where} allow failure should be a hash or a boolean value")
        return False, None

    def _variables(
        self, value: Any, where: str, allowed: tuple[str, ...] = ("value", "expand")
    ) -> dict[str, dict[str, Any]]:
        """YAML variables as {key: {"value", "raw"?}}, values as strings. `allowed`: the keys a
        variable's hash form may use here (GitLab's allowed_value_data)."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.invalid(f"{where} config should be a hash")
            return {}
        out: dict[str, dict[str, Any]] = {}
        for key, raw in value.items():
            if _alphanumeric(raw):
                out[key] = {"value": _str(raw)}
                continue
            if not isinstance(raw, dict):
                self.err("variable definition must be either a string or a hash")
                continue
            at = f"{where}:{key}"
            if not allowed:
                self.invalid(f"{at} config must be a string")
                continue
            extra = [k for k in raw if k not in allowed]
            if extra:
                self.invalid(f"{at} config uses invalid data keys: {', '.join(extra)}")
                continue
            inner = raw.get("value")
            if inner is not None and not _alphanumeric(inner):
                self.invalid(f"{at} config value must be an alphanumeric string")
                continue
            if "expand" in raw and not isinstance(raw["expand"], bool):
                self.invalid(f"{at} config expand should be a boolean value")
                continue
            options = raw.get("options")
            if options is not None and (not _strings(options) or _str(inner) not in options):
                self.invalid(f"{at} config value must be present in options")
                continue
            entry: dict[str, Any] = {"value": _str(inner)}
            if "expand" in raw:
                entry["raw"] = not raw["expand"]
            out[key] = entry
        return out

    def _rules(self, value: Any, where: str, *, workflow: bool = False) -> list[dict[str, Any]] | None:
        if not isinstance(value, list):
            self.invalid(f"{where} config should be an array of hashes")
            return None
        out = []
        allowed = {"if", "changes", "exists", "when", "variables"} if workflow else RULE_KEYS
        whens = ("always", "never") if workflow else RULE_WHEN
        for rule in value:
            if isinstance(rule, list):  # !reference of a list of rules, flattened
                rules = self._rules(rule, where, workflow=workflow)
                out.extend(rules or [])
                continue
            if not isinstance(rule, dict):
                self.invalid(f"{where}:rule config should be a hash")
                continue
            unknown = [k for k in rule if k not in allowed]
            if unknown:
                self.invalid(f"{where}:rule config contains unknown keys: {', '.join(unknown)}")
            if "if" in rule and not expressions.valid(rule["if"]):
                self.invalid(f"{where}:rule if invalid expression syntax")
            for key in ("changes", "exists"):
                if key in rule and path_list(rule[key]) is None:
                    self.invalid(f"{where}:rule:{key} config should be an array of strings")
            if "when" in rule and rule["when"] not in whens:
                self.invalid(f"{where}:rule when unknown value: {rule['when']}")
            if "allow_failure" in rule and not isinstance(rule["allow_failure"], bool):
                self.invalid(f"{where}:rule allow_failure should be a boolean value")
            if rule.get("when") == "delayed":
                if rule.get("start_in") is None:
                    self.invalid(f"{where}:rule start in can't be blank")
                elif durations.parse(rule["start_in"]) is None:
                    self.invalid(f"{where}:rule start in should be a duration")
                elif (durations.parse(rule["start_in"]) or 0) > 7 * 86400:
                    self.invalid(f"{where}:rule start in should not exceed the limit")
            elif "start_in" in rule:
                self.invalid(f"{where}:rule config contains disallowed keys: start_in")
            if "variables" in rule:
                self._variables(rule["variables"], f"{where}:rule:variables")
            if "needs" in rule:
                self._needs(rule["needs"], f"{where}:rule:needs")
            out.append(rule)
        return out

    def _policy(self, value: Any, where: str) -> dict[str, Any] | None:
        """`only`/`except` as {refs, variables, changes}."""
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            if not _strings(value):
                self.invalid(f"{where} config should be an array of strings or regular expressions")
                return None
            return {"refs": list(value)}
        if not isinstance(value, dict):
            self.invalid(f"{where} config should be an array of strings or regular expressions")
            return None
        unknown = [k for k in value if k not in ("refs", "variables", "changes", "kubernetes")]
        if unknown:
            self.invalid(f"{where} config contains unknown keys: {', '.join(unknown)}")
        out: dict[str, Any] = {}
        if "refs" in value:
            refs = value["refs"]
            refs = [refs] if isinstance(refs, str) else refs
            if not _strings(refs):
                self.invalid(f"{where}:refs config should be an array of strings or regular expressions")
            else:
                out["refs"] = refs
        if "variables" in value:
            exprs = value["variables"]
            exprs = [exprs] if isinstance(exprs, str) else exprs
            if not _strings(exprs) or not all(expressions.valid(e) for e in exprs):
                self.invalid(f"{where} variables invalid expression syntax")
            else:
                out["variables"] = exprs
        if "changes" in value:
            paths = path_list(value["changes"])
            if paths is None:
                self.invalid(f"{where}:changes config should be an array of strings")
            else:
                out["changes"] = paths
        if "kubernetes" in value:
            out["kubernetes"] = value["kubernetes"]
        return out

    def _needs(self, value: Any, where: str) -> list[dict[str, Any]] | None:
        if value is None:
            value = []
        if not isinstance(value, list):
            value = [value]
        out: list[dict[str, Any]] = []
        for item in value:
            if isinstance(item, str):
                out.append({"job": item, "artifacts": True, "optional": False})
            elif isinstance(item, dict) and isinstance(item.get("job"), str):
                unknown = [k for k in item if k not in ("job", "artifacts", "optional", "parallel")]
                if unknown:
                    self.invalid(f"{where}:need config contains unknown keys: {', '.join(unknown)}")
                if "project" in item or "pipeline" in item:
                    self.invalid(f"{where}:need cross-project needs are not supported")
                artifacts, optional = item.get("artifacts", True), item.get("optional", False)
                if not isinstance(artifacts, bool) or not isinstance(optional, bool):
                    self.invalid(f"{where}:need artifacts and optional should be boolean values")
                    continue
                need: dict[str, Any] = {"job": item["job"], "artifacts": artifacts, "optional": optional}
                if "parallel" in item:
                    matrix = self._need_matrix(item["parallel"])
                    if matrix is None:
                        self.invalid(f"{where}:need:parallel config should be a hash with a matrix")
                        continue
                    need["matrix"] = matrix
                out.append(need)
            elif isinstance(item, dict) and ("project" in item or "pipeline" in item):
                self.invalid(f"{where}:need cross-project and parent pipeline needs are not supported")
            else:
                self.invalid(f"{where} config uses invalid types: {type(item).__name__}")
        if len(out) > MAX_NEEDS:
            self.invalid(f"{where} config can not contain more than {MAX_NEEDS} needs")
        return out

    @staticmethod
    def _need_matrix(value: Any) -> list[dict[str, list[str]]] | None:
        """`needs: parallel: matrix`: the matrix instances wanted, each key's allowed values."""
        if not isinstance(value, dict) or set(value) != {"matrix"} or not isinstance(value["matrix"], list):
            return None
        out = []
        for entry in value["matrix"]:
            if not isinstance(entry, dict):
                return None
            wanted: dict[str, list[str]] = {}
            for key, raw in entry.items():
                items = raw if isinstance(raw, list) else [raw]
                if not all(_alphanumeric(v) for v in items):
                    return None
                wanted[key] = [_str(v) for v in items]
            out.append(wanted)
        return out

    # ----------------------------------------------------------------- options of a job

    def _job_options(self, eff: dict[str, Any], where: str, options: dict[str, Any]) -> None:
        if "image" in eff and eff["image"] is not None:
            image = self._image(eff["image"], f"{where}:image")
            if image is not None:
                options["image"] = image
        if "services" in eff and eff["services"] is not None:
            services = eff["services"]
            if not isinstance(services, list):
                self.invalid(f"{where}:services config should be a array")
            else:
                found = [self._image(s, f"{where}:services:service", service=True) for s in services]
                options["services"] = [s for s in found if s is not None]
        if "artifacts" in eff and eff["artifacts"] is not None:
            artifacts = self._artifacts(eff["artifacts"], f"{where}:artifacts")
            if artifacts:
                options["artifacts"] = artifacts
        if "cache" in eff and eff["cache"] is not None:
            caches = eff["cache"] if isinstance(eff["cache"], list) else [eff["cache"]]
            if len(caches) > 4:
                self.invalid(f"{where}:cache config no more than 4 caches can be created")
            found_caches = [self._cache(c, f"{where}:cache") for c in caches]
            options["cache"] = [c for c in found_caches if c is not None]
        if "timeout" in eff and eff["timeout"] is not None:
            seconds = durations.parse(eff["timeout"])
            if seconds is None or isinstance(eff["timeout"], bool):
                self.invalid(f"{where}:timeout config should be a duration")
            elif seconds > 30 * 86400:
                self.invalid(f"{where}:timeout config should not exceed the limit")
            else:
                options["timeout"] = seconds
        if "retry" in eff and eff["retry"] is not None:
            retry = self._retry(eff["retry"], f"{where}:retry")
            if retry is not None:
                options["retry"] = retry
        if "interruptible" in eff and eff["interruptible"] is not None:
            if not isinstance(eff["interruptible"], bool):
                self.invalid(f"{where}:interruptible config should be a boolean value")
            else:
                options["interruptible"] = eff["interruptible"]
        if "coverage" in eff and eff["coverage"] is not None:
            coverage = eff["coverage"]
            if not isinstance(coverage, str) or not (
                len(coverage) >= 2 and coverage[0] == "/" and coverage[-1] == "/"
            ):
                self.invalid(f"{where}:coverage config must be a regular expression")
            else:
                options["coverage"] = coverage[1:-1]
        if "hooks" in eff and eff["hooks"] is not None:
            hooks = eff["hooks"]
            if not isinstance(hooks, dict) or any(k != "pre_get_sources_script" for k in hooks):
                self.invalid(f"{where}:hooks config contains unknown keys")
            else:
                lines = _flatten(hooks.get("pre_get_sources_script", []))
                if lines is None:
                    self.invalid(f"{where}:hooks:pre_get_sources_script {SCRIPT_ERROR}")
                elif lines:
                    options["hooks"] = [{"name": "pre_get_sources_script", "script": lines}]
        for key in ("pages", "release", "publish", "manual_confirmation"):
            if key in eff and eff[key] is not None:
                options[key] = eff[key]

    def _shared_options(
        self, cfg: dict[str, Any], eff: dict[str, Any], where: str, options: dict[str, Any]
    ) -> None:
        if "resource_group" in cfg and cfg["resource_group"] is not None:
            if not isinstance(cfg["resource_group"], str):
                self.invalid(f"{where}:resource_group config should be a string")
            else:
                options["resource_group"] = cfg["resource_group"]
        if "environment" in cfg and cfg["environment"] is not None:
            env = cfg["environment"]
            if isinstance(env, str):
                options["environment"] = {"name": env, "action": "start"}
            elif isinstance(env, dict) and isinstance(env.get("name"), str):
                known = {"name", "url", "action", "on_stop", "auto_stop_in", "kubernetes", "deployment_tier"}
                unknown = [k for k in env if k not in known]
                if unknown:
                    self.invalid(f"{where}:environment config contains unknown keys: {', '.join(unknown)}")
                action = env.get("action", "start")
                if action not in ("start", "prepare", "stop", "verify", "access"):
                    self.invalid(
                        f"{where}:environment action should be start, stop, prepare, verify, or access"
                    )
                options["environment"] = {**env, "action": action}
            else:
                self.invalid(f"{where}:environment config should be a hash or a string")
        if (
            "interruptible" in cfg
            and "interruptible" not in options
            and isinstance(cfg["interruptible"], bool)
        ):
            options["interruptible"] = cfg["interruptible"]

    def _image(self, value: Any, where: str, *, service: bool = False) -> dict[str, Any] | None:
        if isinstance(value, str):
            return {"name": value}
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            self.invalid(f"{where} config should be a hash or a string")
            return None
        known = {"name", "entrypoint", "pull_policy", "docker", "kubernetes", "ports"}
        if service:
            known |= {"alias", "command", "variables"}
        unknown = [k for k in value if k not in known]
        if unknown:
            self.invalid(f"{where} config contains unknown keys: {', '.join(unknown)}")
        out: dict[str, Any] = {"name": value["name"]}
        for key in ("entrypoint", "command"):
            if key in value:
                if not _strings(value[key]):
                    self.invalid(f"{where} {key} config should be an array of strings")
                else:
                    out[key] = list(value[key])
        if "pull_policy" in value:
            policy = value["pull_policy"]
            policy = [policy] if isinstance(policy, str) else policy
            if not _strings(policy) or any(p not in ("always", "never", "if-not-present") for p in policy):
                self.invalid(f"{where}:pull_policy config should be one of: always, never, if-not-present")
            else:
                out["pull_policy"] = policy
        if "alias" in value:
            out["alias"] = _str(value["alias"])
        if "variables" in value:
            found = self._variables(value["variables"], f"{where}:variables", ())
            out["variables"] = [{"key": k, "value": v["value"]} for k, v in found.items()]
        for key in ("docker", "kubernetes", "ports"):
            if key in value:
                out[key] = value[key]
        return out

    def _artifacts(self, value: Any, where: str) -> list[dict[str, Any]]:
        if not isinstance(value, dict):
            self.invalid(f"{where} config should be a hash")
            return []
        unknown = [k for k in value if k not in ARTIFACT_KEYS]
        if unknown:
            self.invalid(f"{where} config contains unknown keys: {', '.join(unknown)}")
        for key in ("paths", "exclude"):
            if key in value and not _strings(value[key]):
                self.invalid(f"{where} {key} should be an array of strings")
                return []
        when = value.get("when", "on_success")
        if when not in ("on_success", "on_failure", "always"):
            self.invalid(f"{where} when should be on_success, on_failure or always")
        expire_in = value.get("expire_in")
        if expire_in is not None and expire_in != "never" and durations.parse(expire_in) is None:
            self.invalid(f"{where} expire in should be a duration")
        untracked = value.get("untracked", False)
        if not isinstance(untracked, bool):
            self.invalid(f"{where} untracked should be a boolean value")
            untracked = False
        out: list[dict[str, Any]] = []
        if value.get("paths") or untracked:
            archive: dict[str, Any] = {
                "name": _str(value["name"]) if value.get("name") is not None else None,
                "untracked": untracked,
                "paths": list(value.get("paths") or []),
                "when": when,
                "expire_in": _str(expire_in) if expire_in is not None else None,
                "artifact_type": "archive",
                "artifact_format": "zip",
            }
            if value.get("exclude"):
                archive["exclude"] = list(value["exclude"])
            if value.get("expose_as") is not None:
                archive["expose_as"] = _str(value["expose_as"])
            out.append(archive)
        reports = value.get("reports")
        if reports is not None:
            if not isinstance(reports, dict):
                self.invalid(f"{where}:reports config should be a hash")
                return out
            for given_kind, given in reports.items():
                kind, paths = given_kind, given
                if kind == "coverage_report":
                    if not isinstance(given, dict) or given.get("coverage_format") not in (
                        "cobertura",
                        "jacoco",
                    ):
                        self.invalid(f"{where}:reports coverage report should be a hash")
                        continue
                    kind, paths = given["coverage_format"], given.get("path")
                if kind not in REPORTS:
                    self.invalid(f"{where}:reports config contains unknown keys: {kind}")
                    continue
                if isinstance(paths, str):
                    paths = [paths]
                if not _strings(paths):
                    self.invalid(f"{where}:reports {kind} should be an array of strings or a string")
                    continue
                fmt, filename = REPORTS[kind]
                out.append(
                    {
                        "name": filename,
                        "untracked": False,
                        "paths": list(paths),
                        "when": "always",
                        "expire_in": _str(expire_in) if expire_in is not None else None,
                        "artifact_type": kind,
                        "artifact_format": fmt,
                    }
                )
        return out

    def _cache(self, value: Any, where: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.invalid(f"{where} config should be a hash")
            return None
        unknown = [k for k in value if k not in CACHE_KEYS]
        if unknown:
            self.invalid(f"{where} config contains unknown keys: {', '.join(unknown)}")
        key = value.get("key", "default")
        if isinstance(key, dict):
            files = key.get("files")
            if not _strings(files) or not 1 <= len(files) <= 2:
                self.invalid(f"{where}:key:files config has to be an array of one or two strings")
                return None
            key = self._files_key(files, key.get("prefix"))
        elif isinstance(key, str | int | float) and not isinstance(key, bool):
            key = _str(key)
            if "/" in key or key in (".", "..") or "%2f" in key.lower() or "%2e" in key.lower():
                self.invalid(f'{where}:key config cannot contain the "/" character')
                return None
        else:
            self.invalid(f"{where}:key config should be a hash, a string or a symbol")
            return None
        policy = value.get("policy", "pull-push")
        if not isinstance(policy, str) or ("$" not in policy and policy not in ("pull", "push", "pull-push")):
            self.invalid(f"{where} policy should be pull-push, push, or pull")
        when = value.get("when", "on_success")
        if when not in ("on_success", "on_failure", "always"):
            self.invalid(f"{where} when should be on_success, on_failure or always")
        paths = value.get("paths", [])
        fallback = value.get("fallback_keys", [])
        if not _strings(paths) or not _strings(fallback):
            self.invalid(f"{where} paths should be an array of strings")
            return None
        out = {
            "key": key,
            "untracked": bool(value.get("untracked", False)),
            "paths": list(paths),
            "policy": policy,
            "when": when,
            "fallback_keys": list(fallback),
        }
        if value.get("unprotect"):
            out["unprotect"] = True
        return out

    def _files_key(self, files: list[str], prefix: Any) -> str:
        """`key: {files}`: a digest of those files at the commit ("default" when none exist)."""
        digest = hashlib.sha1(usedforsecurity=False)
        found = False
        for path in files:
            text = self.ctx.read_file(path.lstrip("/"))
            if text is not None:
                found = True
                digest.update(path.encode() + b"\0" + text.encode("utf-8", "surrogatepass"))
        value = digest.hexdigest() if found else "default"
        return f"{_str(prefix)}-{value}" if prefix is not None else value

    def _retry(self, value: Any, where: str) -> dict[str, Any] | None:
        if isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value <= 2:
                self.invalid(
                    f"{where} config must be less than or equal to 2"
                    if value > 2
                    else f"{where} config must be greater than or equal to 0"
                )
                return None
            return {"max": value, "when": ["always"]}
        if not isinstance(value, dict):
            self.invalid(f"{where} config has to be either an integer or a hash")
            return None
        unknown = [k for k in value if k not in ("max", "when", "exit_codes")]
        if unknown:
            self.invalid(f"{where} config contains unknown keys: {', '.join(unknown)}")
        max_ = value.get("max", 0)
        if not isinstance(max_, int) or isinstance(max_, bool) or not 0 <= max_ <= 2:
            self.invalid(f"{where} max config must be less than or equal to 2")
            return None
        when = value.get("when", ["always"])
        when = [when] if isinstance(when, str) else when
        if not _strings(when) or any(w not in RETRY_WHEN for w in when):
            self.invalid(
                f"{where} when contains unknown values: {', '.join(str(w) for w in (when or []) if w not in RETRY_WHEN)}"
            )
            return None
        out: dict[str, Any] = {"max": max_, "when": list(when)}
        if "exit_codes" in value:
            codes = value["exit_codes"]
            codes = [codes] if isinstance(codes, int) and not isinstance(codes, bool) else codes
            if not isinstance(codes, list) or not all(
                isinstance(c, int) and not isinstance(c, bool) for c in codes
            ):
                self.invalid(f"{where} exit_codes should be an array of integers or an integer")
                return None
            out["exit_codes"] = list(codes)
        return out

    def _trigger(self, value: Any, where: str) -> dict[str, Any]:
        if isinstance(value, str):
            return {"project": value}
        if isinstance(value, dict):
            known = {"project", "branch", "strategy", "forward", "include", "inputs"}
            unknown = [k for k in value if k not in known]
            if unknown:
                self.invalid(f"{where}:trigger config contains unknown keys: {', '.join(unknown)}")
            if "project" not in value and "include" not in value:
                self.invalid(f"{where}:trigger config should contain either project or include")
            return dict(value)
        self.invalid(f"{where}:trigger config should be a hash or a string")
        return {}

    # ---------------------------------------------------------------- parallel and needs

    def _parallel(self, job: _Job) -> None:
        """The job's instances: (name, parallel option, matrix variables)."""
        spec = job.parallel
        job.instances = [(job.name, {}, {})]
        if spec is None:
            return
        where = f"jobs:{job.name}:parallel"
        if isinstance(spec, int) and not isinstance(spec, bool):
            if not 1 <= spec <= MAX_PARALLEL:
                self.invalid(
                    f"{where} config must be less than or equal to {MAX_PARALLEL}"
                    if spec > 1
                    else f"{where} config must be greater than or equal to 1"
                )
                return
            job.instances = [
                (f"{job.name} {i}/{spec}", {"number": i, "total": spec}, {}) for i in range(1, spec + 1)
            ]
            return
        if not isinstance(spec, dict) or set(spec) != {"matrix"} or not isinstance(spec["matrix"], list):
            self.invalid(f"{where} should be an integer or a hash")
            return
        combos: list[dict[str, str]] = []
        for entry in spec["matrix"]:
            if not isinstance(entry, dict) or not entry:
                self.invalid(f"{where}:matrix config should be an array of hashes")
                return
            keys, values = [], []
            for key, raw in entry.items():
                items = raw if isinstance(raw, list) else [raw]
                if not items or not all(
                    isinstance(v, str | int | float) and not isinstance(v, bool) for v in items
                ):
                    self.invalid(f"{where}:matrix config should be an array of hashes")
                    return
                keys.append(key)
                values.append([_str(v) for v in items])
            total = 1
            for v in values:
                total *= len(v)
            if len(combos) + total > MAX_PARALLEL:
                self.invalid(f"{where}:matrix config generates too many jobs (maximum is {MAX_PARALLEL})")
                return
            combos.extend(dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values))
        total = len(combos)
        job.instances = [
            (f"{job.name}: [{', '.join(c.values())}]", {"number": i, "total": total, "matrix": c}, c)
            for i, c in enumerate(combos, 1)
        ]

    def _check_needs(self, jobs: list[_Job], stages: list[str]) -> None:
        by_name = {j.name: j for j in jobs}
        graph: dict[str, list[str]] = {}
        for job in jobs:
            needed: list[str] = []
            for source in [job.needs_raw or []] + [
                self._needs(r["needs"], "") or [] for r in (job.rules or []) if "needs" in r
            ]:
                for need in source:
                    other = by_name.get(need["job"])
                    if other is None:
                        if not need["optional"]:
                            self.err(f"{job.name} job: undefined need: {need['job']}")
                        continue
                    if stages.index(other.stage) > stages.index(job.stage):
                        self.err(
                            f"{job.name} job: need {need['job']} is not defined in current or prior stages"
                        )
                    needed.append(other.name)
            graph[job.name] = needed
            for dep in job.options.get("dependencies") or []:
                other = by_name.get(dep)
                if other is None:
                    self.err(f"{job.name} job: undefined dependency: {dep}")
                elif stages.index(other.stage) > stages.index(job.stage):
                    self.err(f"{job.name} job: dependency {dep} is not defined in current or prior stages")
        if not self.errors and _has_cycle(graph):
            self.err("The pipeline has circular dependencies")

    # ---------------------------------------------------------------------- the plan

    def _build(
        self,
        jobs: list[_Job],
        stages: list[str],
        global_vars: dict[str, dict[str, Any]],
        workflow_vars: dict[str, dict[str, Any]],
    ) -> None:
        chosen: list[tuple[_Job, JobPlan, list[dict[str, Any]] | None]] = []
        for job in jobs:
            decided = self._decide(job, workflow_vars)
            if decided is None:
                continue
            when, start_in, allow_failure, rule_vars, needs_raw, interruptible = decided
            for inst_name, parallel, matrix in job.instances:
                variables = dict(job.variables)
                variables.update({k: {"value": v} for k, v in matrix.items()})
                variables.update(rule_vars)
                options = dict(job.options)
                if parallel:
                    options["parallel"] = parallel
                if interruptible is not None:
                    options["interruptible"] = interruptible
                seen = {**{k: v["value"] for k, v in variables.items()}, **self.ctx.variables}
                tags = [expand(t, seen) if not self.static else t for t in job.tags]
                plan_job = JobPlan(
                    name=inst_name,
                    stage=job.stage,
                    stage_idx=0,
                    type="bridge" if job.bridge else "build",
                    when=when,
                    start_in=start_in,
                    allow_failure=allow_failure,
                    tags=tags,
                    variables=[_var_entry(k, v) for k, v in variables.items()],
                    options=options,
                )
                plan_job.only, plan_job.except_ = job.only, job.except_
                chosen.append((job, plan_job, needs_raw))
        present = {p.name for _, p, _ in chosen}
        instances = {j.name: j.instances for j in jobs}
        for job, plan_job, needs_raw in chosen:
            if needs_raw is not None:
                plan_job.needs = self._resolve_needs(job, needs_raw, instances, present)
            deps = job.options.get("dependencies")
            if deps is not None:
                plan_job.options["dependencies"] = [
                    name for dep in deps for name, _, _ in instances.get(dep, []) if name in present
                ]
            elif plan_job.needs is not None:
                # GitLab passes the artifacts of the needed jobs only (those with artifacts: true).
                plan_job.options["dependencies"] = [n.job for n in plan_job.needs if n.artifacts]
        if self.errors:
            return
        order = {s: i for i, s in enumerate(stages)}
        chosen.sort(key=lambda c: (order[c[1].stage], c[0].order))
        used = [s for s in stages if any(p.stage == s for _, p, _ in chosen)]
        index = {s: i for i, s in enumerate(used)}
        for _, plan_job, _ in chosen:
            plan_job.stage_idx = index[plan_job.stage]
        self.plan.stages = used
        self.plan.jobs = [p for _, p, _ in chosen]

    def _resolve_needs(
        self,
        job: _Job,
        needs_raw: list[dict[str, Any]],
        instances: dict[str, list[tuple[str, dict[str, Any], dict[str, str]]]],
        present: set[str],
    ) -> list[Need]:
        """A job's needs as instances in this pipeline; a missing one is an error unless
        optional."""
        needs: list[Need] = []
        for need in needs_raw:
            found = instances.get(need["job"], [])
            if "matrix" in need:
                found = [
                    i
                    for i in found
                    if any(all(i[2].get(k) in vs for k, vs in want.items()) for want in need["matrix"])
                ]
            live = [name for name, _, _ in found if name in present]
            if not live:
                if not need["optional"] and not self.static:
                    self.err(
                        f"'{job.name}' job needs '{need['job']}' job, but '{need['job']}' does not exist "
                        "in the pipeline. This might be because of the only, except, or rules keywords. "
                        "To need a job that sometimes does not exist in the pipeline, use needs:optional."
                    )
                continue
            needs.extend(Need(job=n, artifacts=need["artifacts"], optional=need["optional"]) for n in live)
        return needs

    def _decide(
        self, job: _Job, workflow_vars: dict[str, dict[str, Any]]
    ) -> (
        tuple[str, int | None, bool, dict[str, dict[str, Any]], list[dict[str, Any]] | None, bool | None]
        | None
    ):
        """(when, start_in, allow_failure, rule variables, needs, interruptible), or None when
        the job is not in this pipeline."""
        base = (job.when, job.start_in, job.allow_failure, {}, job.needs_raw, None)
        if self.static:
            return base
        seen = self._eval_vars(workflow_vars, job.variables)
        if job.rules is not None:
            where = f"jobs:{job.name}:rules:rule"
            for rule in job.rules:
                if rule_matches(rule, self.ctx, seen, where):
                    when = rule.get("when", job.when)
                    if when == "never":
                        return None
                    start_in = (
                        durations.parse(rule["start_in"])
                        if when == "delayed" and "start_in" in rule
                        else job.start_in
                    )
                    # A rule's own allow_failure wins; otherwise the job's (manual at job level: true).
                    allow_failure = rule.get("allow_failure", job.allow_failure)
                    rule_vars = self._variables(rule.get("variables"), f"{where}:variables")
                    needs = self._needs(rule["needs"], where) if "needs" in rule else job.needs_raw
                    interruptible = (
                        rule.get("interruptible") if isinstance(rule.get("interruptible"), bool) else None
                    )
                    return when, start_in, allow_failure, rule_vars, needs, interruptible
            return None
        if job.only is not None and not all(self._policy_holds(job.only, k, seen) for k in job.only):
            return None
        if job.except_ is not None and any(self._policy_holds(job.except_, k, seen) for k in job.except_):
            return None
        return base

    def _policy_holds(self, policy: dict[str, Any], kind: str, variables: Mapping[str, str]) -> bool:
        if kind == "refs":
            return any(self._ref_matches(p) for p in policy["refs"])
        if kind == "variables":
            return any(expressions.evaluate(e, variables) for e in policy["variables"])
        if kind == "changes":
            if self.ctx.changed_paths is None:
                return True
            wanted = [expand(p, variables) for p in policy["changes"]]
            return any_match(wanted, self.ctx.changed_paths())
        return True

    def _ref_matches(self, pattern: str) -> bool:
        ctx = self.ctx
        if "@" in pattern and not pattern.startswith("/"):
            pattern, _, project = pattern.rpartition("@")
            if project != ctx.variables.get("CI_PROJECT_PATH"):
                return False
        source = ctx.source
        mr = source in ("merge_request_event", "external_pull_request_event")
        if pattern == "tags" and ctx.tag:
            return True
        if pattern == "branches" and not ctx.tag and not mr:
            return True
        name = {
            "merge_request_event": "merge_request",
            "external_pull_request_event": "external_pull_request",
        }.get(source, source)
        if pattern in (name, _plural(name)):
            return True
        if mr:
            return False
        if len(pattern) >= 2 and pattern.startswith("/"):
            try:
                return expressions.compile_pattern(pattern).found_in(ctx.ref)
            except expressions.ExpressionError:
                return pattern == ctx.ref
        return pattern == ctx.ref


def _plural(name: str) -> str:
    if name == "push":
        return "pushes"
    return name + "s"


def _var_entry(key: str, value: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"key": key, "value": value["value"]}
    if "raw" in value:
        entry["raw"] = value["raw"]
    return entry


def _alphanumeric(value: Any) -> bool:
    """A value GitLab takes as a plain variable value (a string or a number)."""
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _has_cycle(graph: dict[str, list[str]]) -> bool:
    """Whether following needs ever comes back to a job (iterative depth-first search)."""
    state: dict[str, int] = {}
    for start in graph:
        if start in state:
            continue
        stack = [(start, iter(graph.get(start, [])))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                return True
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(graph.get(child, []))))
    return False


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _dump(config: dict[str, Any]) -> str:
    return yaml.dump(
        strip_references(config), Dumper=_Dumper, sort_keys=False, allow_unicode=True, explicit_start=True
    )


def plan_pipeline(text: str, ctx: Context, *, static: bool = False) -> PipelinePlan:
    """The pipeline a configuration makes in `ctx`. Never raises for a bad configuration: its
    problems are `plan.errors`, in GitLab's words. `static` reads every job as the lint
    endpoint's static check does (no rules, only/except or workflow evaluated)."""
    plan = PipelinePlan()
    reader = Reader(ctx, plan, static)
    try:
        reader.run(text)
    except ConfigError as err:
        reader.err(str(err))
    except (RecursionError, MemoryError):
        reader.err(TOO_BIG)
    if reader.errors:
        plan.errors = reader.errors
        plan.jobs = []
        plan.stages = []
    return plan
