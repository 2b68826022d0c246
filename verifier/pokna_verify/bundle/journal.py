"""Nothing unexplained: the bundle's accounts, games and transactions, each transaction accounted for as a
deposit, a withdrawal or the next transfer of its game (pokna_verify.bundle.money), and what each account kind
gained or lost over the range.

What is remembered for the whole range (every account, every game's pot and id) is interned: a bundle names
each id in several records, and each reading of it would otherwise be kept as a string of its own."""

from __future__ import annotations

from collections.abc import Mapping
from sys import intern
from typing import Any

from pokna_verify.bundle.money import GameBook, expected_transfers, pot_flow, take_transaction
from pokna_verify.bundle.proofs import GameProof
from pokna_verify.bundle.records import ACCOUNT, DEPOSIT, GAME, TRANSACTION, WITHDRAWAL
from pokna_verify.bundle.report import BundleReport
from pokna_verify.invariant import present
from pokna_verify.ledger.chain import chain_label
from pokna_verify.ledger.check import is_int
from pokna_verify.tlog.game_leaf import FINISHED

PLAYER_WALLET = "player_wallet"
GAME_POT = "game_pot"
EXTERNAL_FUNDING = "external_funding"
REVENUE = "revenue"
RAKE = "rake"
ACCOUNT_KINDS = (PLAYER_WALLET, GAME_POT, "house", EXTERNAL_FUNDING, REVENUE)


class Journal:
    def __init__(self, report: BundleReport) -> None:
        self.report = report
        self.accounts: dict[str, tuple[str, str]] = {}  # id -> (kind, currency)
        self.games: dict[str, GameBook] = {}  # games whose transfers in the range are not all seen yet
        self.closed: set[str] = set()
        self.pot_owner: dict[str, str] = {}
        # Each chain's first seq in the bundle's signed range (format 1: chain 0 alone).
        self.chain_starts: dict[int, int] = {}
        # The records written since the last transaction: exactly what the next one touches first.
        self.pending_accounts: list[str] = []
        self.pending_game: str | None = None
        self.used_accounts: set[str] = set()
        self.games_seen: set[str] = set()  # games with a transaction already

    # --- accounts ---------------------------------------------------------------------------------------

    def on_account(self, number: int, record: Mapping[str, Any]) -> None:
        account_id, kind, currency = record.get("account_id"), record.get("kind"), record.get("currency")
        name = account_id if isinstance(account_id, str) else None
        if not (isinstance(account_id, str) and isinstance(kind, str) and isinstance(currency, str)):
            self.report.found(
                number, ACCOUNT, name, "an account record has string account_id, kind, currency"
            )
            return
        if kind not in ACCOUNT_KINDS:
            self.report.found(
                number, ACCOUNT, name, f"kind {kind!r} is not one of {', '.join(ACCOUNT_KINDS)}"
            )
        if account_id in self.accounts:
            self.report.found(number, ACCOUNT, name, f"account {account_id} is described twice")
            return
        if self.pending_game is not None:
            self.report.found(
                number, ACCOUNT, name, "an account record after a game record: accounts come first"
            )
        self.accounts[intern(account_id)] = (intern(kind), intern(currency))
        self.pending_accounts.append(account_id)

    # --- games ------------------------------------------------------------------------------------------

    def on_game(self, number: int, record: Mapping[str, Any], proof: GameProof | None) -> bool:
        """`proof`: the record's proof as read and checked (pokna_verify.bundle.proofs). True when the proof's own
        verdict belongs in the report (the record was sound enough for it to be checked)."""
        game_id, status, pot = record.get("game_id"), record.get("status"), record.get("pot_account_id")
        before_field, document = record.get("transfers_before"), record.get("proof")
        name = game_id if isinstance(game_id, str) else None

        def said(problem: str) -> None:
            self.report.found(number, GAME, name, problem)

        if not (isinstance(game_id, str) and isinstance(status, str) and isinstance(pot, str)):
            said("a game record has string game_id, status and pot_account_id")
            return False
        before = before_field if isinstance(before_field, int) and is_int(before_field) else -1
        if before < 0:
            said(f"transfers_before is {before_field!r}: a count, 0 for a range from seq 1")
            before = 0
        if game_id in self.games or game_id in self.closed:
            said(f"game {game_id} appears twice")
            return False
        if pot in self.pot_owner:
            said(f"pot account {pot} is already game {self.pot_owner[pot]}'s")
        pot, game_id = intern(pot), intern(game_id)
        self.pot_owner[pot] = game_id
        if self.pending_game is not None:
            said(f"a second game record before a transaction (after {self.pending_game})")
        self.pending_game = game_id
        book = GameBook(game_id, number, status, pot, None, before, transfers_before=before)
        self.games[game_id] = book
        self.report.games[status] = self.report.games.get(status, 0) + 1
        if document is None:
            if status in FINISHED:
                said(f"game {game_id} is {status} but its record has no proof")
            else:
                self.report.unrevealed_games.append(game_id)
            return False
        if not isinstance(document, dict):
            said("proof is neither an object nor null")
            return False
        proof = present(proof, "a proof (read_game_proof reads every proof object)")
        facts = proof.facts
        if facts is None:
            said(f"the proof is malformed: {proof.malformed}")
            return False
        if facts.game_id != game_id:
            said(f"the proof is of game {facts.game_id}, the record of {game_id}")
        reason = facts.reason
        if status != ("cancelled" if reason == "cancelled" else "settled"):
            said(f"status {status!r} contradicts the proof's outcome {reason!r}")
        expected, problems = expected_transfers(facts.seats, facts.transfers, book)
        for problem in problems:
            said(problem)
        if before > len(expected):
            said(f"transfers_before {before} exceeds the proof's {len(expected)} transfers")
        book.expected = expected
        book.pot_balance = pot_flow(expected[:before], pot)
        return True

    # --- transactions -----------------------------------------------------------------------------------

    def on_transaction(self, number: int, line: Mapping[str, Any]) -> None:
        report, seq, kind = self.report, line["seq"], line["kind"]
        chain = line.get("chain", 0)
        where = chain_label(chain, seq)
        postings: list[dict[str, Any]] = line["postings"]
        report.transaction_kinds[kind] = report.transaction_kinds.get(kind, 0) + 1
        kinds: list[str | None] = []
        for posting in postings:
            account_id, currency = posting["account_id"], posting["currency"]
            known = self.accounts.get(account_id)
            if known is None:
                self._transaction_problem(
                    number, where, f"account {account_id} has no account record before it"
                )
                kinds.append(None)
                continue
            kinds.append(known[0])
            if known[1] != currency:
                self._transaction_problem(number, where, f"posts {currency} to {account_id}, in {known[1]}")
            changes = report.kind_changes.setdefault(known[0], {})
            changes[currency] = changes.get(currency, 0) + posting["amount"]
        game_id = line["metadata"].get("game_id")
        self._check_order(number, where, postings, game_id if isinstance(game_id, str) else None)
        if isinstance(game_id, str):
            self._game_transaction(number, where, game_id, line, kinds)
        elif kind in (DEPOSIT, WITHDRAWAL):
            self._money_in_or_out(number, where, kind, postings, kinds)
        else:
            self._transaction_problem(
                number, where, f"unexplained: {kind!r} is neither a deposit, a withdrawal nor a game's"
            )

    def _check_order(
        self, number: int, where: str, postings: list[dict[str, Any]], game_id: str | None
    ) -> None:
        """Each account and game record sits just before the transaction that first touches it."""
        first_touched: list[str] = []
        for posting in postings:
            account_id = posting["account_id"]
            if account_id not in self.used_accounts and account_id not in first_touched:
                first_touched.append(intern(account_id))
        if self.pending_accounts != first_touched:
            self._transaction_problem(
                number,
                where,
                f"the account records before it are {self.pending_accounts}; it is the first to touch "
                f"{first_touched}",
            )
        self.used_accounts.update(first_touched)
        new_game = game_id is not None and game_id not in self.games_seen
        if self.pending_game != (game_id if new_game else None):
            self._transaction_problem(
                number, where, f"the game record before it is {self.pending_game!r}, not its game's"
            )
        if game_id is not None:
            self.games_seen.add(intern(game_id))
        self.pending_accounts, self.pending_game = [], None

    def _game_transaction(
        self, number: int, where: str, game_id: str, line: Mapping[str, Any], kinds: list[str | None]
    ) -> None:
        found = self.report.found
        if line["reference"] != game_id:
            self._transaction_problem(
                number, where, f"names game {game_id} but its reference is {line['reference']!r}"
            )
        book = self.games.get(game_id)
        if book is None:
            problem = "after its last transfer" if game_id in self.closed else "with no game record before it"
            self._transaction_problem(number, where, f"a transfer of game {game_id} {problem}")
            return
        chain = line.get("chain", 0)
        if (
            book.posted == 0
            and book.transfers_before != 0
            and self.chain_starts.get(chain) == 1
            and (chain == 0 or self.chain_starts.get(0) == 1)
        ):
            # Its first transfer in the bundle is on a chain the bundle holds from seq 1: none came before,
            # unless on chain 0, outside the bundle: a game in play when the journal got its chains has its
            # first transfers there, where everything was before (migration 0014).
            found(
                book.line,
                GAME,
                game_id,
                f"transfers_before is {book.transfers_before}: a count, 0 for a range from seq 1",
            )
        revenue_accounts: set[str] = set()
        for posting, kind in zip(line["postings"], kinds, strict=True):
            account_id = posting["account_id"]
            wanted: str | None = PLAYER_WALLET
            if account_id == book.pot_account_id:
                wanted = GAME_POT
            elif line["kind"] == RAKE and kind == REVENUE:
                wanted = REVENUE
                revenue_accounts.add(account_id)
            if kind is not None and kind != wanted:
                self._transaction_problem(
                    number, where, f"game {game_id} moves money of {account_id}, a {kind} account"
                )
            owner = self.pot_owner.get(account_id)
            if owner is not None and owner != game_id:
                self._transaction_problem(number, where, f"game {game_id} touches the pot of game {owner}")
        mismatch = take_transaction(book, line["kind"], line["postings"], frozenset(revenue_accounts))
        if mismatch is not None:
            self._transaction_problem(number, where, mismatch)
        if book.complete:
            if book.pot_balance != 0:
                self._transaction_problem(
                    number, where, f"game {game_id} ends with {book.pot_balance} in its pot"
                )
            del self.games[game_id]
            self.closed.add(intern(game_id))

    def _money_in_or_out(
        self, number: int, where: str, kind: str, postings: list[dict[str, Any]], kinds: list[str | None]
    ) -> None:
        into_wallet = kind == DEPOSIT
        legs = sorted(zip(kinds, (posting["amount"] for posting in postings), strict=True), key=str)
        shape = [(EXTERNAL_FUNDING, not into_wallet), (PLAYER_WALLET, into_wallet)]
        if [(leg_kind, amount > 0) for leg_kind, amount in legs] != shape:
            found = ", ".join(f"{leg_kind} {amount:+d}" for leg_kind, amount in legs)
            self._transaction_problem(
                number, where, f"a {kind} moves money between a wallet and external funding, not {found}"
            )

    def _transaction_problem(self, number: int, where: str, problem: str) -> None:
        self.report.found(number, TRANSACTION, where, problem)

    def finish(self) -> None:
        """Games whose transfers the range does not hold to the end."""
        for book in self.games.values():
            if book.posted == 0:
                self.report.found(
                    book.line, GAME, book.game_id, "no transaction of this game follows its record"
                )
            elif book.expected is not None:
                self.report.notes.append(
                    f"game {book.game_id}: {book.position} of its {len(book.expected)} transfers are at or "
                    "before the end of the range; the rest come after it"
                )
