"""`kiln runner register / verify / unregister / run` against the protocol server."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kiln.cli import app
from kiln.runner import config as runner_config

cli = CliRunner()


def invoke(*args: str) -> tuple[int, str]:
    result = cli.invoke(app, ["runner", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return tmp_path / "runner" / "config.json"


def test_register_with_a_registration_token_saves_the_runner(server, config_path):
    code, output = invoke(
        "register", "--url", server.url, "--token", server.registration_token,
        "--description", "ci box", "--tag-list", "linux, docker", "--no-locked", "--config", str(config_path),
    )  # fmt: skip
    assert code == 0, output
    saved = json.loads(config_path.read_text())
    [entry] = saved["runners"]
    assert entry["token"] in server.runners
    assert entry["origin"] == "registration"
    assert entry["description"] == "ci box"
    registration = next(b for m, p, _h, b in server.requests if p == "runners")
    assert registration["tag_list"] == "linux,docker"
    assert registration["run_untagged"] is False
    assert registration["locked"] is False
    assert registration["info"]["name"] == "kiln-runner"


def test_the_configuration_is_private(server, config_path):
    invoke(
        "register", "--url", server.url, "--token", server.registration_token, "--config", str(config_path)
    )
    assert stat.S_IMODE(config_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(config_path.parent.stat().st_mode) == 0o700


def test_untagged_jobs_are_taken_by_default_without_tags(server, config_path):
    invoke(
        "register", "--url", server.url, "--token", server.registration_token, "--config", str(config_path)
    )
    registration = next(b for m, p, _h, b in server.requests if p == "runners")
    assert registration["run_untagged"] is True


def test_a_refused_registration_token_saves_nothing(server, config_path):
    code, output = invoke("register", "--url", server.url, "--token", "wrong", "--config", str(config_path))
    assert code == 1
    assert "registration failed" in output
    assert not config_path.exists()


def test_an_authentication_token_is_verified_not_registered(server, config_path):
    token = server.add_runner()
    code, output = invoke("register", "--url", server.url, "--token", token, "--config", str(config_path))
    assert code == 0, output
    assert [p for _m, p, _h, _b in server.requests] == ["runners/verify"]
    [entry] = json.loads(config_path.read_text())["runners"]
    assert entry["origin"] == "authentication"
    assert entry["token"] == token


def test_a_refused_authentication_token_saves_nothing(server, config_path):
    code, _output = invoke(
        "register", "--url", server.url, "--token", "glrt-unknown", "--config", str(config_path)
    )
    assert code == 1
    assert not config_path.exists()


def test_an_unknown_executor_is_refused(server, config_path):
    code, _output = invoke(
        "register", "--url", server.url, "--token", "x", "--executor", "ssh", "--config", str(config_path)
    )
    assert code == 2
    assert server.requests == []


def test_verify_reports_and_deletes_refused_runners(server, config_path):
    invoke(
        "register", "--url", server.url, "--token", server.registration_token, "--config", str(config_path)
    )
    assert invoke("verify", "--config", str(config_path))[0] == 0
    server.runners.clear()
    code, output = invoke("verify", "--config", str(config_path))
    assert code == 1
    assert "refused" in output
    assert invoke("verify", "--delete", "--config", str(config_path))[0] == 0
    assert json.loads(config_path.read_text())["runners"] == []


def test_unregister_deletes_a_registered_runner(server, config_path):
    invoke(
        "register", "--url", server.url, "--token", server.registration_token, "--config", str(config_path)
    )
    code, output = invoke("unregister", "--config", str(config_path))
    assert code == 0, output
    assert server.runners == {}
    assert ("DELETE", "runners") in [(m, p) for m, p, _h, _b in server.requests]
    assert json.loads(config_path.read_text())["runners"] == []


def test_unregister_of_an_authentication_token_only_forgets_this_machine(server, config_path):
    token = server.add_runner()
    invoke("register", "--url", server.url, "--token", token, "--config", str(config_path))
    code, _output = invoke("unregister", "--all", "--config", str(config_path))
    assert code == 0
    delete = next(b for m, p, _h, b in server.requests if m == "DELETE")
    assert delete["system_id"].startswith("r_")
    assert token in server.runners


def test_run_once_takes_one_job(server, config_path, tmp_path):
    invoke(
        "register", "--url", server.url, "--token", server.registration_token, "--config", str(config_path),
        "--builds-dir", str(tmp_path / "b"), "--cache-dir", str(tmp_path / "c"),
    )  # fmt: skip
    job = server.add_job(["echo from-the-cli"])
    code, output = invoke("run", "--once", "--poll-interval", "0.1", "--config", str(config_path))
    assert code == 0, output
    assert server.wait(job).state == "success"
    assert "1 job(s), 0 failed" in output
    assert json.loads(config_path.read_text())["builds_dir"] == str(tmp_path / "b")


def test_run_without_a_configuration_says_so(tmp_path):
    code, output = invoke("run", "--config", str(tmp_path / "none.json"))
    assert code == 1
    assert "register a runner first" in output


def test_a_broken_configuration_is_reported(tmp_path):
    broken = tmp_path / "c.json"
    broken.write_text('{"runners": [{"url": "x"}]}')
    with pytest.raises(runner_config.ConfigError):
        runner_config.load(broken)
    code, _output = invoke("run", "--config", str(broken))
    assert code == 1
