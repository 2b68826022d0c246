"""`pokna-verify proof LINK` with no `--log`: the place in the public log a finished game's link carries is
checked offline (the checkpoint's signature with the keys that check the proof, the leaf rebuilt from the
proof, the audit path to the signed root): game #N of the origin's log; pending is said and fails nothing;
a changed path hash or an unsigned checkpoint fails the verification."""

from __future__ import annotations

import base64
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna.public_log.sequencer import LogSigner
from pokna.runtime import Runtime
from pokna_verify.cli import main
from support.game_logs import ORIGIN_PREFIX, Table, open_table, sequence_all


def verifier(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue() + err.getvalue()


def saved_link(client: TestClient, table: Table, game_id: str, path: Path) -> dict[str, Any]:
    game = table.api.ok(table.api.get(f"/v1/games/{game_id}"))
    link: dict[str, Any] = client.get(game["fairness"]["public_url"]).json()
    path.write_text(json.dumps(link))
    return link


def check(link: Path, keys: Path) -> tuple[int, str]:
    return verifier("proof", str(link), "--keys", str(keys))


def test_the_link_alone_proves_the_game_is_game_n_of_its_log(
    client: TestClient, sessions: sessionmaker[Session], runtime: Runtime, tmp_path: Path
) -> None:
    table = open_table(client, sessions)
    signer = LogSigner(ORIGIN_PREFIX, runtime.keys.signing_key)
    keys = tmp_path / "keys.json"
    keys.write_text(client.get("/v1/fairness/keys").text)
    link = tmp_path / "link.json"
    table.finish_games(1)
    sequence_all(runtime.aio, signer)
    (game_id,) = table.finish_games(1)
    saved_link(client, table, game_id, link)
    code, said = check(link, keys)
    assert code == 0, said
    assert f"public log: NOT LOGGED YET: game {game_id} is not in its tenant's public log yet" in said

    sequence_all(runtime.aio, signer)
    document = saved_link(client, table, game_id, link)
    code, said = check(link, keys)
    origin = f"{ORIGIN_PREFIX}/{table.tenant_id}"
    assert code == 0, said
    assert (
        f"public log: INCLUDED: game #2 of {origin}'s public log, proven in its signed checkpoint of 2"
        in said
    )
    state = tmp_path / "witness.json"
    code, said = verifier("proof", str(link), "--keys", str(keys), "--state", str(state))
    assert code == 0, said
    assert json.loads(state.read_text())["logs"][origin]["checkpoint"] == document["public_log"]["checkpoint"]

    place = document["public_log"]
    first = base64.b64decode(place["inclusion_path"][0])
    place["inclusion_path"][0] = base64.b64encode(bytes([first[0] ^ 1]) + first[1:]).decode()
    link.write_text(json.dumps(document))
    code, said = check(link, keys)
    assert code == 1, said
    assert "public log: FAILED: the log's inclusion proof fails" in said

    document["public_log"] = {**place, "checkpoint": place["checkpoint"].replace("\n2\n", "\n3\n", 1)}
    link.write_text(json.dumps(document))
    code, said = check(link, keys)
    assert code == 1, said
    assert "public log: FAILED: the checkpoint the link carries is not signed" in said
