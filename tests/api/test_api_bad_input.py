"""Bad input of every kind is a 4xx problem+json naming the culprit, never a 500, and never a partial write."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator
from sqlalchemy.orm import Session, sessionmaker

from pokna.app.openapi_document import openapi_document
from support.api_checks import assert_names_field, assert_problem, database_state, invalid_params
from support.tenant_api import TenantApi, money_key, new_tenant

TOO_MUCH = 10**12 + 1
UNKNOWN_ACCOUNT = "acct_" + "0" * 32
UNKNOWN_GAME = "game_" + "0" * 32


@dataclass
class Case:
    label: str
    body: Any
    status: int
    field: str | None = None
    code: str | None = None


@dataclass
class Cantina:
    """One tenant with a funded Vigo, two funded players, an open game between them, and a stranger."""

    api: TenantApi
    stranger: TenantApi
    sessions: sessionmaker[Session]
    vigo: str
    players: list[str]
    game: dict[str, Any]
    strangers_wallet: str
    bystander: str

    @property
    def game_id(self) -> str:
        game_id: str = self.game["id"]
        return game_id

    def action(self, body: Any, **kwargs: Any) -> Any:
        return self.api.post(f"/v1/games/{self.game_id}/actions", body, **kwargs)

    def assert_refused(
        self, send: Callable[[], Any], status: int, *, field: str | None = None, code: str | None = None
    ) -> dict[str, Any]:
        """Send a bad request; it is refused as stated and the database is exactly as before."""
        before = database_state(self.sessions)
        problem = assert_problem(send(), status, code)
        if field is not None:
            assert_names_field(problem, field)
        assert database_state(self.sessions) == before
        return problem


@pytest.fixture
def cantina(client: TestClient, sessions: sessionmaker[Session]) -> Cantina:
    api = new_tenant(client, sessions)
    stranger = new_tenant(client, sessions, "Mos Eisley")
    vigo = api.wallet(100)
    players = [api.wallet(100), api.wallet(100)]
    created = api.post("/v1/games", {"vigo_account_id": vigo, "player_account_ids": players, "stake": 5})
    assert created.status_code == 201, created.text
    return Cantina(
        api=api,
        stranger=stranger,
        sessions=sessions,
        vigo=vigo,
        players=players,
        game=created.json(),
        strangers_wallet=stranger.wallet(100),
        bystander=api.wallet(100),
    )


def _without(body: dict[str, Any], name: str) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != name}


def _amount_cases() -> list[tuple[str, Any]]:
    return [
        ("string", "5"),
        ("float", 1.5),
        ("bool", True),
        ("null", None),
        ("negative", -5),
        ("zero", 0),
        ("over 10^12", TOO_MUCH),
        ("huge", 10**30),
        ("object", {"value": 5}),
    ]


def _game_cases(c: Cantina) -> list[Case]:
    good = {"vigo_account_id": c.vigo, "player_account_ids": c.players, "stake": 5}
    p1 = c.players[0]
    cases = [
        Case(f"{label} stake", {**good, "stake": value}, 422, "body.stake")
        for label, value in _amount_cases()
    ]
    cases += [
        Case("missing stake", _without(good, "stake"), 422, "body.stake"),
        Case("zero challenge raise", {**good, "challenge_raise": 0}, 422, "body.challenge_raise"),
        Case("huge challenge raise", {**good, "challenge_raise": TOO_MUCH}, 422, "body.challenge_raise"),
        Case("missing vigo", _without(good, "vigo_account_id"), 422, "body.vigo_account_id"),
        Case("null vigo", {**good, "vigo_account_id": None}, 422, "body.vigo_account_id"),
        Case("unknown vigo", {**good, "vigo_account_id": UNKNOWN_ACCOUNT}, 422, "body.vigo_account_id"),
        Case(
            "unknown player",
            {**good, "player_account_ids": [p1, UNKNOWN_ACCOUNT]},
            422,
            "body.player_account_ids.1",
        ),
        Case(
            "another tenant's player",
            {**good, "player_account_ids": [p1, c.strangers_wallet]},
            422,
            "body.player_account_ids.1",
        ),
        Case(
            "another tenant's vigo",
            {**good, "vigo_account_id": c.strangers_wallet},
            422,
            "body.vigo_account_id",
        ),
        Case(
            "a player in two seats",
            {**good, "player_account_ids": [p1, p1]},
            422,
            "body.player_account_ids.1",
        ),
        Case(
            "the vigo also a player",
            {**good, "player_account_ids": [p1, c.vigo]},
            422,
            "body.player_account_ids.1",
        ),
        Case(
            "twelve players",
            {**good, "player_account_ids": [f"acct_{index}" for index in range(12)]},
            422,
            "body.player_account_ids",
        ),
        Case("no players", {**good, "player_account_ids": []}, 422, "body.player_account_ids"),
        Case("players not a list", {**good, "player_account_ids": p1}, 422, "body.player_account_ids"),
        Case(
            "a game pot as a player",
            {**good, "player_account_ids": [p1, c.game["pot_account_id"]]},
            422,
            "body.player_account_ids.1",
        ),
        Case("another currency than the wallets'", {**good, "currency": "GOLD"}, 422, "body.vigo_account_id"),
        Case("malformed currency", {**good, "currency": "credit"}, 422, "body.currency"),
        Case("turn timeout too short", {**good, "turn_timeout_seconds": 4}, 422, "body.turn_timeout_seconds"),
        Case(
            "turn timeout too long",
            {**good, "turn_timeout_seconds": 86_401},
            422,
            "body.turn_timeout_seconds",
        ),
        Case("account id too long", {**good, "vigo_account_id": "a" * 41}, 422, "body.vigo_account_id"),
        Case("unknown field", {**good, "rake": 1}, 422, "body.rake"),
        Case("a list, not an object", [good], 422, "body"),
    ]
    return cases


def test_bad_game_bodies_are_refused_naming_the_field(cantina: Cantina) -> None:
    for case in _game_cases(cantina):
        try:
            cantina.assert_refused(
                partial(cantina.api.post, "/v1/games", case.body), case.status, field=case.field
            )
        except AssertionError as error:
            raise AssertionError(f"{case.label}: {error}") from error


def _movement_cases() -> list[Case]:
    cases = [
        Case(f"{label} amount", {"amount": value}, 422, "body.amount") for label, value in _amount_cases()
    ]
    cases += [
        Case("missing amount", {}, 422, "body.amount"),
        Case("empty reference", {"amount": 1, "reference": ""}, 422, "body.reference"),
        Case("reference of 201 characters", {"amount": 1, "reference": "r" * 201}, 422, "body.reference"),
        Case(
            "metadata that is not text", {"amount": 1, "metadata": {"order": 7}}, 422, "body.metadata.order"
        ),
        Case(
            "metadata with 21 entries",
            {"amount": 1, "metadata": {str(i): "x" for i in range(21)}},
            422,
            "body.metadata",
        ),
        Case("unknown field", {"amount": 1, "currency": "CREDIT"}, 422, "body.currency"),
    ]
    return cases


@pytest.mark.parametrize("movement", ["deposits", "withdrawals"])
def test_bad_money_movements_are_refused_naming_the_field(cantina: Cantina, movement: str) -> None:
    wallet = cantina.players[0]
    for case in _movement_cases():
        try:
            cantina.assert_refused(
                partial(
                    cantina.api.post, f"/v1/accounts/{wallet}/{movement}", case.body, headers=money_key()
                ),
                case.status,
                field=case.field,
            )
        except AssertionError as error:
            raise AssertionError(f"{case.label}: {error}") from error
    pot = cantina.game["pot_account_id"]
    cantina.assert_refused(
        lambda: cantina.api.post(f"/v1/accounts/{pot}/{movement}", {"amount": 1}, headers=money_key()),
        422,
        field="path.account_id",
    )
    cantina.assert_refused(
        lambda: cantina.api.post(f"/v1/accounts/{'a' * 41}/{movement}", {"amount": 1}, headers=money_key()),
        422,
        field="path.account_id",
    )
    for missing in (UNKNOWN_ACCOUNT, cantina.strangers_wallet):
        cantina.assert_refused(
            partial(
                cantina.api.post, f"/v1/accounts/{missing}/{movement}", {"amount": 1}, headers=money_key()
            ),
            404,
            code="account_not_found",
        )


def test_the_amount_limit_is_inclusive(cantina: Cantina) -> None:
    wallet = cantina.bystander
    assert cantina.api.deposit(wallet, 10**12).status_code == 201
    assert cantina.api.withdraw(wallet, 10**12).status_code == 201
    assert cantina.api.balance(wallet) == 100


@pytest.mark.parametrize(
    "spelling", ["10", "10.0", "1e1", "1.0E+1", "100e-1", "10.5", "1e-1", '"10"', "true", "1e400"]
)
def test_the_document_and_the_server_agree_on_what_an_integer_amount_is(
    cantina: Cantina, spelling: str
) -> None:
    """Issue 37, item 5: the document says `integer`, which JSON Schema satisfies with 10.0 and 1e1; so does
    the server. A fraction, a string or `true` is no integer to either, and is refused naming the field."""
    document = openapi_document()
    amount_schema = document["components"]["schemas"]["MoneyMovement"]["properties"]["amount"]
    value = json.loads(spelling)
    valid = Draft202012Validator(amount_schema).is_valid(value)
    wallet = cantina.bystander
    before = cantina.api.balance(wallet)
    answer = cantina.api.post(
        f"/v1/accounts/{wallet}/deposits",
        content=b'{"amount": ' + spelling.encode() + b"}",
        headers={"content-type": "application/json", **money_key()},
    )
    if valid:
        assert answer.status_code == 201, answer.text
        assert answer.json()["postings"][0]["amount"] in (10, -10), answer.text
        assert cantina.api.balance(wallet) == before + 10
    else:
        assert answer.status_code == 422, answer.text
        assert_names_field(answer.json(), "body.amount")
        assert cantina.api.balance(wallet) == before


def test_whole_numbers_written_with_a_fraction_part_set_up_a_game(cantina: Cantina) -> None:
    c = cantina
    created = c.api.post(
        "/v1/games",
        {
            "vigo_account_id": c.vigo,
            "player_account_ids": c.players,
            "stake": 5.0,
            "challenge_raise": 1e1,
            "turn_timeout_seconds": 60.0,
            "rake": {"bps": 500.0, "cap": 2.0},
        },
    )
    assert created.status_code == 201, created.text
    game = created.json()
    assert (game["stake"], game["challenge_raise"], game["turn_timeout_seconds"]) == (5, 10, 60)
    assert game["rake"] == {"bps": 500, "cap": 2}
    assert all(type(game[name]) is int for name in ("stake", "challenge_raise", "turn_timeout_seconds"))


def test_withdrawing_more_than_the_balance_posts_nothing(cantina: Cantina) -> None:
    wallet = cantina.bystander
    problem = cantina.assert_refused(
        lambda: cantina.api.withdraw(wallet, 101),
        409,
        code="insufficient_funds",
    )
    assert problem["account_id"] == wallet
    assert problem["balance"] == 100
    assert cantina.api.balance(wallet) == 100
    assert cantina.api.get("/v1/ledger/trial-balance").json()["total"] == 0
    # the whole balance is fine: the refusal above was about the one credit too many
    assert cantina.api.withdraw(wallet, 100).status_code == 201
    assert cantina.api.balance(wallet) == 0


def test_bad_wallet_bodies_are_refused_naming_the_field(cantina: Cantina) -> None:
    cases = [
        Case("empty external id", {"external_id": ""}, 422, "body.external_id"),
        Case("external id of 201 characters", {"external_id": "u" * 201}, 422, "body.external_id"),
        Case("numeric external id", {"external_id": 42}, 422, "body.external_id"),
        Case("malformed currency", {"currency": "cr"}, 422, "body.currency"),
        Case("unknown field", {"balance": 1000}, 422, "body.balance"),
        Case("a list, not an object", [], 422, "body"),
    ]
    for case in cases:
        try:
            cantina.assert_refused(
                partial(cantina.api.post, "/v1/accounts", case.body), case.status, field=case.field
            )
        except AssertionError as error:
            raise AssertionError(f"{case.label}: {error}") from error
    cantina.assert_refused(lambda: cantina.api.post("/v1/accounts", content=b""), 422, field="body")
    assert cantina.api.post("/v1/accounts", {"external_id": "han"}).status_code == 201
    cantina.assert_refused(
        lambda: cantina.api.post("/v1/accounts", {"external_id": "han"}), 409, code="account_exists"
    )


def test_bad_table_bodies_are_refused_naming_the_field(cantina: Cantina) -> None:
    seats = [cantina.vigo, *cantina.players]
    good = {"account_ids": seats, "stake": 5}
    cases = [
        Case(f"{label} stake", {**good, "stake": value}, 422, "body.stake")
        for label, value in _amount_cases()
    ]
    cases += [
        Case("one seat", {**good, "account_ids": seats[:1]}, 422, "body.account_ids"),
        Case(
            "thirteen seats",
            {**good, "account_ids": [f"acct_{i}" for i in range(13)]},
            422,
            "body.account_ids",
        ),
        Case("a seat twice", {**good, "account_ids": [*seats, seats[0]]}, 422, "body.account_ids.3"),
        Case(
            "unknown account", {**good, "account_ids": [*seats, UNKNOWN_ACCOUNT]}, 422, "body.account_ids.3"
        ),
        Case(
            "another tenant's account",
            {**good, "account_ids": [*seats, cantina.strangers_wallet]},
            422,
            "body.account_ids.3",
        ),
        Case("unknown field", {**good, "rounds": 3}, 422, "body.rounds"),
    ]
    for case in cases:
        try:
            cantina.assert_refused(
                partial(cantina.api.post, "/v1/tables", case.body), case.status, field=case.field
            )
        except AssertionError as error:
            raise AssertionError(f"{case.label}: {error}") from error


def _action_cases(c: Cantina) -> list[Case]:
    """Bodies the schema refuses; `field` is where the fault is in the JSON the client sent."""
    vigo = c.vigo
    return [
        Case("unknown action type", {"type": "dance", "account_id": vigo}, 422, "body.type"),
        Case("missing type", {"account_id": vigo}, 422, "body.type"),
        Case("missing account id", {"type": "roll"}, 422, "body.account_id"),
        Case("null account id", {"type": "start", "account_id": None}, 422, "body.account_id"),
        Case(
            "vote with a bad choice",
            {"type": "vote", "account_id": vigo, "choice": "flee"},
            422,
            "body.choice",
        ),
        Case("vote without a choice", {"type": "vote", "account_id": vigo}, 422, "body.choice"),
        Case(
            "client seed with a space",
            {"type": "set_client_seed", "account_id": vigo, "client_seed": "lucky 7"},
            422,
            "body.client_seed",
        ),
        Case(
            "client seed with non-ASCII",
            {"type": "set_client_seed", "account_id": vigo, "client_seed": "glück"},
            422,
            "body.client_seed",
        ),
        Case(
            "client seed of 65 characters",
            {"type": "set_client_seed", "account_id": vigo, "client_seed": "s" * 65},
            422,
            "body.client_seed",
        ),
        Case(
            "empty client seed",
            {"type": "set_client_seed", "account_id": vigo, "client_seed": ""},
            422,
            "body.client_seed",
        ),
        Case(
            "expected version 0",
            {"type": "start", "account_id": vigo, "expected_version": 0},
            422,
            "body.expected_version",
        ),
        Case("unknown field", {"type": "start", "account_id": vigo, "stake": 9}, 422, "body.stake"),
    ]


def test_bad_action_bodies_are_refused_with_nothing_written(cantina: Cantina) -> None:
    for case in _action_cases(cantina):
        try:
            problem = cantina.assert_refused(
                partial(cantina.action, case.body), case.status, code="validation_error"
            )
            assert all(name == "body" or name.startswith("body.") for name in invalid_params(problem))
        except AssertionError as error:
            raise AssertionError(f"{case.label}: {error}") from error
    assert cantina.api.get(f"/v1/games/{cantina.game_id}").json()["version"] == cantina.game["version"]


def test_bad_action_bodies_name_the_field_as_sent(cantina: Cantina) -> None:
    wrong = []
    for case in _action_cases(cantina):
        problem = assert_problem(cantina.action(case.body), case.status)
        assert case.field is not None
        named = invalid_params(problem)
        if named.get(case.field) != "/" + case.field.removeprefix("body.").replace(".", "/"):
            wrong.append(f"{case.label}: {named}")
    assert not wrong, "\n".join(wrong)


def test_an_action_for_an_account_not_seated_is_422_not_seated(cantina: Cantina) -> None:
    for outsider in (cantina.bystander, cantina.strangers_wallet, UNKNOWN_ACCOUNT):
        cantina.assert_refused(
            partial(cantina.action, {"type": "roll", "account_id": outsider}),
            422,
            field="body.account_id",
            code="not_seated",
        )


def _start_with_a_broke_player(cantina: Cantina) -> tuple[str, str, int]:
    """A new open game whose second player holds less than the stake: (game id, that player, their seat)."""
    broke = cantina.api.wallet(4)
    created = cantina.api.post(
        "/v1/games",
        {"vigo_account_id": cantina.vigo, "player_account_ids": [cantina.players[0], broke], "stake": 5},
    )
    assert created.status_code == 201, created.text
    return created.json()["id"], broke, 2


def _refusals(cantina: Cantina) -> list[tuple[str, Callable[[], Any], int, str]]:
    """Actions the rules refuse in the open game: (label, send, status, code)."""
    player = cantina.players[0]
    version = cantina.game["version"]
    return [
        (
            "a player starts",
            lambda: cantina.action({"type": "start", "account_id": player}),
            409,
            "not_your_turn",
        ),
        (
            "the vigo rolls before the start",
            lambda: cantina.action({"type": "roll", "account_id": cantina.vigo}),
            409,
            "wrong_phase",
        ),
        (
            "a player votes while open",
            lambda: cantina.action({"type": "vote", "account_id": player, "choice": "split"}),
            409,
            "wrong_phase",
        ),
        (
            "a stale expected version",
            lambda: cantina.action(
                {"type": "start", "account_id": cantina.vigo, "expected_version": version + 1}
            ),
            409,
            "conflict",
        ),
    ]


def test_refused_actions_are_409_with_the_current_game(cantina: Cantina) -> None:
    for label, send, status, code in _refusals(cantina):
        try:
            problem = cantina.assert_refused(send, status, code=code)
            assert problem["game"]["id"] == cantina.game_id
            assert problem["game"]["version"] == cantina.game["version"]
            assert problem["game"]["status"] == "open"
        except AssertionError as error:
            raise AssertionError(f"{label}: {error}") from error


def test_starting_when_a_player_cannot_pay_is_409_naming_them(cantina: Cantina) -> None:
    game_id, broke, seat = _start_with_a_broke_player(cantina)
    problem = cantina.assert_refused(
        lambda: cantina.api.post(
            f"/v1/games/{game_id}/actions", {"type": "start", "account_id": cantina.vigo}
        ),
        409,
        code="cannot_pay",
    )
    assert problem["seats"] == [seat]
    assert problem["game"]["seats"][seat]["account_id"] == broke
    assert problem["game"]["status"] == "open"
    assert cantina.api.balance(broke) == 4


def test_a_client_seed_after_the_start_is_409_client_seed_locked(cantina: Cantina) -> None:
    started = cantina.action({"type": "start", "account_id": cantina.vigo})
    assert started.status_code == 200, started.text
    problem = cantina.assert_refused(
        lambda: cantina.action(
            {"type": "set_client_seed", "account_id": cantina.players[0], "client_seed": "late"}
        ),
        409,
        code="client_seed_locked",
    )
    assert problem["game"]["status"] == "in_progress"


def test_a_client_seed_on_an_ended_game_is_409_game_over_as_any_action(cantina: Cantina) -> None:
    cancelled = cantina.action({"type": "cancel"})
    assert cancelled.status_code == 200, cancelled.text
    seed = {"type": "set_client_seed", "account_id": cantina.players[0], "client_seed": "late"}
    for body in (seed, {"type": "start", "account_id": cantina.vigo}):
        problem = cantina.assert_refused(partial(cantina.action, body), 409, code="game_over")
        assert problem["phase"] == "cancelled"
        assert problem["game"]["status"] == "cancelled"


def _posts(c: Cantina) -> list[str]:
    return [
        "/v1/accounts",
        f"/v1/accounts/{c.bystander}/deposits",
        f"/v1/accounts/{c.bystander}/withdrawals",
        "/v1/games",
        f"/v1/games/{c.game_id}/actions",
        "/v1/tables",
    ]


def test_malformed_json_is_400_on_every_post(cantina: Cantina) -> None:
    for path in _posts(cantina):
        for raw in (b'{"amount": 1,', b"{'amount': 1}", b"\xff\xfe", b"nul"):
            problem = cantina.assert_refused(
                partial(cantina.api.post, path, content=raw, headers={"content-type": "application/json"}),
                400,
                code="malformed_json",
            )
            assert_names_field(problem, "body")


def test_oversized_bodies_are_413_on_every_post(cantina: Cantina) -> None:
    padding = "x" * (64 * 1024)
    for path in _posts(cantina):
        problem = cantina.assert_refused(
            partial(cantina.api.post, path, {"amount": 1, "reference": padding}),
            413,
            code="payload_too_large",
        )
        assert_names_field(problem, "body")


def test_a_number_too_long_to_parse_is_refused_naming_the_body(cantina: Cantina) -> None:
    raw = b'{"amount": 1' + b"0" * 5000 + b"}"
    problem = cantina.assert_refused(
        lambda: cantina.api.post(
            f"/v1/accounts/{cantina.bystander}/deposits",
            content=raw,
            headers={"content-type": "application/json"},
        ),
        400,
        code="malformed_json",
    )
    assert_names_field(problem, "body")


def test_bad_query_parameters_are_422_naming_them(cantina: Cantina) -> None:
    lists = [f"/v1/accounts/{cantina.vigo}/transactions", f"/v1/games/{cantina.game_id}/events"]
    cases: list[tuple[str, dict[str, Any], str]] = []
    for path in lists:
        cases += [
            (path, {"limit": 0}, "query.limit"),
            (path, {"limit": 101}, "query.limit"),
            (path, {"limit": 1000}, "query.limit"),
            (path, {"limit": "ten"}, "query.limit"),
            (path, {"starting_after": "c" * 101}, "query.starting_after"),
        ]
    cases += [
        (f"/v1/games/{cantina.game_id}/events", {"starting_after": "abc"}, "query.starting_after"),
        ("/v1/ledger/export", {"format": "xml"}, "query.format"),
        ("/v1/ledger/export", {"from_seq": 0}, "query.from_seq"),
        ("/v1/ledger/export", {"to_seq": "last"}, "query.to_seq"),
        ("/v1/ledger/trial-balance", {"currency": "cr"}, "query.currency"),
    ]
    for path, params, name in cases:
        try:
            cantina.assert_refused(partial(cantina.api.get, path, params=params), 422, field=name)
        except AssertionError as error:
            raise AssertionError(f"{path} {params}: {error}") from error


def test_a_bad_transactions_cursor_is_422_naming_it(cantina: Cantina) -> None:
    cantina.assert_refused(
        lambda: cantina.api.get(
            f"/v1/accounts/{cantina.vigo}/transactions", params={"starting_after": "abc"}
        ),
        422,
        field="query.starting_after",
    )


def test_unknown_ids_in_paths_are_404(cantina: Cantina) -> None:
    for path in (
        f"/v1/games/{UNKNOWN_GAME}",
        f"/v1/games/{UNKNOWN_GAME}/events",
        f"/v1/games/{UNKNOWN_GAME}/proof",
    ):
        cantina.assert_refused(partial(cantina.api.get, path), 404, code="not_found")
    cantina.assert_refused(
        lambda: cantina.api.post(f"/v1/games/{UNKNOWN_GAME}/actions", {"type": "cancel"}),
        404,
        code="not_found",
    )
    cantina.assert_refused(
        lambda: cantina.api.get(f"/v1/accounts/{UNKNOWN_ACCOUNT}"), 404, code="account_not_found"
    )


def test_nul_characters_are_refused_naming_the_field(cantina: Cantina) -> None:
    """PostgreSQL text cannot hold U+0000: every way in refuses it as bad input, never a 500."""
    nul = "a\x00b"
    for path, body, field in (
        (f"/v1/accounts/{cantina.vigo}/deposits", {"amount": 1, "reference": nul}, "body.reference"),
        (f"/v1/accounts/{cantina.vigo}/withdrawals", {"amount": 1, "reference": nul}, "body.reference"),
        ("/v1/accounts", {"external_id": nul}, "body.external_id"),
        (
            "/v1/games",
            {"vigo_account_id": nul, "player_account_ids": cantina.players, "stake": 1},
            "body.vigo_account_id",
        ),
        ("/v1/tables", {"account_ids": [nul, *cantina.players], "stake": 1}, "body.account_ids.0"),
    ):
        try:
            cantina.assert_refused(
                partial(cantina.api.post, path, body, headers=money_key()), 422, field=field
            )
        except AssertionError as error:
            raise AssertionError(f"{path} {body}: {error}") from error
    cantina.assert_refused(
        lambda: cantina.api.get(f"/v1/accounts/{cantina.vigo}/transactions", params={"starting_after": nul}),
        422,
        field="query.starting_after",
    )
    for path, field in (("/v1/accounts/acct_%00", "path.account_id"), ("/v1/games/game_%00", "path.game_id")):
        cantina.assert_refused(partial(cantina.api.get, path), 422, field=field)
    cantina.assert_refused(
        lambda: cantina.api.deposit(cantina.vigo, 1, metadata={nul: "x"}),
        422,
        field=f"body.metadata.{nul}.[key]",
    )
