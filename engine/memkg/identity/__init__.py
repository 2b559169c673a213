"""Who a memory belongs to: the memory switch and merged ids, as views over the event log.

A user's switch and links are events in the user's own stream; this stage folds them and
says which events a read of the user sees (``stream.visible``). It reads through a function
handed to it and depends on ``model`` only.
"""

from memkg.identity.links import IDENTITY_EVENTS, Links, fold_links, merges_from
from memkg.identity.stream import ReadStream, relabel, switch_state, view, visible

__all__ = [
    "IDENTITY_EVENTS",
    "Links",
    "ReadStream",
    "fold_links",
    "merges_from",
    "relabel",
    "switch_state",
    "view",
    "visible",
]
