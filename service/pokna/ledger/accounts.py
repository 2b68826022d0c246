"""Accounts: opening them, finding them, and what they hold.

An account opened here is the session's ORM `Account`: its balance is written by the database's posting
trigger only. Other domains read accounts only as `AccountSummary` (accounts_aio.ACCOUNT_SUMMARIES).

On the ORM because its callers are: the tests and the benchmarks, which open accounts on a session. The
async paths' statements (a game's seats and pot, a
system account opened on first use, a wallet opened by `POST /v1/accounts`) are accounts_aio.py's; the
API's read of an account is pokna.ledger.reads's.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session, make_transient_to_detached

from pokna.db.models.ledger import Account
from pokna.db.types import new_id, utc_now
from pokna.ledger import repository
from pokna.ledger.drafts import MAX_TEXT
from pokna.ledger.errors import AccountExists, InvalidAccount, TenantNotFound
from pokna.ledger.model import DEFAULT_CURRENCY, AccountKind, check_currency
from pokna_verify.ledger.chain import LEDGER_CHAINS


def open_account(
    session: Session,
    *,
    tenant_id: str,
    kind: AccountKind | str,
    currency: str = DEFAULT_CURRENCY,
    external_id: str | None = None,
) -> Account:
    """A new account with balance 0. An external id is unique per tenant and kind (AccountExists)."""
    account_kind = _account_kind(kind)
    check_currency(currency)
    if external_id is not None and not 0 < len(external_id) <= MAX_TEXT:
        raise InvalidAccount(f"external_id must be 1-{MAX_TEXT} characters", field="external_id")
    account = Account(
        id=new_id("acct"),
        tenant_id=tenant_id,
        kind=account_kind.value,
        currency=currency,
        external_id=external_id,
        balance=0,
        created_at=utc_now(),
    )
    # The tenant's check and the insert in the usual case; only a refusal costs the queries that say why.
    # The insert's snapshot may predate a tenant committed meanwhile: then neither reason holds, and it
    # runs again.
    for attempt in range(2):
        if repository.insert_account(session, _values(account)):
            break
        if not repository.tenant_exists(session, tenant_id):
            raise _tenant_not_found(tenant_id)
        existing = repository.find_account(session, tenant_id, account_kind.value, str(external_id))
        if existing is not None or attempt == 1:
            raise AccountExists(
                f"tenant {tenant_id} already has a {account_kind} account for {external_id!r}",
                account_id=None if existing is None else existing.id,
            )
    # The row is written: the object joins the session as persistent without reading it back.
    make_transient_to_detached(account)
    session.add(account)
    return account


def system_external_id(currency: str, chain: int = 0) -> str:
    """A system account's external id: its currency on chain 0 (as before chains), `CREDIT/chain3` on chain
    3. A currency is upper-case letters and digits, so no sub-account's id is another's, or a currency."""
    return check_currency(currency) + sub_account_suffix(chain)


def sub_account_suffix(chain: int) -> str:
    """What a system account's external id adds to its currency on `chain`: nothing on chain 0."""
    if type(chain) is not int or not 0 <= chain < LEDGER_CHAINS:
        raise ValueError(f"chain is one of 0 to {LEDGER_CHAINS - 1}, not {chain!r}")
    return "" if chain == 0 else f"/chain{chain}"


def funding_account(
    session: Session, tenant_id: str, currency: str = DEFAULT_CURRENCY, chain: int = 0
) -> Account:
    """The tenant's external funding account of `chain`: the other side of every deposit and withdrawal
    posted on that chain (a free one the move took: ledger_take_chain()). Chain 0's is the one of before chains; the
    tenant's funding balance is the sum over all of them (`system_balance`)."""
    return _system_account(session, tenant_id, AccountKind.EXTERNAL_FUNDING, currency, chain)


PER_CHAIN_KINDS = frozenset({AccountKind.EXTERNAL_FUNDING.value, AccountKind.REVENUE.value})
"""The system accounts kept one per chain (the funding account, and the revenue account a game's rake is
posted to, chain_for(game id)'s); the house's is one."""


def sub_account_chain(external_id: str | None, currency: str) -> int:
    """The chain of a per-chain system account's part, from its external id (`system_external_id`);
    -1 when the id is not one of a part's."""
    if external_id == currency or external_id is None:
        return 0
    _, _, chain = external_id.partition("/chain")
    return int(chain) if chain.isdigit() else -1


def _system_account(
    session: Session, tenant_id: str, kind: AccountKind, currency: str, chain: int
) -> Account:
    """Created on demand, race-free: one per tenant, kind, currency and chain (`system_external_id`)."""
    external_id = system_external_id(currency, chain)
    found = repository.find_account(session, tenant_id, kind.value, external_id)
    if found is not None:
        return found
    if not repository.tenant_exists(session, tenant_id):
        raise _tenant_not_found(tenant_id)
    # A concurrent first use may insert it first: then this inserts nothing and finds theirs.
    repository.insert_account(
        session,
        {
            "id": new_id("acct"),
            "tenant_id": tenant_id,
            "kind": kind.value,
            "currency": currency,
            "external_id": external_id,
            "created_at": utc_now(),
        },
    )
    found = repository.find_account(session, tenant_id, kind.value, external_id)
    assert found is not None
    return found


@dataclass(frozen=True)
class AccountSummary:
    """What another domain may know of an account: what it is and what it holds (read without a lock)."""

    id: str
    kind: str
    currency: str
    balance: int


def _values(account: Account) -> dict[str, object]:
    return {
        "id": account.id,
        "tenant_id": account.tenant_id,
        "kind": account.kind,
        "currency": account.currency,
        "external_id": account.external_id,
        "created_at": account.created_at,
    }


def _account_kind(kind: AccountKind | str) -> AccountKind:
    try:
        return AccountKind(kind)
    except ValueError:
        known = ", ".join(member.value for member in AccountKind)
        raise InvalidAccount(f"account kind {kind!r} is not one of {known}", field="kind") from None


def _tenant_not_found(tenant_id: str) -> TenantNotFound:
    return TenantNotFound(f"no tenant {tenant_id}", tenant_id=tenant_id)
