"""`pokna verify` and `pokna-verify proof` on a game's public proof link, against a real HTTP server on 127.0.0.1.

The stand-in serves what the service does at `/v1/fairness/proofs/{token}` (link documents), `/v1/fairness/keys`
(the key ring) and a 404 problem for a wrong token, plus the pending answer of `/v1/games/{id}/proof` and a few
broken answers. Every proof, receipt and key comes from the real code (fairness_samples); nothing is mocked.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fairness_samples import (
    CHECKS,
    GAME_ID,
    KEY_RING,
    NEW_KEY,
    OLD_KEY,
    STRANGER_KEY,
    sample_proof,
    sample_receipt,
)

from pokna_verify.crypto.signing import public_key_to_pem, sign_document
from pokna_verify.fairness.protocol import server_seed_hash
from pokna_verify.fairness.receipt import build_commitment_receipt
from pokna_verify.fairness.terms import GameTerms, SeatAccount
from support.verify_cli import VerifyCli

SETTLED = "settled-game-token-aaaaaaaaaaaaaaaaaaaaaaaa"
OPEN = "open-game-token-bbbbbbbbbbbbbbbbbbbbbbbbbbbb"
FORGED_FACE = "forged-face-token-cccccccccccccccccccccccc"
EDITED_PAYOUT = "edited-payout-token-dddddddddddddddddddddd"
OTHER_RECEIPT = "other-receipt-token-eeeeeeeeeeeeeeeeeeeeee"
BAD_SEED = "bad-seed-token-ffffffffffffffffffffffffffff"
STRANGER_RECEIPT = "stranger-token-gggggggggggggggggggggggggg"
BROKEN_KEYS = "broken-keys-token-hhhhhhhhhhhhhhhhhhhhhhhh"
FILE_KEYS = "file-keys-token-iiiiiiiiiiiiiiiiiiiiiiiiiiii"

SEEDS_SO_FAR = [
    {"seat": 0, "account_id": "acct-vigo", "client_seed": "vigo-seed", "source": "player"},
    {"seat": 1, "account_id": "acct-alice", "client_seed": "alice.1", "source": "player"},
    {"seat": 2, "account_id": "acct-bob", "client_seed": None, "source": None},
]


def link_of(
    proof: dict[str, Any] | None,
    receipt: dict[str, Any] | None,
    status: str = "settled",
    client_seeds: list[dict[str, Any]] | None = None,
    keys_url: str = "/v1/fairness/keys",
) -> dict[str, Any]:
    """A link document exactly as the contract describes it."""
    return {
        "object": "fairness_link",
        "game_id": GAME_ID,
        "status": status,
        "revealed": proof is not None,
        "commitment": receipt,
        "client_seeds": proof["client_seeds"] if proof is not None else (client_seeds or SEEDS_SO_FAR),
        "proof": proof,
        "keys_url": keys_url,
    }


def other_receipt() -> dict[str, Any]:
    """Properly signed, but committing to another seed: what a substituted commitment looks like."""
    return build_commitment_receipt(
        game_id=GAME_ID,
        server_seed_hash=server_seed_hash("0" * 64),
        created_at="2025-01-01T12:00:00Z",
        terms=GameTerms.of(100, 50, [SeatAccount(0, "acct-vigo")]),
        private_key=NEW_KEY,
    )


def forged_face() -> dict[str, Any]:
    proof = copy.deepcopy(sample_proof())
    proof["rolls"][3]["face"] = proof["rolls"][3]["face"] % 6 + 1
    return sign_document(proof, NEW_KEY)  # re-signed: the operator's own key cannot make a wrong face right


def edited_payout() -> dict[str, Any]:
    proof = copy.deepcopy(sample_proof())
    proof["transfers"][-1]["amount"] += 1
    return proof  # not re-signed: someone edited a published proof


@dataclass
class StandIn:
    """What the service answers, path by path; `requests` records every path asked for."""

    links: dict[str, dict[str, Any]]
    routes: dict[str, tuple[int, str, bytes]] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)
    origin: str = ""
    release: threading.Event = field(default_factory=threading.Event)

    def answer(self, path: str) -> tuple[int, str, bytes]:
        self.requests.append(path)
        if path in self.routes:
            return self.routes[path]
        prefix = "/v1/fairness/proofs/"
        if path.startswith(prefix) and path[len(prefix) :] in self.links:
            return 200, "application/json", json.dumps(self.links[path[len(prefix) :]]).encode()
        problem = {
            "type": "about:blank",
            "title": "Not found",
            "status": 404,
            "detail": "No proof link has this token.",
            "code": "not_found",
        }
        return 404, "application/problem+json", json.dumps(problem).encode()

    def url(self, path: str) -> str:
        return f"{self.origin}{path}"

    def link(self, token: str) -> str:
        return self.url(f"/v1/fairness/proofs/{token}")


@pytest.fixture(scope="module")
def stand_in() -> Iterator[StandIn]:
    receipt = sample_receipt()
    site = StandIn(
        links={
            SETTLED: link_of(sample_proof(), receipt),
            OPEN: link_of(None, receipt, "in_progress"),
            FORGED_FACE: link_of(forged_face(), receipt),
            EDITED_PAYOUT: link_of(edited_payout(), receipt),
            OTHER_RECEIPT: link_of(sample_proof(), other_receipt()),
            BAD_SEED: link_of(
                None, receipt, "open", [{**SEEDS_SO_FAR[0], "client_seed": "vigo seed!"}, *SEEDS_SO_FAR[1:]]
            ),
            STRANGER_RECEIPT: link_of(None, sample_receipt(STRANGER_KEY), "open"),
            BROKEN_KEYS: link_of(sample_proof(), receipt, keys_url="/broken"),
            FILE_KEYS: link_of(sample_proof(), receipt, keys_url="file:///etc/hostname"),
        },
        routes={
            "/v1/fairness/keys": (200, "application/json", json.dumps(KEY_RING.to_json()).encode()),
            f"/v1/games/{GAME_ID}/proof": (
                200,
                "application/json",
                json.dumps(
                    {"game_id": GAME_ID, "status": "in_progress", "revealed": False, "commitment": receipt}
                ).encode(),
            ),
            "/broken": (
                500,
                "application/problem+json",
                json.dumps({"type": "about:blank", "title": "Internal Server Error", "status": 500}).encode(),
            ),
            "/page": (200, "text/html", b"<!doctype html><p>Welcome to the casino</p>"),
        },
    )

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/silent":
                site.requests.append(self.path)
                site.release.wait(timeout=30)  # never answers while the client waits
                return
            status, content_type, body = site.answer(self.path)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    site.origin = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield site
    finally:
        site.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(KEY_RING.to_json()))
    return path


def rows(output: str) -> dict[str, str]:
    """Each check's row: name -> status as printed (PASS, FAIL, NOT RUN)."""
    found = {}
    for line in output.splitlines():
        for status in ("PASS", "FAIL", "NOT RUN"):
            if line.startswith(f"  {status} "):
                found[line[len(f"  {status} ") :].split()[0]] = status
    return found


def saved(tmp_path: Path, name: str, document: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def fetched(stand_in: StandIn, path: str) -> dict[str, Any]:
    import urllib.request

    with urllib.request.urlopen(stand_in.url(path), timeout=10) as response:
        document: dict[str, Any] = json.loads(response.read())
    return document


# ---- settled, tampered --------------------------------------------------------------------------------------


def test_a_settled_link_is_valid_with_every_check_run(verify_cli: VerifyCli, stand_in: StandIn) -> None:
    stand_in.requests.clear()
    result = verify_cli("verify", stand_in.link(SETTLED))
    assert result.exit_code == 0, result.output
    assert rows(result.output) == dict.fromkeys(CHECKS, "PASS")
    assert result.output.splitlines()[-1] == "VALID"
    assert "receipt  the one served with the link" in result.output
    assert (
        f"the operator's published key ring, fetched from {stand_in.url('/v1/fairness/keys')}"
        in result.output
    )
    assert stand_in.requests == [f"/v1/fairness/proofs/{SETTLED}", "/v1/fairness/keys"]


def test_a_forged_roll_in_the_link_is_invalid(verify_cli: VerifyCli, stand_in: StandIn) -> None:
    result = verify_cli("verify", stand_in.link(FORGED_FACE))
    assert result.exit_code == 1, result.output
    assert "roll nonce 3: face" in result.output
    assert rows(result.output)["rolls"] == "FAIL"
    assert rows(result.output)["signature"] == "PASS"  # signed by the operator, and still caught
    assert result.output.splitlines()[-1].startswith("INVALID: failed checks: rolls")


def test_an_edited_payout_in_the_link_is_invalid(verify_cli: VerifyCli, stand_in: StandIn) -> None:
    result = verify_cli("verify", stand_in.link(EDITED_PAYOUT), "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert (report["verdict"], report["valid"]) == ("invalid", False)
    assert [check["name"] for check in report["checks"] if check["status"] == "fail"] == [
        "signature",
        "replay",
    ]


# ---- not revealed yet ---------------------------------------------------------------------------------------


def test_an_unsettled_link_is_not_revealed_yet(verify_cli: VerifyCli, stand_in: StandIn) -> None:
    result = verify_cli("verify", stand_in.link(OPEN))
    assert result.exit_code == 3, result.output
    lines = result.output.splitlines()
    verdict = lines.index(
        f"NOT REVEALED YET: game {GAME_ID} is in_progress; the server seed stays secret until it ends"
    )
    assert lines[verdict + 1].split() == ["server_seed_hash", sample_receipt()["server_seed_hash"]]
    assert lines[verdict + 2].split() == ["committed", "at", "2025-01-01T12:00:00Z"]
    checked = rows(result.output)
    assert checked.pop("receipt") == "PASS"  # its signature, with the key ring the link names
    assert checked.pop("client_seed_format") == "PASS"
    assert checked == dict.fromkeys(checked, "NOT RUN")
    assert "2 of 3 seats have a client seed so far, each well formed" in result.output


def test_an_unsettled_link_as_json(verify_cli: VerifyCli, stand_in: StandIn) -> None:
    result = verify_cli("verify", stand_in.link(OPEN), "--json")
    assert result.exit_code == 3, result.output
    report = json.loads(result.output)
    assert report["verdict"] == "not_revealed"
    assert report["valid"] is None
    assert report["commitment"] == {
        "server_seed_hash": sample_receipt()["server_seed_hash"],
        "created_at": "2025-01-01T12:00:00Z",
    }
    assert [check["name"] for check in report["checks"]] == list(CHECKS)


def test_a_malformed_client_seed_before_the_reveal_is_invalid(
    verify_cli: VerifyCli, stand_in: StandIn
) -> None:
    result = verify_cli("verify", stand_in.link(BAD_SEED))
    assert result.exit_code == 1, result.output
    assert "seat 0: a client seed uses only A-Z a-z 0-9 . _ ~ -, not ' '" in result.output
    assert result.output.splitlines()[-1] == "INVALID: failed checks: client_seed_format"


def test_a_receipt_signed_by_an_unknown_key_before_the_reveal_is_invalid(
    verify_cli: VerifyCli, stand_in: StandIn
) -> None:
    result = verify_cli("verify", stand_in.link(STRANGER_RECEIPT))
    assert result.exit_code == 1, result.output
    assert "is not in the key ring" in result.output
    assert result.output.splitlines()[-1] == "INVALID: failed checks: receipt"


def test_the_pending_proof_answer_is_not_revealed_yet(
    verify_cli: VerifyCli, stand_in: StandIn, tmp_path: Path, keys_file: Path
) -> None:
    pending = saved(tmp_path, "pending.json", fetched(stand_in, f"/v1/games/{GAME_ID}/proof"))
    for source in (stand_in.url(f"/v1/games/{GAME_ID}/proof"), str(pending)):
        result = verify_cli("verify", source, "--keys", str(keys_file))
        assert result.exit_code == 3, result.output
        assert "$.protocol" not in result.output
        assert f"NOT REVEALED YET: game {GAME_ID} is in_progress;" in result.output
        assert rows(result.output)["receipt"] == "PASS"
        assert rows(result.output)["client_seed_format"] == "NOT RUN"
        assert "this answer lists no client seeds (the game's public link does)" in result.output


def test_without_keys_the_receipt_signature_is_not_run_and_says_why(
    verify_cli: VerifyCli, tmp_path: Path
) -> None:
    pending = {"game_id": GAME_ID, "status": "open", "revealed": False, "commitment": sample_receipt()}
    result = verify_cli("verify", str(saved(tmp_path, "pending.json", pending)))
    assert result.exit_code == 3, result.output
    assert rows(result.output)["receipt"] == "NOT RUN"
    assert "the receipt is well formed, but its signature was not checked: no key ring" in result.output


# ---- every form of the link a player holds -------------------------------------------------------------------


def test_the_browser_link_verifies_as_the_public_link_does(verify_cli: VerifyCli, stand_in: StandIn) -> None:
    """Players are handed `fairness.verify_url`, the browser page's link: it names the same link document."""
    link = stand_in.link(SETTLED)
    for page in (
        f"/verify?proof={SETTLED}",
        f"/verify?proof=/v1/fairness/proofs/{SETTLED}",
        f"/verify?proof={link}",
        f"/verify?proof={stand_in.url(f'/verify?proof={SETTLED}')}",
    ):
        stand_in.requests.clear()
        result = verify_cli("verify", stand_in.url(page))
        assert result.exit_code == 0, f"{page}: {result.output}"
        assert result.output.splitlines()[-1] == "VALID"
        assert f"  fetched  {link}" in result.output
        assert stand_in.requests == [f"/v1/fairness/proofs/{SETTLED}", "/v1/fairness/keys"]
    unsettled = verify_cli("verify", stand_in.url(f"/verify?proof={OPEN}"), "--json")
    assert unsettled.exit_code == 3, unsettled.output
    assert json.loads(unsettled.output)["source"]["read"] == stand_in.link(OPEN)


def test_a_bare_token_or_a_relative_link_is_fetched_from_the_server_named(
    verify_cli: VerifyCli, stand_in: StandIn
) -> None:
    for held in (SETTLED, f"/verify?proof={SETTLED}", f"/v1/fairness/proofs/{SETTLED}"):
        stand_in.requests.clear()
        result = verify_cli("verify", held, "--server", stand_in.origin)
        assert result.exit_code == 0, f"{held}: {result.output}"
        assert stand_in.requests == [f"/v1/fairness/proofs/{SETTLED}", "/v1/fairness/keys"]


@pytest.mark.parametrize(
    ("held", "server", "message"),
    [
        (SETTLED, None, "is a proof token or a link without its site: give the whole link"),
        (f"/verify?proof={SETTLED}", None, "or the site it came from with --server https://host"),
        (SETTLED, "host.example", "--server 'host.example' is not an http(s) URL"),
        (SETTLED, "http://[::1", "--server 'http://[::1' is no address (Invalid IPv6 URL)"),
        (
            f"/verify?proof={SETTLED}",
            "http://[::1",
            "--server 'http://[::1' is no address (Invalid IPv6 URL)",
        ),
        ("{origin}/verify", None, "is the browser verifier with no ?proof=: give the game's link"),
        ("{origin}/verify?proof=not a token", None, "?proof='not a token' is neither a proof token"),
        (
            "{origin}/verify?proof=https://elsewhere.example/v1/fairness/proofs/" + SETTLED,
            None,
            "is on another site than the page that names it",
        ),
    ],
)
def test_a_link_that_cannot_be_followed_says_what_to_give(
    verify_cli: VerifyCli, stand_in: StandIn, held: str, server: str | None, message: str
) -> None:
    stand_in.requests.clear()
    result = verify_cli(
        "verify", held.format(origin=stand_in.origin), *(["--server", server] if server else [])
    )
    assert result.exit_code == 2, result.output
    [line] = result.output.splitlines()
    assert line.startswith("UNUSABLE INPUT: ")
    assert message in line
    assert stand_in.requests == []


# ---- wrong token, saved copies ----------------------------------------------------------------------------


def test_a_wrong_token_is_no_such_proof_link(verify_cli: VerifyCli, stand_in: StandIn) -> None:
    url = stand_in.link("no-such-token-zzzzzzzzzzzzzzzzzzzzzzzzzzz")
    result = verify_cli("verify", url)
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"UNUSABLE INPUT: no such proof link: {url} answered HTTP 404: No proof link has this token."
    )
    report = json.loads(verify_cli("verify", url, "--json").output)
    assert report["verdict"] == "unusable"
    assert report["error"].startswith("no such proof link")


def test_a_saved_link_document_verifies_as_the_url_does(
    verify_cli: VerifyCli, stand_in: StandIn, tmp_path: Path, keys_file: Path
) -> None:
    for token in (SETTLED, FORGED_FACE, OPEN):
        by_url = verify_cli("verify", stand_in.link(token), "--json")
        document = saved(tmp_path, f"{token}.json", fetched(stand_in, f"/v1/fairness/proofs/{token}"))
        by_file = verify_cli("verify", str(document), "--keys", str(keys_file), "--json")
        assert by_file.exit_code == by_url.exit_code, by_file.output
        from_url, from_file = json.loads(by_url.output), json.loads(by_file.output)
        assert from_file["verdict"] == from_url["verdict"]
        assert from_file["checks"] == from_url["checks"]


def test_a_saved_link_without_keys_is_partly_verified(
    verify_cli: VerifyCli, stand_in: StandIn, tmp_path: Path
) -> None:
    document = saved(tmp_path, "link.json", fetched(stand_in, f"/v1/fairness/proofs/{SETTLED}"))
    result = verify_cli("verify", str(document))
    assert result.exit_code == 4, result.output
    assert rows(result.output)["signature"] == "NOT RUN"
    assert result.output.splitlines()[-1].startswith(
        "PARTLY VERIFIED: nothing failed, but not every check ran: signature (a saved link has no origin to "
        "fetch its keys_url from"
    )


# ---- which receipt, which keys ------------------------------------------------------------------------------


def test_a_given_receipt_wins_over_the_links(
    verify_cli: VerifyCli, stand_in: StandIn, tmp_path: Path
) -> None:
    mine = saved(tmp_path, "mine.json", sample_receipt())
    served_is_wrong = verify_cli("verify", stand_in.link(OTHER_RECEIPT))
    assert served_is_wrong.exit_code == 1, served_is_wrong.output
    assert "receipt server_seed_hash is" in served_is_wrong.output
    result = verify_cli("verify", stand_in.link(OTHER_RECEIPT), "--receipt", str(mine))
    assert result.exit_code == 0, result.output
    assert f"receipt  yours, {mine} (given, so the one the link serves is not used)" in result.output
    assert rows(result.output)["receipt"] == "PASS"


def test_a_given_receipt_that_disagrees_with_the_proof_is_invalid(
    verify_cli: VerifyCli, stand_in: StandIn, tmp_path: Path
) -> None:
    theirs = saved(tmp_path, "other.json", other_receipt())
    result = verify_cli("verify", stand_in.link(SETTLED), "--receipt", str(theirs))
    assert result.exit_code == 1, result.output
    assert result.output.splitlines()[-1] == "INVALID: failed checks: receipt"


def test_a_given_receipt_that_disagrees_with_an_unsettled_links_commitment_is_invalid(
    verify_cli: VerifyCli, stand_in: StandIn, tmp_path: Path
) -> None:
    theirs = saved(tmp_path, "other.json", other_receipt())
    result = verify_cli("verify", stand_in.link(OPEN), "--receipt", str(theirs))
    assert result.exit_code == 1, result.output
    assert "the game's commitment is now" in result.output


def test_keys_the_user_gives_are_used_instead_of_the_links(
    verify_cli: VerifyCli, stand_in: StandIn, tmp_path: Path
) -> None:
    old = saved(tmp_path, "unused.json", {})
    old.write_bytes(public_key_to_pem(OLD_KEY.public_key()))
    stand_in.requests.clear()
    result = verify_cli("verify", stand_in.link(SETTLED), "--public-key", str(old))
    assert result.exit_code == 1, result.output
    assert f"keys     the public key in {old} (--public-key)" in result.output
    assert rows(result.output)["signature"] == "FAIL"
    assert stand_in.requests == [f"/v1/fairness/proofs/{SETTLED}"]


def test_a_links_key_ring_that_cannot_be_fetched_leaves_the_signature_not_run(
    verify_cli: VerifyCli, stand_in: StandIn
) -> None:
    result = verify_cli("verify", stand_in.link(BROKEN_KEYS))
    assert result.exit_code == 4, result.output
    assert rows(result.output)["signature"] == "NOT RUN"
    assert (
        f"the link's key ring is unusable (cannot fetch the key ring from {stand_in.url('/broken')}: "
        "it answered HTTP 500: Internal Server Error)" in result.output
    )
    assert result.output.splitlines()[-1].startswith(
        "PARTLY VERIFIED: nothing failed, but not every check ran: signature ("
    )


def test_a_links_keys_url_is_fetched_only_over_http(verify_cli: VerifyCli, stand_in: StandIn) -> None:
    result = verify_cli("verify", stand_in.link(FILE_KEYS))
    assert result.exit_code == 4, result.output
    assert rows(result.output)["signature"] == "NOT RUN"
    assert "the key ring URL file:///etc/hostname is not http(s)" in result.output


# ---- what cannot be used -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/broken", "cannot fetch the proof from {url}: it answered HTTP 500: Internal Server Error"),
        ("/page", "{url} did not answer with JSON (text/html): not a proof"),
        ("/v1/fairness/keys", '{url}: neither a proof ("document": "proof"), a public proof link'),
    ],
)
def test_a_url_that_gives_no_proof_is_unusable_in_one_line(
    verify_cli: VerifyCli, stand_in: StandIn, path: str, message: str
) -> None:
    url = stand_in.url(path)
    result = verify_cli("verify", url)
    assert result.exit_code == 2, result.output
    [line] = result.output.splitlines()
    assert line.startswith(f"UNUSABLE INPUT: {message.format(url=url)}")


def test_a_silent_server_times_out_after_ten_seconds(verify_cli: VerifyCli, stand_in: StandIn) -> None:
    url = stand_in.url("/silent")
    started = time.monotonic()
    result = verify_cli("verify", url)
    waited = time.monotonic() - started
    assert result.exit_code == 2, result.output
    assert (
        result.output.strip() == f"UNUSABLE INPUT: cannot fetch the proof from {url}: no answer within 10 s"
    )
    assert 9.5 <= waited < 30


@pytest.mark.parametrize(
    "command",
    [["-c", "from pokna.cli import main; main()", "verify"], ["-m", "pokna_verify", "proof"]],
    ids=["pokna", "pokna-verify"],
)
def test_an_unreachable_url_is_unusable_with_no_traceback(command: list[str]) -> None:
    """Run as the installed commands run, so nothing but our own handling stands between the error and
    the terminal."""
    url = "http://127.0.0.1:1/v1/fairness/proofs/any-token-aaaaaaaaaaaaaaaaaaaaaaaaaaaa"
    for extra in ([], ["--json"]):
        finished = subprocess.run(
            [sys.executable, *command, url, *extra],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert finished.returncode == 2, finished.stderr
        assert "Traceback" not in finished.stdout + finished.stderr
        if extra:
            assert json.loads(finished.stdout)["verdict"] == "unusable"
            assert f"cannot fetch the proof from {url}" in json.loads(finished.stdout)["error"]
        else:
            assert finished.stdout == ""
            [line] = finished.stderr.splitlines()
            assert line.startswith(f"UNUSABLE INPUT: cannot fetch the proof from {url}: ")
            assert "refused" in line


@pytest.mark.parametrize("url", ["http://", "http://[::1", "http://127.0.0.1:1/\u00fc"])
def test_a_malformed_url_is_unusable_in_one_line(verify_cli: VerifyCli, url: str) -> None:
    result = verify_cli("verify", url)
    assert result.exit_code == 2, result.output
    [line] = result.output.splitlines()
    assert line.startswith(f"UNUSABLE INPUT: cannot fetch the proof from {url}: ")
