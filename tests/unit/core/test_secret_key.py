"""The kept SECRET_KEY: one key per state directory, however many processes start at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.exceptions import ImproperlyConfigured

from kandev_web.secret_key import secret_key, secret_key_kept


def test_processes_starting_together_all_get_the_first_key_written(tmp_path):
    with ThreadPoolExecutor(max_workers=8) as pool:
        keys = set(pool.map(lambda _: secret_key_kept(state_dir=tmp_path), range(32)))

    assert len(keys) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]  # no drafts left behind


def test_the_environment_wins_in_its_order(tmp_path):
    both = {"KANDEV_SECRET_KEY": "from-kandev", "SECRET_KEY": "from-django"}
    assert secret_key(env=both, state_dir=tmp_path) == "from-kandev"
    assert secret_key(env={"SECRET_KEY": "from-django"}, state_dir=tmp_path) == "from-django"
    assert not any(tmp_path.iterdir())


def test_a_state_dir_that_cannot_be_created_says_what_to_set(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(ImproperlyConfigured, match="Set KANDEV_SECRET_KEY"):
        secret_key_kept(state_dir=blocker / "state")
