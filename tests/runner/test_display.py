"""The progress display: plain lines off a terminal, a live table on one."""

from __future__ import annotations

import io

from kiln.runner.display import LiveDisplay, PlainDisplay

JOB = {"id": 9, "job_info": {"project_full_path": "g/[bold]p", "name": "build", "stage": "test"}}


def test_plain_lines_say_what_started_and_how_it_ended():
    out = io.StringIO()
    display = PlainDisplay(out)
    display.job_started(0, JOB)
    display.job_finished(0, JOB, "failed", "script_failure")
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("job 9 started: g/[bold]p test/build (slot 0)")
    assert lines[1].endswith("job 9 finished: failed (script_failure)")


def test_the_live_table_shows_running_jobs_and_their_last_line():
    display = LiveDisplay(2)
    display.console.file = io.StringIO()
    try:
        display.job_started(1, JOB)
        display.job_output(1, "compiling")
        table = display._table()
        assert table.row_count == 2
        assert display.slots[1].last_line == "compiling"
        display.job_finished(1, JOB, "success", None)
        assert display.slots == {}
        assert display.done == 1
    finally:
        display.close()
