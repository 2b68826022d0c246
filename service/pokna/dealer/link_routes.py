"""Public fairness endpoints: the signing keys anyone needs to check a proof, and the browser verifier."""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Literal

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from pokna.api.deps import RuntimeDep
from pokna.api.problem_docs import problems
from pokna_verify.fairness.keyring import KeyRing

router = APIRouter(tags=["fairness"])
_STATIC = resources.files("pokna").joinpath("static")


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


def _script(source: Traversable) -> Response:
    return Response(source.read_text(encoding="utf-8"), media_type="text/javascript")


_VERIFY_PAGE = _STATIC.joinpath("verify.html").read_text(encoding="utf-8")


def _header_policy(page: str) -> str:
    """The page's own `<meta>` policy (one source: the page also works as a plain static file), plus what
    only a header can say: no framing (the verdict cannot be overlaid by another site), no `<base>` and no
    form submission (the page's one form is handled by its script)."""
    (meta,) = re.findall(r'http-equiv="Content-Security-Policy"\s+content="([^"]*)"', page)
    return f"{meta}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"


VERIFY_PAGE_POLICY = _header_policy(_VERIFY_PAGE)


@router.get(
    "/verify",
    response_class=HTMLResponse,
    summary="The browser proof verifier (static page)",
    description="Open it with `?proof=<token>` (a game's `fairness.verify_url`): it fetches the proof and "
    "the keys and checks the signature and every roll in the browser.",
    responses=problems(),
)
def verify_page() -> HTMLResponse:
    return HTMLResponse(_VERIFY_PAGE, headers={"Content-Security-Policy": VERIFY_PAGE_POLICY})


@router.get("/verify.js", include_in_schema=False)
def verify_script() -> Response:
    return _script(_STATIC.joinpath("verify.js"))


# The ES modules /verify.js imports, at the addresses its relative imports name: the page's own parts
# (pokna/static/verify/) and the checking core, served from the verifier's distribution (pokna_verify/js/,
# the same files Node imports as `pokna-verify`, with the vendored BLS library the core imports for
# beacon-mode proofs). One route per file, so nothing else under those paths is served.
MODULE_FOLDERS = {
    "/verify/": _STATIC.joinpath("verify"),
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
