"""The ACP replay fixture matrix: one JSON file per required gateway x case cell.

Each file (``<gateway>-<case>.json``) holds the frames an ACP agent sent after ``session/prompt``
(the last one is the prompt's response) and what both layers must make of them. The loader
rejects a corpus with a missing or doubly filled cell, equivalent frames within one case, a
classifying flag that disagrees with ``matrix.CLASSIFYING``, or a forbidden shape
(``forbidden.FORBIDDEN_SHAPES``) anywhere in a payload.
"""

from recovery.providers.acp.replay_fixtures.forbidden import FORBIDDEN_SHAPES, forbidden_shapes_in
from recovery.providers.acp.replay_fixtures.loader import (
    ReplayFixture,
    ReplayMatrixError,
    load_replay_fixtures,
    matrix_problems,
)
from recovery.providers.acp.replay_fixtures.matrix import CLASSIFYING, required_cells

__all__ = [
    "CLASSIFYING",
    "FORBIDDEN_SHAPES",
    "ReplayFixture",
    "ReplayMatrixError",
    "forbidden_shapes_in",
    "load_replay_fixtures",
    "matrix_problems",
    "required_cells",
]
