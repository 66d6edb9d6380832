"""The runner against the runner protocol: jobs taken, logs streamed, states reported."""

from __future__ import annotations

import io
import threading
import zipfile
from pathlib import Path

from kiln.runner.run import RunnerProcess
from tests.runner.conftest import FAST, run_jobs
from tests.runner.protocol_server import crc32_of, wait_until


def test_verifies_on_start_then_requests_jobs_with_its_identity(server, config):
    server.add_job(["true"])
    run_jobs(config)
    calls = [(method, path) for method, path, _h, _b in server.requests]
    assert calls[0] == ("POST", "runners/verify")
    request = next(body for method, path, _h, body in server.requests if path == "jobs/request")
    assert request["token"] == config.runners[0].token
    assert request["system_id"] == config.system_id
    assert request["info"]["name"] == "kiln-runner"
    assert request["info"]["executor"] == "shell"
    features = request["info"]["features"]
    for flag in ("variables", "artifacts", "cache", "masking", "refspecs", "trace_checksum", "cancelable"):
        assert features[flag] is True


def test_two_script_lines_output_arrives_in_the_trace(server, config):
    job = server.add_job(["echo first line", "echo second line"])
    run_jobs(config)
    server.wait(job)
    text = job.text()
    assert "$ echo first line" in text
    assert "first line\n" in text
    assert "second line\n" in text
    assert text.index("first line") < text.index("second line")
    assert job.state == "success"
    assert job.failure_reason is None
    assert "Job succeeded" in text


def test_the_final_update_carries_the_trace_checksum_and_size(server, config):
    job = server.add_job(["echo checked"])
    run_jobs(config)
    server.wait(job)
    assert job.output == {"checksum": crc32_of(bytes(job.trace)), "bytesize": len(job.trace)}


def test_content_range_end_is_inclusive(server, config):
    job = server.add_job(["echo hello"])
    run_jobs(config)
    server.wait(job)
    first = job.content_ranges[0]
    start, end = (int(x) for x in first.split("-"))
    assert start == 0
    patch = next(b for m, p, _h, b in server.requests if m == "PATCH")
    assert end == len(patch) - 1


def test_a_failing_script_fails_the_job_with_its_exit_code(server, config):
    job = server.add_job(["echo before", "exit 3", "echo never"])
    run_jobs(config)
    server.wait(job)
    assert job.state == "failed"
    assert job.failure_reason == "script_failure"
    assert job.exit_code == 3
    assert "never\n" not in job.text()
    assert "ERROR: Job failed: exit code 3" in job.text()


def test_after_script_runs_after_a_failure_and_knows_the_status(server, config):
    job = server.add_job(["false"], after_script=['echo "after: $CI_JOB_STATUS"'])
    run_jobs(config)
    server.wait(job)
    assert "after: failed" in job.text()
    assert job.state == "failed"


def test_a_job_longer_than_its_timeout_is_killed(server, config):
    job = server.add_job(["echo started", "sleep 30", "echo never"], timeout=1)
    run_jobs(config)
    server.wait(job)
    assert job.state == "failed"
    assert job.failure_reason == "job_execution_timeout"
    assert "$ echo never" not in job.text()
    assert "execution took longer than 1s seconds" in job.text()


def test_a_job_canceled_on_the_server_is_stopped(server, config):
    job = server.add_job(["echo ready-to-cancel", "sleep 30", "echo never"], cancel_on=b"ready-to-cancel\n")
    results = run_jobs(config)
    server.wait(job)
    assert "never\n" not in job.text()
    [(_id, outcome)] = results.outcomes
    assert outcome.canceled


def test_a_graceful_cancel_still_runs_after_script(server, config):
    job = server.add_job(
        ["echo ready-to-cancel", "sleep 30", "echo never"],
        after_script=['echo "after: $CI_JOB_STATUS"'],
        cancel_gracefully_on=b"ready-to-cancel\n",
    )
    results = run_jobs(config)
    server.wait(job)
    assert "never\n" not in job.text()
    assert "after: canceled" in job.text()
    [(_id, outcome)] = results.outcomes
    assert outcome.canceled


def test_masked_values_never_reach_the_trace(server, config):
    secret = "s3cr3t-value-123"
    job = server.add_job(
        ['echo "the value is $SECRET"', 'printf "%s" "$SECRET" | fold -w 3'],
        variables=[{"key": "SECRET", "value": secret, "public": False, "masked": True}],
    )
    run_jobs(config)
    server.wait(job)
    assert secret not in job.text()
    assert "the value is [MASKED]" in job.text()
    assert job.token not in job.text()


def test_a_range_mismatch_resumes_where_the_server_says(server, config):
    job = server.add_job(
        ["echo one", "sleep 0.3", "echo two", "sleep 0.3", "echo three"], forget_first_chunk=True
    )
    run_jobs(config)
    server.wait(job)
    text = job.text()
    assert text.startswith("Running with kiln-runner")
    for word in ("one\n", "two\n", "three\n"):
        assert word in text
    assert any(r.startswith("0-") for r in job.content_ranges[1:])
    assert job.output == {"checksum": crc32_of(bytes(job.trace)), "bytesize": len(job.trace)}


def test_accepted_updates_are_repeated_until_done(server, config):
    job = server.add_job(["true"], accepted_before_done=2)
    run_jobs(config)
    server.wait(job)
    puts = [b for m, p, _h, b in server.requests if m == "PUT" and b.get("state") != "running"]
    assert len(puts) == 3
    assert job.state == "success"


def test_variables_predefined_and_file_type(server, config, tmp_path):
    job = server.add_job(
        [
            'echo "dir=$CI_PROJECT_DIR"',
            'echo "server=$CI_SERVER concurrent=$CI_CONCURRENT_ID"',
            'echo "greeting=$GREETING"',
            'echo "file says $(cat "$CONFIG_FILE")"',
            'echo "raw=$RAW"',
            "pwd",
        ],
        variables=[
            {"key": "NAME", "value": "world", "public": True, "masked": False},
            {"key": "GREETING", "value": "hello $NAME", "public": True, "masked": False},
            {"key": "RAW", "value": "keep $NAME", "public": True, "masked": False, "raw": True},
            {"key": "CONFIG_FILE", "value": "from a file", "public": False, "masked": False, "file": True},
        ],
    )
    run_jobs(config)
    server.wait(job)
    text = job.text()
    assert "greeting=hello world" in text
    assert "raw=keep $NAME" in text
    assert "file says from a file" in text
    assert "server=yes concurrent=0" in text
    project_dir = text.split("\ndir=")[1].split("\n")[0]
    assert project_dir.endswith("/group/project")
    assert project_dir.startswith(str(tmp_path / "builds"))


def test_every_job_gets_a_fresh_folder(server, config):
    first = server.add_job(["test ! -e left-behind", "touch left-behind"])
    second = server.add_job(["test ! -e left-behind"])
    run_jobs(config)
    run_jobs(config)
    assert server.wait(first).state == "success"
    assert server.wait(second).state == "success"


def test_artifacts_are_uploaded_then_downloaded_by_a_dependent_job(server, config):
    producer = server.add_job(
        ["mkdir -p out/sub", "echo built > out/app.txt", "echo deep > out/sub/x.log", "echo skip > out/skip.tmp"],
        artifacts=[
            {"name": "build", "paths": ["out/"], "exclude": ["out/*.tmp"], "when": "on_success",
             "artifact_type": "archive", "artifact_format": "zip", "expire_in": "1 day"},
        ],
    )  # fmt: skip
    run_jobs(config)
    server.wait(producer)
    [(params, filename, data)] = producer.artifacts
    assert params == {"artifact_format": "zip", "artifact_type": "archive", "expire_in": "1 day"}
    assert filename == "build.zip"
    assert sorted(zipfile.ZipFile(io.BytesIO(data)).namelist()) == ["out/app.txt", "out/sub/x.log"]

    consumer = server.add_job(["cat out/app.txt", "cat out/sub/x.log"], dependencies=[producer])
    run_jobs(config)
    server.wait(consumer)
    assert consumer.state == "success"
    assert "built\n" in consumer.text()
    assert "deep\n" in consumer.text()
    download = next(
        h for m, p, h, _b in server.requests if m == "GET" and p == f"jobs/{producer.id}/artifacts"
    )
    assert download["JOB-TOKEN"] == consumer.token


def test_a_dependency_without_artifacts_is_skipped(server, config):
    producer = server.add_job(["true"])
    run_jobs(config)
    server.wait(producer)
    consumer = server.add_job(["true"], dependencies=[producer])
    assert "artifacts_file" not in consumer.payload["dependencies"][0]
    run_jobs(config)
    assert server.wait(consumer).state == "success"
    assert not any(m == "GET" for m, _p, _h, _b in server.requests)


def test_too_large_artifacts_fail_the_job_with_a_clear_line(server, config):
    server.artifact_limit = 10
    job = server.add_job(
        ["head -c 5000 /dev/urandom > big.bin"],
        artifacts=[{"paths": ["big.bin"], "artifact_type": "archive", "artifact_format": "zip"}],
    )
    run_jobs(config)
    server.wait(job)
    assert job.state == "failed"
    assert job.failure_reason == "script_failure"
    assert "too large archive" in job.text()


def test_artifacts_on_failure_only_when_asked(server, config):
    job = server.add_job(
        ["echo log > report.txt", "exit 1"],
        artifacts=[
            {"name": "a", "paths": ["report.txt"], "when": "on_success", "artifact_type": "archive"},
            {"name": "b", "paths": ["report.txt"], "when": "on_failure", "artifact_type": "archive"},
        ],
    )
    run_jobs(config)
    server.wait(job)
    assert [name for _p, name, _d in job.artifacts] == ["b.zip"]


def test_cache_is_reused_by_a_later_job(server, config):
    cache = [{"key": "deps-v1", "paths": ["vendor/"], "policy": "pull-push", "when": "on_success"}]
    first = server.add_job(
        ["test ! -e vendor/lib.txt", "mkdir -p vendor", "echo cached > vendor/lib.txt"], cache=cache
    )
    run_jobs(config)
    assert server.wait(first).state == "success"
    second = server.add_job(["cat vendor/lib.txt"], cache=cache)
    run_jobs(config)
    assert server.wait(second).state == "success"
    assert "cached\n" in second.text()


def test_a_pull_only_cache_is_never_written(server, config):
    cache = [{"key": "ro", "paths": ["vendor/"], "policy": "pull"}]
    first = server.add_job(["mkdir -p vendor", "echo x > vendor/a"], cache=cache)
    run_jobs(config)
    server.wait(first)
    assert not any((Path(config.cache_dir)).rglob("cache.zip"))


def test_the_cache_falls_back_to_other_keys(server, config):
    push = server.add_job(["mkdir -p v", "echo main > v/a"], cache=[{"key": "main", "paths": ["v/"]}])
    run_jobs(config)
    server.wait(push)
    pull = server.add_job(
        ["cat v/a"], cache=[{"key": "feature", "paths": ["v/"], "policy": "pull", "fallback_keys": ["main"]}]
    )
    run_jobs(config)
    assert "main\n" in server.wait(pull).text()


def test_two_jobs_run_at_once_with_concurrency_two(server, config):
    # Each job waits for a file the other makes beside the builds folder: both finish only
    # if they run at the same time.
    meeting = Path(config.builds_dir).parent
    first = server.add_job(
        [
            'echo "slot=$CI_CONCURRENT_ID"',
            f"touch {meeting}/a",
            f"while [ ! -e {meeting}/b ]; do sleep 0.05; done",
        ],
        timeout=20,
    )
    second = server.add_job(
        [
            'echo "slot=$CI_CONCURRENT_ID"',
            f"touch {meeting}/b",
            f"while [ ! -e {meeting}/a ]; do sleep 0.05; done",
        ],
        timeout=20,
    )
    process = RunnerProcess(config, concurrent=2, poll_interval=0.02, settings=FAST)
    thread = threading.Thread(target=process.run)
    thread.start()
    try:
        server.wait(first, 20)
        server.wait(second, 20)
    finally:
        process.stop()
        thread.join(10)
    assert first.state == "success", first.text()
    assert second.state == "success", second.text()
    slots = {job.text().split("\nslot=")[1][0] for job in (first, second)}
    assert slots == {"0", "1"}


def test_a_refused_token_stops_polling(server, config):
    server.runners.clear()
    process = RunnerProcess(config, poll_interval=0.02, settings=FAST)
    results = process.run()
    assert results.outcomes == []
    assert not any(p == "jobs/request" for _m, p, _h, _b in server.requests)


def test_graceful_stop_lets_the_running_job_finish(server, config):
    job = server.add_job(["echo started-job", "sleep 0.5", "echo finished-job"])
    process = RunnerProcess(config, poll_interval=0.02, settings=FAST)
    thread = threading.Thread(target=process.run)
    thread.start()
    wait_until(lambda: b"started-job\n" in job.trace)
    process.stop()
    thread.join(10)
    assert not thread.is_alive()
    assert job.state == "success"
    assert "finished-job" in job.text()


def test_a_second_stop_aborts_running_jobs(server, config):
    job = server.add_job(["echo started-job", "sleep 30"])
    process = RunnerProcess(config, poll_interval=0.02, settings=FAST)
    thread = threading.Thread(target=process.run)
    thread.start()
    wait_until(lambda: b"started-job\n" in job.trace)
    process.stop()
    process.stop()
    thread.join(10)
    assert not thread.is_alive()
    server.wait(job)
    assert job.state == "failed"
    assert job.failure_reason == "runner_system_failure"


def test_a_silent_job_canceled_on_the_server_is_stopped_by_the_keepalive(server, config):
    job = server.add_job(["echo waiting", "sleep 30", "echo never"])
    process = RunnerProcess(config, once=True, poll_interval=0.02, settings=FAST)
    thread = threading.Thread(target=process.run)
    thread.start()
    wait_until(lambda: b"waiting\n" in job.trace)
    job.canceled = True
    thread.join(15)
    assert not thread.is_alive()
    [(_id, outcome)] = process.results.outcomes
    assert outcome.canceled
    touches = [b for m, _p, _h, b in server.requests if m == "PUT" and b.get("state") == "running"]
    assert touches


def test_the_server_sets_the_trace_interval(server, config):
    server.trace_interval = 1
    job = server.add_job(["echo a", "sleep 1.5", "echo b"])
    run_jobs(config)
    server.wait(job)
    # At 0.05 s there would be dozens of PATCHes; at the server's 1 s, a handful.
    assert len(job.content_ranges) < 10


def test_the_queue_version_is_echoed_back_and_empty_polls_wait(server, config):
    process = RunnerProcess(config, once=True, poll_interval=0.02, settings=FAST)
    thread = threading.Thread(target=process.run)
    thread.start()

    def polls() -> list[dict]:
        return [b for _m, p, _h, b in server.requests if p == "jobs/request"]

    wait_until(lambda: len(polls()) >= 2)
    job = server.add_job(["true"])
    thread.join(15)
    assert server.wait(job).state == "success"
    assert "last_update" not in polls()[0]
    assert polls()[1]["last_update"] == "1"
