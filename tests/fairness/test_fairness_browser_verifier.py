"""The verifier page in headless Chromium: how it loads a proof, what it shows, and that it never passes a
check it did not run.

A stand-in site (support.browser.Site) serves the page as the service does (`/verify`, `/verify.js` and the
modules it imports: its parts under `/verify/`, the checking core under `/pokna-verify/`), as plain static
files (`/static/verify.html`), the key ring and public proof links
(`/v1/fairness/proofs/{token}`). One Chromium serves the module; the tests read the page's DOM.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path as FilePath
from typing import Any
from urllib.parse import quote, urljoin

import httpx
import pytest
from fairness_samples import (
    CHECKS,
    KEY_RING,
    NEW_KEY,
    QUICKNET_INFO,
    QUICKNET_ROUNDS,
    VECTORS,
    sample_beacon_proof,
    sample_beacon_receipt,
    sample_proof,
    sample_receipt,
)
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from pokna_verify.crypto.signing import sign_document
from pokna_verify.fairness.beacon import QUICKNET, BeaconChain
from pokna_verify.fairness.proof_replay import replay_proof
from pokna_verify.fairness.verification import CheckStatus, verify_proof
from support.beacon_server import BeaconKey, BeaconRelay, beacon_relay
from support.browser import CORE_ROOT, STATIC_ROOT, Browser, Site, browser_session, page_file, serving
from support.game_play import Api, new_tenant_key, play
from support.servers import free_port, running_server

pytestmark = pytest.mark.xdist_group("browser")

TOKEN = "settled-Game-0001-token-aaaaaaaaaaaaaaaa"
OPEN_TOKEN = "open-game-token-bbbbbbbbbbbbbbbbbbbbbbbb"
CANCELLED_TOKEN = "cancelled-game-token-cccccccccccccccccccc"


def link_of(proof: dict[str, Any] | None, receipt: dict[str, Any], status: str = "settled") -> dict[str, Any]:
    seeds = (
        proof["client_seeds"]
        if proof
        else [{"seat": 0, "account_id": "acct-vigo", "client_seed": "vigo-seed", "source": "player"}]
    )
    return {
        "object": "fairness_link",
        "game_id": receipt["game_id"],
        "status": status,
        "revealed": proof is not None,
        "commitment": receipt,
        "client_seeds": seeds,
        "proof": proof,
        "keys_url": "/v1/fairness/keys",
    }


def forged(edit: Any) -> dict[str, Any]:
    proof = copy.deepcopy(sample_proof())
    edit(proof)
    return sign_document(proof, NEW_KEY)


def _face(proof: dict[str, Any]) -> None:
    proof["rolls"][3]["face"] = proof["rolls"][3]["face"] % 6 + 1


def _payout(proof: dict[str, Any]) -> None:
    proof["transfers"][-1]["amount"] += 1


def _seed(proof: dict[str, Any]) -> None:
    proof["client_seeds"][1]["client_seed"] = "alice.2"


def _gap(proof: dict[str, Any]) -> None:
    del proof["rolls"][2]


def _hash(proof: dict[str, Any]) -> None:
    proof["server_seed_hash"] = "0" * 64


def _cancelled_proof() -> dict[str, Any]:
    proof = {
        **sample_proof(),
        "rolls": [],
        "transfers": [],
        "outcome": {"reason": "cancelled", "payouts": []},
    }
    proof["actions"] = [{"action": "cancel", "balances": {"0": 0, "1": 0, "2": 0}}]
    return sign_document(proof, NEW_KEY)


def _edited_face() -> dict[str, Any]:
    proof = copy.deepcopy(sample_proof())
    _face(proof)
    return proof  # not re-signed: someone edited a published proof


FORGERIES = {
    "edited-face": _edited_face(),
    "forged-face": forged(_face),
    "forged-payout": forged(_payout),
    "forged-client-seed": forged(_seed),
    "forged-nonces": forged(_gap),
    "forged-commitment": forged(_hash),
}


def beacon_forged(edit: Any) -> dict[str, Any]:
    proof = copy.deepcopy(sample_beacon_proof())
    del proof["signature"], proof["key_id"]
    edit(proof)
    return sign_document(proof, NEW_KEY)


def _swap_round(proof: dict[str, Any]) -> None:
    proof["rolls"][1]["beacon"] = QUICKNET_ROUNDS[1005].to_json()


def _edit_randomness(proof: dict[str, Any]) -> None:
    proof["rolls"][1]["beacon"]["randomness"] = QUICKNET_ROUNDS[1007].randomness


def _edit_signature(proof: dict[str, Any]) -> None:
    proof["rolls"][2]["beacon"]["signature"] = QUICKNET_ROUNDS[1008].signature


def _round_before_acceptance(proof: dict[str, Any]) -> None:
    proof["rolls"][2]["accepted_at"] = "2023-08-23T15:59:31.500Z"


BEACON_TOKEN = "beacon-game-token-dddddddddddddddddddddddd"
# The sample game on a chain nobody trusts by default (a private beacon, signed with the test relay's key).
TEST_KEY = BeaconKey()
TEST_CHAIN = TEST_KEY.chain(QUICKNET.genesis_time, QUICKNET.period)
TEST_CHAIN_TOKEN = "test-chain-game-token-eeeeeeeeeeeeeeeeeeee"
TEST_CHAIN_INFO_V1 = BeaconRelay(TEST_KEY, TEST_CHAIN).info()  # as drand v1 writes it: hash, schemeID
TEST_CHAIN_INFO_V2 = {  # as drand v2 writes it: chain_hash, scheme
    "public_key": TEST_CHAIN.public_key,
    "period": TEST_CHAIN.period,
    "genesis_time": TEST_CHAIN.genesis_time,
    "chain_hash": TEST_CHAIN.chain_hash,
    "scheme": TEST_CHAIN.scheme,
    "beacon_id": "pokna-test",
}
BEACON_FORGERIES = {
    "beacon-round-swapped": beacon_forged(_swap_round),
    "beacon-randomness-edited": beacon_forged(_edit_randomness),
    "beacon-signature-edited": beacon_forged(_edit_signature),
    "beacon-round-before-acceptance": beacon_forged(_round_before_acceptance),
}


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    receipt = sample_receipt()
    links = {
        TOKEN: link_of(sample_proof(), receipt),
        OPEN_TOKEN: link_of(None, receipt, "in_progress"),
        CANCELLED_TOKEN: link_of(_cancelled_proof(), receipt, "cancelled"),
        BEACON_TOKEN: link_of(sample_beacon_proof(), sample_beacon_receipt()),
    }
    for name, proof in FORGERIES.items():
        links[f"{name}-token-{'x' * 32}"] = link_of(proof, receipt)
    for name, proof in BEACON_FORGERIES.items():
        links[f"{name}-token-{'x' * 32}"] = link_of(proof, sample_beacon_receipt())
    links[TEST_CHAIN_TOKEN] = link_of(
        sample_beacon_proof(chain=TEST_CHAIN, beacon=lambda action: TEST_KEY.sign(1000 + action)),
        sample_beacon_receipt(chain=TEST_CHAIN),
    )
    files = {
        "quicknet-info": QUICKNET_INFO,
        "test-chain-info-v1": TEST_CHAIN_INFO_V1,
        "test-chain-info-v2": TEST_CHAIN_INFO_V2,
        "a-round-not-an-info": QUICKNET_ROUNDS[1000].to_json(),
    }
    with serving(Site(key_ring=KEY_RING.to_json(), links=links, files=files)) as site:
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with browser_session() as browser:
        browser.set_width(1280)
        yield browser


@pytest.fixture(autouse=True)
def fresh_page(site: Site) -> Iterator[None]:
    key_ring = site.key_ring
    site.requests.clear()
    yield
    site.key_ring = key_ring


PAGE_STATE = """
(() => {
  const all = (selector, read) => Array.from(document.querySelectorAll(selector), read);
  return {
    verdict: document.querySelector('#verdict').textContent,
    state: document.querySelector('#verdict').dataset.state,
    detail: document.querySelector('#verdict-detail').textContent,
    problems: all('#verdict-problems li', (li) => li.textContent),
    problemLinks: all('#verdict-problems a.where', (a) => a.getAttribute('href')),
    checks: Object.fromEntries(all('#checks li', (li) => [li.dataset.check, li.dataset.status])),
    messages: Object.fromEntries(all('#checks li', (li) => [li.dataset.check, li.querySelector('.check-message').textContent])),
    rolls: all('#rolls tbody tr', (tr) => ({ nonce: Number(tr.dataset.nonce), match: tr.dataset.match === 'true', bad: tr.classList.contains('bad') })),
    transfers: all('#transfers tbody tr', (tr) => ({ index: tr.dataset.transfer, agree: tr.dataset.agree })),
    steps: all('#steps > li', (li) => ({ status: li.dataset.status, text: li.textContent })),
    net: Object.fromEntries(all('#net tbody tr', (tr) => [tr.dataset.seat, Number(tr.dataset.net)])),
    seeds: all('#seeds tbody tr', (tr) => tr.textContent),
    commitment: document.querySelector('#commitment').textContent,
    favor: document.querySelector('#favor').textContent,
    outcomeAgrees: document.querySelector('#outcome').dataset.agree,
    storyShown: !document.querySelector('#story').hidden,
    beaconRollsNoteShown: !document.querySelector('#rolls-beacon').hidden,
    calculator: all('#calc-results tbody tr', (tr) => [Number(tr.dataset.nonce), tr.dataset.f, Number(tr.dataset.face), tr.dataset.color]),
    trust: ((note) => ({ shown: !note.hidden, state: note.dataset.state || null, chain: note.dataset.chain || null, text: note.textContent }))(document.querySelector('#beacon-trust')),
  };
})()
"""


def page(browser: Browser, site: Site, path: str) -> dict[str, Any]:
    browser.open(f"{site.origin}{path}")
    state: dict[str, Any] = browser.evaluate(PAGE_STATE)
    return state


def test_a_settled_game_is_valid_and_told_as_a_story(browser: Browser, site: Site) -> None:
    state = page(browser, site, f"/verify?proof={TOKEN}")
    assert (state["verdict"], state["state"]) == ("VALID", "valid"), state
    assert state["checks"] == dict.fromkeys(CHECKS, "pass")
    assert "replay 6 actions over 5 rolls and reproduce all 5 transfers" in state["messages"]["replay"]
    assert state["rolls"] == [{"nonce": nonce, "match": True, "bad": False} for nonce in range(5)]
    assert not state["beaconRollsNoteShown"]  # a default-mode proof's rolls are Stake's formula alone
    assert [step["status"] for step in state["steps"]] == ["pass"] * 6
    assert "Player 2 challenges" in state["steps"][3]["text"]
    assert "challenge won" in state["steps"][5]["text"]
    assert "The pot pays 300 to Player 2" in state["steps"][5]["text"]
    assert state["net"] == {"0": -50, "1": -100, "2": 150}
    assert "the favor is red" in state["favor"]
    assert "2025-01-01T12:00:00Z" in state["commitment"]
    assert any("Srv_generated-0001" in seed and "the server" in seed for seed in state["seeds"])
    assert state["outcomeAgrees"] == "true"
    fetched = set(site.requests) - {"/favicon.ico"}  # the browser's own request, not the page's
    modules = {path for path in fetched if page_file(path) is not None}
    assert fetched - modules == {f"/v1/fairness/proofs/{TOKEN}", "/v1/fairness/keys"}
    assert {"/verify", "/verify.js", "/verify/story.js", "/pokna-verify/index.js"} <= modules
    assert "/pokna-verify/noble-bls12-381.js" not in modules  # the BLS library only for beacon proofs


@pytest.mark.parametrize(
    "given",
    [
        TOKEN,
        f"/v1/fairness/proofs/{TOKEN}",
        "{origin}/v1/fairness/proofs/" + TOKEN,
        "{origin}/verify?proof=" + TOKEN,
    ],
    ids=["token", "path", "url", "page-url"],
)
def test_every_form_of_the_link_loads_the_proof(browser: Browser, site: Site, given: str) -> None:
    state = page(browser, site, f"/verify?proof={quote(given.format(origin=site.origin), safe='')}")
    assert state["verdict"] == "VALID", state["detail"]


@pytest.mark.parametrize(
    ("given", "verdict", "detail"),
    [
        ("unknown-token-" + "z" * 32, "NO SUCH PROOF LINK", "no such proof link"),
        ("short", "NOT A PROOF LINK", "is not a proof link"),
        ("https://elsewhere.example/v1/fairness/proofs/" + "a" * 32, "NOT A PROOF LINK", "from its own site"),
    ],
    ids=["unknown", "not-a-token", "other-site"],
)
def test_a_bad_link_says_what_is_wrong(
    browser: Browser, site: Site, given: str, verdict: str, detail: str
) -> None:
    state = page(browser, site, f"/verify?proof={quote(given, safe='')}")
    assert (state["verdict"], state["state"]) == (verdict, "unusable")
    assert detail in state["detail"]
    assert state["checks"] == {}
    assert not any(path.startswith("/v1/fairness/proofs/") for path in site.requests if "unknown" not in path)


def test_an_unsettled_game_shows_its_commitment_and_runs_nothing_else(browser: Browser, site: Site) -> None:
    state = page(browser, site, f"/verify?proof={OPEN_TOKEN}")
    assert (state["verdict"], state["state"]) == ("NOT REVEALED YET", "unrevealed")
    assert "in progress" in state["detail"]
    assert sample_receipt()["server_seed_hash"] in state["commitment"]
    assert "Not revealed yet" in state["commitment"]
    assert state["checks"]["receipt"] == "pass"
    assert {name: status for name, status in state["checks"].items() if name != "receipt"} == dict.fromkeys(
        [name for name in CHECKS if name != "receipt"], "not run"
    )
    assert all("not revealed yet" in state["messages"][name] for name in CHECKS if name != "receipt")
    assert state["rolls"] == []
    assert state["steps"] == []


def test_a_cancelled_game_is_valid_with_nothing_moved(browser: Browser, site: Site) -> None:
    state = page(browser, site, f"/verify?proof={CANCELLED_TOKEN}")
    assert state["verdict"] == "VALID", state
    assert "cancelled before it started" in state["steps"][0]["text"]
    assert state["net"] == {"0": 0, "1": 0, "2": 0}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_the_page_fails_what_the_python_verifier_fails(browser: Browser, site: Site, name: str) -> None:
    state = page(browser, site, f"/verify?proof={name}-token-{'x' * 32}")
    report = verify_proof(FORGERIES[name], KEY_RING, replay=replay_proof, receipt=sample_receipt())
    failed = {check.name for check in report.failed}
    assert {check for check, status in state["checks"].items() if status == "fail"} == failed
    assert (state["verdict"], state["detail"]) == (
        "INVALID",
        f"failed: {', '.join(c for c in CHECKS if c in failed)}",
    )
    for check in report.checks:
        if check.status is CheckStatus.FAIL and check.name not in ("signature", "replay"):
            assert state["messages"][check.name] == check.message


def test_a_forged_roll_is_marked_on_its_row(browser: Browser, site: Site) -> None:
    state = page(browser, site, f"/verify?proof=forged-face-token-{'x' * 32}")
    assert [row["match"] for row in state["rolls"]] == [True, True, True, False, True]
    assert "#roll-3" in state["problemLinks"]
    assert any("roll nonce 3: face" in problem for problem in state["problems"])


def test_a_forged_payout_is_marked_on_its_transfer_and_outcome(browser: Browser, site: Site) -> None:
    state = page(browser, site, f"/verify?proof=forged-payout-token-{'x' * 32}")
    assert {name for name, status in state["checks"].items() if status == "fail"} == {"replay"}
    assert [row["agree"] for row in state["transfers"]] == ["true"] * 4 + ["false"]
    assert "#transfer-4" in state["problemLinks"]
    assert state["outcomeAgrees"] == "true"  # the outcome was not changed, only the transfer


def test_without_the_key_ring_the_signatures_are_not_run_and_the_verdict_is_not_valid(
    browser: Browser, site: Site
) -> None:
    site.key_ring = None
    state = page(browser, site, f"/verify?proof={TOKEN}")
    assert state["checks"]["signature"] == "not run"
    assert "/v1/fairness/keys has no key ring" in state["messages"]["signature"]
    assert "receipt signature not checked" in state["messages"]["receipt"]
    assert (state["verdict"], state["state"]) == ("PARTLY VERIFIED", "partial")
    assert "not run: signature" in state["detail"]


def _paste(browser: Browser, selector: str, document: Any) -> None:
    browser.evaluate(
        f"document.querySelector({json.dumps(selector)}).value = {json.dumps(json.dumps(document))}"
    )


def _check_pasted(browser: Browser) -> dict[str, Any]:
    browser.evaluate("document.body.dataset.ready = 'false'; document.querySelector('#paste-button').click()")
    browser.wait_ready()
    state: dict[str, Any] = browser.evaluate(PAGE_STATE)
    return state


def test_a_pasted_bare_proof_needs_the_players_receipt_for_the_receipt_check(
    browser: Browser, site: Site
) -> None:
    page(browser, site, "/verify")
    _paste(browser, "#proof-json", sample_proof())
    state = _check_pasted(browser)
    assert state["checks"]["receipt"] == "not run"
    assert (state["verdict"], state["state"]) == ("PARTLY VERIFIED", "partial")
    assert {name for name, status in state["checks"].items() if status == "pass"} == set(CHECKS) - {"receipt"}

    _paste(browser, "#receipt-json", sample_receipt())
    state = _check_pasted(browser)
    assert state["verdict"] == "VALID"
    assert "(your receipt)" in state["messages"]["receipt"]


def test_a_pasted_receipt_in_place_of_the_proof_is_refused_with_a_hint(browser: Browser, site: Site) -> None:
    page(browser, site, "/verify")
    _paste(browser, "#proof-json", sample_receipt())
    state = _check_pasted(browser)
    assert state["verdict"] == "UNUSABLE"
    assert "commitment receipt, not a proof" in state["detail"]


def test_a_malformed_proof_is_invalid_naming_the_field(browser: Browser, site: Site) -> None:
    page(browser, site, "/verify")
    _paste(browser, "#proof-json", {key: value for key, value in sample_proof().items() if key != "rolls"})
    state = _check_pasted(browser)
    assert (state["verdict"], state["checks"]["shape"]) == ("INVALID", "fail")
    assert state["messages"]["shape"] == "$.rolls: missing"
    assert set(state["checks"].values()) == {"fail", "not run"}


def test_an_uploaded_link_document_is_checked_like_a_link(
    browser: Browser, site: Site, tmp_path: FilePath
) -> None:
    file = tmp_path / "game-0001-proof.json"
    file.write_text(json.dumps(site.links[TOKEN]))
    page(browser, site, "/verify")
    browser.evaluate("document.body.dataset.ready = 'false'")
    browser.upload("#proof-file", file)
    browser.wait_ready()
    state = browser.evaluate(PAGE_STATE)
    assert state["verdict"] == "VALID", state["detail"]
    assert "(the receipt in the link)" in state["messages"]["receipt"]


def test_the_page_works_as_a_plain_static_file(browser: Browser, site: Site) -> None:
    state = page(browser, site, f"/static/verify.html?proof={TOKEN}")
    assert state["verdict"] == "VALID"
    loaded = set(site.requests)
    assert {"/static/verify.js", "/static/verify/story.js", "/static/pokna-verify/index.js"} <= loaded


@pytest.mark.parametrize("server_seed", sorted({vector[0] for vector in VECTORS}))
def test_calculator_reproduces_the_vectors(browser: Browser, site: Site, server_seed: str) -> None:
    vectors = [vector for vector in VECTORS if vector[0] == server_seed]
    nonces = ",".join(str(vector[2]) for vector in vectors)
    state = page(
        browser, site, f"/verify?server_seed={server_seed}&client_seed={quote(vectors[0][1])}&nonces={nonces}"
    )
    assert state["calculator"] == [[nonce, f, face, color] for _, _, nonce, f, face, color in vectors]


def test_the_page_runs_only_its_own_scripts_and_fetches_elsewhere_only_a_chain_info() -> None:
    html = (STATIC_ROOT / "verify.html").read_text()
    assert "default-src 'none'; script-src 'self';" in html
    # Another origin only for the drand /info that ?beacon_chain= names: over https, or from this machine.
    assert "connect-src 'self' https: http://127.0.0.1:* http://localhost:*;" in html
    assert html.count("http://") == 2
    assert "https://" not in html
    script = (STATIC_ROOT / "verify.js").read_text()
    assert script.count("fetch(") == 2  # fetchJson (same-origin links and keys) and the chain's /info
    assert 'credentials: "omit"' in script  # no cookie of this site goes to a relay
    # The checking core and the page's other parts fetch nothing: the page hands them what it loaded.
    parts = [*(STATIC_ROOT / "verify").glob("*.js"), *CORE_ROOT.glob("*.js")]
    assert len(parts) >= 10
    assert not [part.name for part in parts if "fetch(" in part.read_text()]


IMPORTED = re.compile(r'(?:from |import\(|new URL\()"(\.{1,2}/[^"]+|[\w-]+\.js)"')


def test_the_service_serves_every_module_the_page_loads(client: TestClient) -> None:
    """The page's one script is a module: followed through every relative import (and the BLS library's
    URL beside the core's beacon check), each module is served as JavaScript, the file it comes from, and
    the page preloads every one of them but the BLS library."""
    page_response = client.get("/verify")
    assert page_response.status_code == 200
    scripts = re.findall(r"<script ([^>]*)></script>", page_response.text)
    assert scripts == ['type="module" src="verify.js"']
    waiting, served = ["/verify.js"], set()
    while waiting:
        path = waiting.pop()
        if path in served:
            continue
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("text/javascript"), path
        file = page_file(path)
        assert file is not None, path
        assert response.text == file.read_text(), path
        served.add(path)
        waiting += [urljoin(path, found) for found in IMPORTED.findall(response.text)]
    assert {"/verify/story.js", "/pokna-verify/verification.js", "/pokna-verify/noble-bls12-381.js"} <= served
    on_disk = {f"/verify/{file.name}" for file in (STATIC_ROOT / "verify").glob("*.js")}
    on_disk |= {f"/pokna-verify/{file.name}" for file in CORE_ROOT.glob("*.js")}
    assert served == {"/verify.js", *on_disk}  # nothing shipped that the page does not load
    # The page asks for them all at once, but the BLS library, which beacon-mode proofs alone load.
    preloaded = {
        f"/{href}" for href in re.findall(r'<link rel="modulepreload" href="([^"]+)">', page_response.text)
    }
    assert preloaded == served - {"/verify.js", "/pokna-verify/noble-bls12-381.js"}


def test_the_service_serves_nothing_else_under_the_module_paths(client: TestClient) -> None:
    for path in ("/pokna-verify/package.json", "/pokna-verify/", "/verify/", "/verify/verify.html"):
        assert client.get(path).status_code == 404, path


def test_a_beacon_game_on_real_quicknet_rounds_is_valid(browser: Browser, site: Site) -> None:
    state = page(browser, site, f"/verify?proof={BEACON_TOKEN}")
    assert (state["verdict"], state["state"]) == ("VALID", "valid"), state
    beacon_checks = (*CHECKS[:7], "beacon", *CHECKS[7:])
    assert state["checks"] == dict.fromkeys(beacon_checks, "pass")
    report = verify_proof(sample_beacon_proof(), KEY_RING, replay_proof, sample_beacon_receipt())
    assert state["messages"]["beacon"] == report.check("beacon").message
    assert state["rolls"] == [{"nonce": nonce, "match": True, "bad": False} for nonce in range(3)]
    assert "/pokna-verify/noble-bls12-381.js" in site.requests  # fetched for beacon proofs only
    assert state["beaconRollsNoteShown"]  # section 5 says each roll's message holds its round's randomness


@pytest.mark.parametrize("name", sorted(BEACON_FORGERIES))
def test_the_page_fails_a_tampered_beacon_proof_as_the_python_verifier_does(
    browser: Browser, site: Site, name: str
) -> None:
    state = page(browser, site, f"/verify?proof={name}-token-{'x' * 32}")
    report = verify_proof(
        BEACON_FORGERIES[name], KEY_RING, replay=replay_proof, receipt=sample_beacon_receipt()
    )
    assert state["verdict"] == "INVALID", state
    assert state["checks"]["beacon"] == "fail"
    assert {check for check, status in state["checks"].items() if status == "fail"} == {
        check.name for check in report.failed
    }
    assert state["messages"]["beacon"] == report.check("beacon").message
    assert "roll nonce" in state["messages"]["beacon"]


def test_the_plain_static_page_loads_the_bls_library_from_beside_the_core(
    browser: Browser, site: Site
) -> None:
    state = page(browser, site, f"/static/verify.html?proof={BEACON_TOKEN}")
    assert state["verdict"] == "VALID", state
    assert "/static/pokna-verify/noble-bls12-381.js" in site.requests


def _untrusted_message(proof: dict[str, Any], receipt: dict[str, Any]) -> str:
    report = verify_proof(proof, KEY_RING, replay=replay_proof, receipt=receipt)
    return report.check("beacon").message


@pytest.mark.parametrize(
    ("token", "info"),
    [
        (TEST_CHAIN_TOKEN, "test-chain-info-v1"),
        (TEST_CHAIN_TOKEN, "test-chain-info-v2"),
        (BEACON_TOKEN, "quicknet-info"),
    ],
    ids=["v1-spelling", "v2-spelling", "quicknet-itself"],
)
def test_a_chain_named_by_the_address_is_trusted_and_the_page_says_so(
    browser: Browser, site: Site, token: str, info: str
) -> None:
    state = page(browser, site, f"/verify?proof={token}&beacon_chain=/test/{info}")
    chain = BeaconChain.from_drand_info(site.files[info])
    proof = site.links[token]["proof"]
    report = verify_proof(
        proof, KEY_RING, replay_proof, site.links[token]["commitment"], beacon_chains=(QUICKNET, chain)
    )
    assert report.valid
    assert (state["verdict"], state["checks"]["beacon"]) == ("VALID", "pass"), state
    assert state["messages"]["beacon"] == report.check("beacon").message
    assert (state["trust"]["shown"], state["trust"]["state"]) == (True, "trusted")
    assert state["trust"]["chain"] == proof["beacon_chain"]["chain_hash"]
    assert "also trusted (beacon_chain in this page's address)" in state["trust"]["text"]
    assert "whoever holds its key chooses its rounds" in state["trust"]["text"]
    assert f"/test/{info}" in site.requests


def test_without_the_parameter_a_private_chain_is_not_trusted(browser: Browser, site: Site) -> None:
    state = page(browser, site, f"/verify?proof={TEST_CHAIN_TOKEN}")
    link = site.links[TEST_CHAIN_TOKEN]
    assert (state["verdict"], state["detail"]) == ("INVALID", "failed: beacon"), state
    assert state["messages"]["beacon"] == _untrusted_message(link["proof"], link["commitment"])
    assert "is not a public beacon this verifier trusts" in state["messages"]["beacon"]
    assert state["trust"]["shown"] is False
    assert not any(path.startswith("/test/") for path in site.requests)


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("/test/a-round-not-an-info", "it is not a drand chain's info: public_key: missing or not a string"),
        ("/test/no-such-info", "it answered HTTP 404"),
        ("http://127.0.0.1:{port}/info", "it could not be fetched"),
        ("file:///etc/beacon-info.json", "that is not an http(s) URL"),
    ],
    ids=["malformed", "not-found", "unreachable", "not-http"],
)
def test_a_chain_that_cannot_be_read_is_said_so_and_not_trusted(
    browser: Browser, site: Site, given: str, reason: str
) -> None:
    asked = given.format(port=free_port())
    state = page(browser, site, f"/verify?proof={TEST_CHAIN_TOKEN}&beacon_chain={quote(asked, safe='')}")
    link = site.links[TEST_CHAIN_TOKEN]
    assert (state["verdict"], state["detail"]) == ("INVALID", "failed: beacon"), state
    assert state["messages"]["beacon"] == _untrusted_message(link["proof"], link["commitment"])
    assert (state["trust"]["shown"], state["trust"]["state"]) == (True, "refused")
    assert reason in state["trust"]["text"], state["trust"]["text"]
    assert "Only drand's quicknet is trusted." in state["trust"]["text"]


def test_the_link_form_keeps_the_chain_named_in_the_address(browser: Browser, site: Site) -> None:
    page(browser, site, "/verify?beacon_chain=/test/test-chain-info-v1")
    browser.evaluate(
        f"document.querySelector('#link-input').value = {json.dumps(TEST_CHAIN_TOKEN)};"
        "document.body.dataset.ready = 'false';"
        "document.querySelector('#link-form').requestSubmit()"
    )
    browser.wait_ready()
    state = browser.evaluate(PAGE_STATE)
    assert state["verdict"] == "VALID", state
    query = browser.evaluate("location.search")
    assert query == f"?proof={TEST_CHAIN_TOKEN}&beacon_chain=%2Ftest%2Ftest-chain-info-v1"


BEACON_GAME_STATE = """
(() => ({
  verdict: document.querySelector('#verdict').textContent,
  checks: Object.fromEntries(Array.from(document.querySelectorAll('#checks li'), (li) => [li.dataset.check, li.dataset.status])),
  beacon: document.querySelector('#checks li[data-check="beacon"] .check-message').textContent,
  trust: document.querySelector('#beacon-trust').hidden ? null : document.querySelector('#beacon-trust').dataset.state,
}))()
"""


def test_a_beacon_game_played_over_http_is_valid_on_the_page_that_trusts_its_relay_by_address(
    database_url: str, sessions: sessionmaker[Session], tmp_path: FilePath, browser: Browser
) -> None:
    """A real `pokna serve` plays against the local relay; the page fetches the relay's /info cross-origin,
    as it would fetch a private drand relay's."""
    with beacon_relay(period=1, rounds_before_now=5, lifetime_seconds=300) as relay:
        chain_file = tmp_path / "beacon-info.json"
        chain_file.write_text(json.dumps(relay.info()))
        env = {
            "POKNA_DATABASE_URL": database_url,
            "POKNA_BEACON_URLS": relay.url,
            "POKNA_BEACON_CHAIN_FILE": str(chain_file),
            "POKNA_BEACON_WAIT_MARGIN_SECONDS": "1",
        }
        with running_server(env, tmp_path / "data") as base, httpx.Client(base_url=base, timeout=30) as http:
            app = Api(http, new_tenant_key(sessions))
            vigo, han, leia = (app.wallet(100) for _ in range(3))
            game = app.create_game(vigo, [han, leia], stake=5, fairness_mode="beacon")
            game = play([app], game)
            assert game["status"] == "settled", game
            proof, receipt = app.proof(game["id"]), game["fairness"]["commitment"]
            assert proof["fairness_mode"] == "beacon"
            verify_url = f"{base}{game['fairness']['verify_url']}"
            info_url = f"{relay.url}/{relay.chain.chain_hash}/info"

            browser.open(f"{verify_url}&beacon_chain={quote(info_url, safe='')}")
            trusted: dict[str, Any] = browser.evaluate(BEACON_GAME_STATE)
            browser.screenshot(tmp_path / "beacon-chain-trusted.png")
            print(f"screenshot: {tmp_path / 'beacon-chain-trusted.png'}")
            browser.open(verify_url)
            untrusted: dict[str, Any] = browser.evaluate(BEACON_GAME_STATE)
            keys = app.key_ring()
        assert f"/{relay.chain.chain_hash}/info" in relay.paths

    assert trusted["verdict"] == "VALID", trusted
    assert trusted["trust"] == "trusted"
    assert set(trusted["checks"]) == {*CHECKS, "beacon"}
    assert set(trusted["checks"].values()) == {"pass"}, trusted
    report = verify_proof(proof, keys, replay_proof, receipt, beacon_chains=(QUICKNET, relay.chain))
    assert trusted["beacon"] == report.check("beacon").message

    assert untrusted["verdict"] == "INVALID", untrusted
    assert untrusted["trust"] is None
    assert {name for name, status in untrusted["checks"].items() if status == "fail"} == {"beacon"}
    default = verify_proof(proof, keys, replay_proof, receipt)
    assert untrusted["beacon"] == default.check("beacon").message
    assert "is not a public beacon this verifier trusts" in untrusted["beacon"]
