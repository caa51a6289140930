"""What a person reads about a failed turn names no server internals."""

from __future__ import annotations

import inspect

from recovery import wording
from recovery.taxonomy import Code


def test_a_card_with_retries_turned_off_says_so_without_naming_a_setting():
    message = wording.exhausted_message(Code.PROVIDER_OVERLOADED, attempts=0)

    assert "retries are turned off" in message
    assert "KANDEV_" not in message


def test_no_sentence_in_the_wording_module_names_a_server_setting():
    # Settings are the operator's vocabulary (README, start-up errors), never a viewer's.
    assert "KANDEV_" not in inspect.getsource(wording)
