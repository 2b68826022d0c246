"""How a domain finds its storage implementation: on the session, put there when the session factory was
built (`pokna.storage.make_sessionmaker`). A domain names its own interface (a Protocol or base class in
its package); nothing here knows the domains."""

from __future__ import annotations

from typing import Any, TypeVar, cast

from sqlalchemy.orm import Session

STORES_KEY = "pokna.stores"

Store = TypeVar("Store")


def store_of(session: Session, interface: type[Store]) -> Store:
    """The implementation of `interface` chosen for this session's database."""
    try:
        stores: dict[type[Any], Any] = session.info[STORES_KEY]
        return cast(Store, stores[interface])
    except KeyError:
        raise RuntimeError(
            f"no {interface.__name__} on this session: make sessions with pokna.storage.make_sessionmaker"
        ) from None
