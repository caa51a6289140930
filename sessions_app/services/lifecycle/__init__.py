"""The lifecycle of a prompt: the one owner of every state a turn passes through.

A prompt generation, its retry loop (RetryLoop), its banner (RetryNotice) and the state the
session and its task show change here and nowhere else; a test scans the package for writes of
them elsewhere. The parts:

- ``generation.py``: the generation's moves (``TRANSITIONS``) and the hooks entering and leaving
  each state runs (``ON_ENTER``, ``ON_LEAVE``), the session state each one shows (``SESSION_OF``)
  and how an ending generation ends its retry loop (``LOOP_END_OF``);
- ``session_state.py``: the session's moves (``SESSION_MOVES``), its declared refreshes (the
  place in line, the needs-attention card) and the task status projected from its sessions;
- ``retry_wait.py``: the retry banner shown and retired, a retry loop ended;
- ``queued.py``: the queued state's place in line, the holds and the release of a person's
  next held prompt.

Adding a state (say, waiting for an approval) is its value in ``PromptGeneration.State`` (and
in ``Session.State`` when the session shows it; a migration for the choices), then one entry in
each table: its moves in
``TRANSITIONS`` (and the states that may move to it), its hooks in ``ON_ENTER`` / ``ON_LEAVE``
(a hook is a function of the ``Move``), what the session shows in ``SESSION_OF``, and, when the
session shows a new state, its moves in ``SESSION_MOVES``; then a public function here that
makes the move with ``_move`` and the test's list of allowed moves.
"""
