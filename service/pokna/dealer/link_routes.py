"""Public fairness endpoints: the signing keys anyone needs to check a proof, and the browser verifier."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Annotated, Literal

from fastapi import APIRouter, Path
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from pokna.api.deps import RuntimeDep, SessionDep
from pokna.api.problem_docs import STORED, problems
from pokna.dealer import service as dealer
from pokna.dealer.problem_docs import LINK_NOT_FOUND
from pokna.dealer.requests import FairnessLinkOut
from pokna_verify.fairness.keyring import KeyRing

router = APIRouter(tags=["fairness"])


class PublishedKeyOut(BaseModel):
    key_id: str = Field(description="`ed25519:` + the first 16 hex digits of SHA-256 of the raw public key.")
    algorithm: Literal["Ed25519"] = Field(description="Always `Ed25519`.")
    public_key: str = Field(description="The 32-byte raw public key, base64url without padding.")
    status: Literal["current", "retired"] = Field(
        description="`current` signs new documents; `retired` keys still verify old ones."
    )


class KeyRingOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "keys": [
                        {
                            "key_id": "ed25519:3f1c9a0b5d7e2468",
                            "algorithm": "Ed25519",
                            "public_key": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
                            "status": "current",
                        }
                    ]
                }
            ]
        }
    )
    keys: list[PublishedKeyOut]

    @classmethod
    def of(cls, ring: KeyRing) -> KeyRingOut:
        """The ring as `KeyRing.from_json` reads it back: the offline verifier takes this answer as is."""
        return cls.model_validate(ring.to_json())


@router.get(
    "/v1/fairness/keys",
    response_model=KeyRingOut,
    summary="Public keys that sign receipts, proofs and ledger checkpoints (current and retired)",
    description="No API key. A proof names its key by `key_id`; a retired key still verifies what it signed.",
    responses=problems(),
)
def fairness_keys(runtime: RuntimeDep) -> KeyRingOut:
    return KeyRingOut.of(runtime.keys.key_ring)


@router.get(
    "/v1/fairness/proofs/{token}",
    response_model=FairnessLinkOut,
    summary="A game's public fairness link: its commitment and seeds, and its proof once it has ended",
    description="No API key: the token in the path is the capability. The integrating app hands the link "
    "(the game's `fairness.public_url`) to its players. It serves the signed commitment receipt, the seats' "
    "account ids and client seeds (with who chose each) and the status from the game's creation on, and the "
    "signed proof, which reveals the server seed, once the game has settled or been cancelled; never a "
    "balance, never another game. It only reads: a turn deadline passed since the game was last touched "
    "is applied by the sweep or the tenant's next read, not by the link. An unknown or malformed token is "
    "the same 404.",
    responses=problems(LINK_NOT_FOUND, STORED),
)
def fairness_link(
    token: Annotated[str, Path(description="The link's token (from `fairness.public_url`).")],
    session: SessionDep,
) -> FairnessLinkOut:
    return dealer.fairness_link(session, token)


def _static(name: str) -> str:
    return resources.files("pokna").joinpath("static", name).read_text(encoding="utf-8")


def _script(source: Traversable) -> Response:
    return Response(source.read_text(encoding="utf-8"), media_type="text/javascript")


@router.get(
    "/verify",
    response_class=HTMLResponse,
    summary="The browser proof verifier (static page)",
    description="Open it with `?proof=<token>` (a game's `fairness.verify_url`): it fetches the proof and "
    "the keys and checks the signature and every roll in the browser.",
    responses=problems(),
)
def verify_page() -> HTMLResponse:
    return HTMLResponse(_static("verify.html"))


@router.get("/verify.js", include_in_schema=False)
def verify_script() -> Response:
    return _script(resources.files("pokna").joinpath("static", "verify.js"))


# The ES modules /verify.js imports, at the addresses its relative imports name: the page's own parts
# (pokna/static/verify/) and the checking core, served from the verifier's distribution (pokna_verify/js/,
# the same files Node imports as `pokna-verify`, with the vendored BLS library the core imports for
# beacon-mode proofs). One route per file, so nothing else under those paths is served.
MODULE_FOLDERS = {
    "/verify/": resources.files("pokna").joinpath("static", "verify"),
    "/pokna-verify/": resources.files("pokna_verify").joinpath("js"),
}


def _serve_module(source: Traversable) -> Callable[[], Response]:
    def serve() -> Response:
        return _script(source)

    return serve


def _add_module_routes() -> None:
    for prefix, folder in MODULE_FOLDERS.items():
        for source in sorted(folder.iterdir(), key=lambda source: source.name):
            if source.name.endswith(".js"):
                router.add_api_route(
                    prefix + source.name, _serve_module(source), methods=["GET"], include_in_schema=False
                )


_add_module_routes()
