"""Keep a Gradio session's copy of the page the size of the page: a replaced component keeps its id.

Gradio keeps, per session, its own copy of every component (`SessionState.blocks_config`) with its last value
(`config_values`: a plot's whole figure JSON). An update that is not a plain value (`gr.skip()`, a `gr.update`, or
an output a streamed dict leaves out, which Gradio fills with `gr.skip()`) replaces the session's copy of that
component with a new instance, and Gradio 6 gives every new instance a new id. The next plain value for that output
looks the component up under its old id, finds the new instance, sees its id missing from the session and stores it
a second time under that id, with a copy of its config and value. So every streamed run added a dozen components,
figures included, to the visitor's session, for as long as the session lived: 201 to 347 entries in six runs and
re-routes of one session; the per-minute growth of Python's heap in the one-hour soaks (issue 23).

`keep_replaced_ids` makes a replacement take the id of the component it replaces, as Gradio's own `gr.render` does
for a re-rendered component with a `key` (`is_render_replacement`), so the session holds one copy per component.
"""

from __future__ import annotations

from typing import Any

from gradio.blocks import Block
from gradio.state_holder import SessionState

_set_in_session = SessionState.__setitem__


def _set_keeping_id(self: SessionState, key: int, value: Any) -> None:
    if isinstance(value, Block) and not value.stateful and value._id != key:
        value._id = key  # the session's copy of component `key`, not a component of its own
    _set_in_session(self, key, value)


_set_keeping_id.keeps_ids = True  # type: ignore[attr-defined]


def keep_replaced_ids() -> None:
    """Make a session's replacement of component `key` keep the id `key` (idempotent; call before launch)."""
    if not getattr(SessionState.__setitem__, "keeps_ids", False):
        SessionState.__setitem__ = _set_keeping_id
