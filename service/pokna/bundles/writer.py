"""Writing an audit bundle: the tenant's journal over a range (per hash chain, in (chain, seq) order), streamed, with the proof of every game it
moves money for, the signed checkpoints inside the range, the key ring, a signed header and a trailer,
and for a bundle of the whole books the public log's checkpoint and leaves (the record layout:
pokna_verify.bundle.records; the log's part: pokna.bundles.log_part).

Streamed in batches of transactions: a batch's new accounts and games are read in one query each and
written just before the first transaction that needs them, so memory holds one batch and the ids already
written, never the bundle. The range is resolved (and refused, naming the field) before the first byte.

Every read of a batch is done before its first line is handed out, and a batch goes out as one chunk of
whole lines: between chunks the session runs no query, so the HTTP edge ends the read transaction there and a
slow or vanished client holds no database connection (`pokna.bundles.routes`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from pokna import ledger
from pokna.bundles.log_part import LogPart, leaf_batches, log_part
from pokna.db.types import utc_now
from pokna.dealer import service as dealer
from pokna.service_keys import ServiceKeys
from pokna_verify.bundle.log_records import LOG_CHECKPOINT, LOG_LEAF
from pokna_verify.bundle.records import (
    CHECKPOINT,
    GAME,
    KEY_RING,
    TRANSACTION,
    account_record,
    chain_entry,
    checkpoint_pins,
    checkpoint_place,
    end_record,
    game_record,
    header_document,
    transaction_record_text,
)
from pokna_verify.crypto.signing import sign_document
from pokna_verify.ledger.chain import format_timestamp

BATCH_TRANSACTIONS = 2000
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass(frozen=True)
class BundleRange:
    """By seq or by time; either end may stay open (the start of the books, the chain head now). `chain`:
    that chain only; seqs need it; with neither, every chain (pokna.ledger.journal_span)."""

    from_seq: int | None = None
    to_seq: int | None = None
    from_time: datetime | None = None
    to_time: datetime | None = None
    chain: int | None = None
    log_since: int | None = None  # the previous bundle's log checkpoint size: carry the proof from it

    @property
    def whole_books(self) -> bool:
        return self.chain is None and not any(
            end is not None for end in (self.from_seq, self.to_seq, self.from_time, self.to_time)
        )


def open_bundle(session: Session, keys: ServiceKeys, tenant_id: str, span: BundleRange) -> Iterator[str]:
    """Resolve the range now (TenantNotFound, InvalidRequest naming the field) and return the bundle as
    chunks of whole lines (each line ending in a newline), read through the same session. Between two
    chunks the session is idle: its transaction may be ended there. The public log's checkpoint is read
    first, so the journal's range ends at or after the heads it signs (pokna.bundles.log_part)."""
    log = log_part(session, tenant_id, whole_books=span.whole_books, since=span.log_since)
    journal = ledger.journal_span(
        session,
        tenant_id,
        chain=span.chain,
        from_seq=span.from_seq,
        to_seq=span.to_seq,
        from_time=span.from_time,
        to_time=span.to_time,
    )
    zero = journal.zero
    header = sign_document(
        header_document(
            tenant_id=tenant_id,
            from_seq=zero.first_seq if zero is not None else None,
            to_seq=zero.last_seq if zero is not None else None,
            first_prev_hash=zero.first_prev_hash if zero is not None else None,
            last_hash=zero.last_hash if zero is not None else None,
            chains=[
                chain_entry(
                    chain=chain.chain,
                    from_seq=chain.first_seq,
                    to_seq=chain.last_seq,
                    first_prev_hash=chain.first_prev_hash,
                    last_hash=chain.last_hash,
                    transactions=chain.transactions,
                )
                for chain in journal.chains
            ],
            transactions=journal.transactions,
            created_at=format_timestamp(utc_now()),
            log_size=log.size if log is not None else None,
        ),
        keys.signing_key,
    )
    return _lines(session, keys, tenant_id, journal, header, log)


def _lines(
    session: Session,
    keys: ServiceKeys,
    tenant_id: str,
    journal: ledger.JournalSpans,
    header: dict[str, Any],
    log: LogPart | None,
) -> Iterator[str]:
    yield _encode(header) + "\n"
    yield _encode({"type": KEY_RING, **keys.key_ring.to_json()}) + "\n"
    counts: dict[str, int] = {}
    seen_games: set[str] = set()
    if log is not None:
        counts[LOG_CHECKPOINT] = 1
        yield _encode(log.record) + "\n"
    if not journal.empty:
        yield from _body(session, tenant_id, journal, counts, seen_games)
    if log is not None:
        for batch in leaf_batches(session, tenant_id, log.size, seen_games):
            counts[LOG_LEAF] = counts.get(LOG_LEAF, 0) + len(batch)
            yield "".join(_encode(leaf) + "\n" for leaf in batch)
    yield _encode(end_record(counts, (LOG_CHECKPOINT, LOG_LEAF) if log is not None else ())) + "\n"


def _body(
    session: Session,
    tenant_id: str,
    journal: ledger.JournalSpans,
    counts: dict[str, int],
    seen_games: set[str],
) -> Iterator[str]:
    # Each checkpoint right after the transaction of the first head it pins inside the range, oldest first.
    checkpoints: dict[tuple[int, int], list[dict[str, Any]]] = {}
    ranges = {span.chain: (span.first_seq, span.last_seq) for span in journal.chains}
    for checkpoint in ledger.checkpoints_between(session, tenant_id, journal):
        document = ledger.checkpoint_document(checkpoint)
        pins = checkpoint_pins(document)
        place = checkpoint_place(pins, ranges) if pins is not None else None
        if place is not None:
            checkpoints.setdefault(place, []).append(document)
    seen_accounts: set[str] = set()
    lines = ledger.export_jsonl_ranges(session, tenant_id, journal.ranges())
    batch: list[tuple[str, dict[str, Any]]] = []
    for text in lines:
        batch.append((text, json.loads(text)))
        if len(batch) >= BATCH_TRANSACTIONS:
            yield "".join(
                _batch(session, tenant_id, journal, batch, seen_accounts, seen_games, checkpoints, counts)
            )
            batch = []
    if batch:
        yield "".join(
            _batch(session, tenant_id, journal, batch, seen_accounts, seen_games, checkpoints, counts)
        )


def _batch(
    session: Session,
    tenant_id: str,
    journal: ledger.JournalSpans,
    batch: list[tuple[str, dict[str, Any]]],
    seen_accounts: set[str],
    seen_games: set[str],
    checkpoints: dict[tuple[int, int], list[dict[str, Any]]],
    counts: dict[str, int],
) -> Iterator[str]:
    new_accounts = {
        posting["account_id"]
        for _, line in batch
        for posting in line["postings"]
        if posting["account_id"] not in seen_accounts
    }
    new_games: dict[str, int] = {}  # each game new in the batch, and the chain of its first transaction
    for _, line in batch:
        game_id = _game_of(line)
        if game_id is not None and game_id not in seen_games:
            new_games.setdefault(game_id, line.get("chain", 0))
    accounts = ledger.account_summaries(session, tenant_id, sorted(new_accounts))
    games = dealer.games_for_audit(session, tenant_id, sorted(new_games))
    before = ledger.transfers_before(session, tenant_id, new_games, journal)
    for text, line in batch:
        for posting in line["postings"]:
            account_id = posting["account_id"]
            if account_id not in seen_accounts:
                seen_accounts.add(account_id)
                summary = accounts[account_id]
                counts["account"] = counts.get("account", 0) + 1
                yield _encode(account_record(account_id, summary.kind, summary.currency)) + "\n"
        game_id = _game_of(line)
        if game_id is not None and game_id not in seen_games and game_id in games:
            seen_games.add(game_id)
            game = games[game_id]
            counts[GAME] = counts.get(GAME, 0) + 1
            record = game_record(
                game_id=game_id,
                status=game.status,
                pot_account_id=game.pot_account_id,
                transfers_before=before.get(game_id, 0),
                proof=game.proof,
            )
            yield _encode(record) + "\n"
        counts[TRANSACTION] = counts.get(TRANSACTION, 0) + 1
        yield transaction_record_text(text.rstrip("\n")) + "\n"
        for document in checkpoints.pop((line.get("chain", 0), line["seq"]), []):
            counts[CHECKPOINT] = counts.get(CHECKPOINT, 0) + 1
            yield _encode(document) + "\n"


def _game_of(line: dict[str, Any]) -> str | None:
    game_id = line["metadata"].get("game_id")
    return game_id if isinstance(game_id, str) else None
