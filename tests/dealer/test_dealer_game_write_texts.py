"""game_write() stores the texts its document carries as they are: a game's state, an event's payload, an
outbox body, member order and spacing included. Since 0024_game_write_checks it reads the document into
composite types (json_populate_record), whose `json` members are the document's own substrings; this holds
it to that on one step written straight to the function.
"""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from support.game_play import Api, new_tenant_key

STATE = '{ "z" : 1,\n  "a":[ 2 , 3 ] }'
PAYLOAD = '{"kind" : "noted",  "b":1, "a" : {"y":null , "x":"\\u00e9"}}'


def test_the_texts_of_a_step_are_stored_as_the_document_has_them(
    client: TestClient, sessions: sessionmaker[Session], engine: Engine
) -> None:
    api = Api(client, new_tenant_key(sessions))
    vigo, han = api.wallet(100), api.wallet(100)
    game_id = api.create_game(vigo, [han], stake=5)["id"]
    with engine.connect() as connection:
        tenant, row = connection.execute(
            text("SELECT tenant_id, row_to_json(game)::text FROM game WHERE id = :game"), {"game": game_id}
        ).one()
    game = json.loads(row)
    step_game = {key: game[key] for key in ("status", "revealed_server_seed", "game_client_seed", "proof")}
    step_game |= {"version": game["version"] + 1, "event_count": game["event_count"] + 1}
    step_game |= {key: game[key] for key in ("turn_deadline_at", "started_at", "ended_at")}
    # The document's text as a client could send it: the state and the payload spliced in verbatim.
    game_text = json.dumps(step_game)[:-1] + ', "state": ' + STATE + "}"
    seq = str(game["event_count"] + 1)
    event = (
        '{"seq": '
        + seq
        + ', "kind": "noted", "payload": '
        + PAYLOAD
        + ', "occurred_at": "2026-12-06T12:00:00Z"}'
    )
    message = json.dumps(
        {
            "id": "evt_texts",
            "type": "game.updated",
            "ordering_key": game_id,
            "body": PAYLOAD,
            "occurred_at": "2026-12-06T12:00:00Z",
        }
    )
    step = (
        f'{{"game_id": "{game_id}", "previous_version": {game["version"]}, "game": {game_text}, "seats": [], '
        f'"events": [{event}], "rolls": [], "batch": null, "money": []}}'
    )
    document = f'{{"version": 1, "steps": [{step}], "outbox": [{message}], "answer": null}}'
    with engine.begin() as connection:
        connection.execute(
            text("SELECT game_write(:tenant, CAST(:document AS json))"),
            {"tenant": tenant, "document": document},
        )
    with engine.connect() as connection:
        state = connection.scalar(text("SELECT state::text FROM game WHERE id = :game"), {"game": game_id})
        payload = connection.scalar(
            text("SELECT payload::text FROM game_event WHERE game_id = :game AND seq = :seq"),
            {"game": game_id, "seq": game["event_count"] + 1},
        )
        body = connection.scalar(text("SELECT body FROM webhook_event WHERE id = 'evt_texts'"))
    assert (state, payload, body) == (STATE, PAYLOAD, PAYLOAD)
