"""Writing an audit bundle: the tenant's journal over a range (per hash chain, in (chain, seq) order),
streamed, with the proof of every game it moves money for, the signed checkpoints inside the range, the
key ring, a signed header and a trailer, and for a bundle of the whole books the public log's checkpoint
and leaves (the record layout: pokna_verify.bundle.records; the log's part: pokna.bundles.log_part).

Streamed in batches of transactions: a batch's new accounts and games are read in one query each and
written just before the first transaction that needs them, so memory holds one batch and the ids already
written, never the bundle. The range is resolved (and refused, naming the field) before the first byte.

Read on the async road. The range, the log's checkpoint and the header are read on the caller's connection
(`open_bundle`); then every batch is read on a connection of its own, asked of `connect` for that batch and
given back before the batch goes out as one chunk of whole lines: a slow or vanished client holds no
database connection, no transaction and (through the route's `connect`) no place at the database gate
between chunks (`pokna.bundles.routes`). That changes nothing the bundle says: it is append-only over a
range fixed up front, and every statement saw its own snapshot under READ COMMITTED anyway.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection

from pokna import ledger
from pokna.bundles.log_part import LogPart, leaf_batch, leaf_starts, log_part
from pokna.db.types import utc_now
from pokna.dealer import service as dealer
from pokna.ledger.accounts_aio import ACCOUNT_SUMMARIES, summaries
from pokna.ledger.books_repository import SeqRange
from pokna.ledger.store_postgresql import jsonl_lines
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
Connect = Callable[[], AbstractAsyncContextManager[AsyncConnection[Any]]]
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass(frozen=True)
class BundleRange(ledger.JournalRange):
    log_since: int | None = None  # the previous bundle's log checkpoint size: carry the proof from it


async def open_bundle(
    connection: AsyncConnection[Any], keys: ServiceKeys, tenant_id: str, span: BundleRange
) -> Bundle:
    """Resolve the range now (TenantNotFound, InvalidRequest naming the field), read the public log's
    checkpoint and sign the header, on `connection`: all that can refuse the bundle happens before its
    first byte. The checkpoint is read first, so the journal's range ends at or after the heads it signs
    (pokna.bundles.log_part)."""
    ledger.check_range(span)
    log = await log_part(connection, tenant_id, whole_books=span.whole_books, since=span.log_since)
    journal = await ledger.journal_span(connection, tenant_id, span)
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
    return Bundle(keys, tenant_id, journal, header, log)


@dataclass(frozen=True)
class Bundle:
    """A bundle resolved and signed, to be written (`chunks`)."""

    keys: ServiceKeys
    tenant_id: str
    journal: ledger.JournalSpans
    header: dict[str, Any]
    log: LogPart | None

    async def chunks(self, connect: Connect) -> AsyncIterator[str]:
        """The bundle as chunks of whole lines, each batch read on a connection from `connect` that is
        given back before the chunk is handed out."""
        yield _encode(self.header) + "\n"
        yield _encode({"type": KEY_RING, **self.keys.key_ring.to_json()}) + "\n"
        counts: dict[str, int] = {}
        seen_games: set[str] = set()
        if self.log is not None:
            counts[LOG_CHECKPOINT] = 1
            yield _encode(self.log.record) + "\n"
        if not self.journal.empty:
            async for chunk in self._body(connect, counts, seen_games):
                yield chunk
        if self.log is not None:
            for start in leaf_starts(self.log.size):
                async with connect() as connection:
                    leaves = await leaf_batch(connection, self.tenant_id, start, self.log.size, seen_games)
                counts[LOG_LEAF] = counts.get(LOG_LEAF, 0) + len(leaves)
                yield "".join(_encode(leaf) + "\n" for leaf in leaves)
        ends = (LOG_CHECKPOINT, LOG_LEAF) if self.log is not None else ()
        yield _encode(end_record(counts, ends)) + "\n"

    async def _body(
        self, connect: Connect, counts: dict[str, int], seen_games: set[str]
    ) -> AsyncIterator[str]:
        # Each checkpoint right after the transaction of the first head it pins inside the range, oldest
        # first.
        checkpoints: dict[tuple[int, int], list[dict[str, Any]]] = {}
        ranges = {span.chain: (span.first_seq, span.last_seq) for span in self.journal.chains}
        async with connect() as connection:
            stored = await ledger.checkpoints_between(connection, self.tenant_id, self.journal)
        for checkpoint in stored:
            document = ledger.checkpoint_document(checkpoint)
            pins = checkpoint_pins(document)
            place = checkpoint_place(pins, ranges) if pins is not None else None
            if place is not None:
                checkpoints.setdefault(place, []).append(document)
        seen_accounts: set[str] = set()
        for seqs in self.journal.ranges():
            for first in range(seqs.first, seqs.last + 1, BATCH_TRANSACTIONS):
                page = SeqRange(first, min(first + BATCH_TRANSACTIONS - 1, seqs.last), seqs.chain)
                async with connect() as connection:
                    batch = [
                        (text, json.loads(text))
                        async for text in jsonl_lines(connection, self.tenant_id, [page])
                    ]
                    reads = await _batch_reads(
                        connection, self.tenant_id, self.journal, batch, seen_accounts, seen_games
                    )
                yield "".join(_batch(batch, reads, seen_accounts, seen_games, checkpoints, counts))


@dataclass(frozen=True)
class _BatchReads:
    accounts: dict[str, Any]
    games: dict[str, dealer.AuditedGame]
    before: dict[str, int]


async def _batch_reads(
    connection: AsyncConnection[Any],
    tenant_id: str,
    journal: ledger.JournalSpans,
    batch: list[tuple[str, dict[str, Any]]],
    seen_accounts: set[str],
    seen_games: set[str],
) -> _BatchReads:
    """The accounts and games the batch is the first to touch, and the games' earlier transfers."""
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
    values = {"tenant_id": tenant_id, "account_ids": sorted(new_accounts)}
    accounts = summaries(await (await connection.execute(ACCOUNT_SUMMARIES, values)).fetchall())
    games = await dealer.games_for_audit(connection, tenant_id, sorted(new_games))
    before = await ledger.transfers_before(connection, tenant_id, new_games, journal)
    return _BatchReads(accounts, games, before)


def _batch(
    batch: list[tuple[str, dict[str, Any]]],
    reads: _BatchReads,
    seen_accounts: set[str],
    seen_games: set[str],
    checkpoints: dict[tuple[int, int], list[dict[str, Any]]],
    counts: dict[str, int],
) -> Iterator[str]:
    accounts, games, before = reads.accounts, reads.games, reads.before
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
