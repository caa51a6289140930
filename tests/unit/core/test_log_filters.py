"""Idle sweeps are quiet: the lines Celery writes for a periodic task that found nothing go to
DEBUG; a sweep that acted, a failure and every other task keep their INFO lines. Records are made
with Celery's own message formats, as its loggers make them."""

from __future__ import annotations

import logging

import pytest
from celery.app.trace import LOG_RECEIVED, LOG_SUCCESS

from kandev_web.logfilters import QuietPeriodicTasks

SWEEP = "ladder.sweep"


def record(logger: str, msg: str, args) -> logging.LogRecord:
    return logging.LogRecord(logger, logging.INFO, __file__, 1, msg, args, None)


def success(name: str, return_value: str) -> logging.LogRecord:
    args = {"id": "abc", "name": name, "return_value": return_value, "runtime": 0.01}
    return record("celery.app.trace", LOG_SUCCESS, args)


@pytest.fixture
def quiet():
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)
    yield QuietPeriodicTasks(task_names=[SWEEP])
    root.setLevel(level)


def test_an_idle_sweep_leaves_no_line_at_info(quiet):
    beat = record("celery.beat", "Scheduler: Sending due task %s (%s)", ("ladder-sweep", SWEEP))
    received = record("celery.worker.strategy", LOG_RECEIVED, {"id": "abc", "name": SWEEP})
    assert not quiet.filter(beat)
    assert not quiet.filter(received)
    assert not quiet.filter(success(SWEEP, "0"))
    assert beat.levelno == logging.DEBUG


def test_a_sweep_that_acted_keeps_its_line(quiet):
    line = success(SWEEP, "2")
    assert quiet.filter(line)
    assert line.levelno == logging.INFO
    assert "succeeded" in line.getMessage() and ": 2" in line.getMessage()


def test_prompts_keep_their_lines(quiet):
    name = "sessions_app.run_generation"
    assert quiet.filter(record("celery.worker.strategy", LOG_RECEIVED, {"id": "x", "name": name}))
    assert quiet.filter(success(name, "None"))


def test_with_debug_logging_on_the_idle_lines_show_at_debug(quiet):
    logging.getLogger().setLevel(logging.DEBUG)
    line = success(SWEEP, "0")
    assert quiet.filter(line)
    assert line.levelname == "DEBUG"
