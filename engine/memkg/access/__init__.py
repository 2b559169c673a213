"""Who may call the service: API keys with scopes and domains, grants, and the access audit.

``model.py`` holds the values, ``store.py`` the ``AccessStore`` port and its in-memory twin,
``sqlite.py`` and ``postgres.py`` the adapters (beside the memory they guard), ``secret.py``
how keys are minted and checked, ``keyring.py`` the operations the CLI and the service call,
``policy.py`` what a key may do.
"""

from memkg.access.keyring import Keyring
from memkg.access.model import AccessRecord, ApiKey, ApiScope, Grant, IssuedKey
from memkg.access.policy import Principal
from memkg.access.store import AccessStore, MemoryAccessStore

__all__ = [
    "AccessRecord",
    "AccessStore",
    "ApiKey",
    "ApiScope",
    "Grant",
    "IssuedKey",
    "Keyring",
    "MemoryAccessStore",
    "Principal",
]
