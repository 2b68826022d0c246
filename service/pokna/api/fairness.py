"""Public fairness endpoints: the signing keys anyone needs to check a proof, and the browser verifier."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from pokna.api.deps import RuntimeDep
from pokna.fairness.keyring import KeyRing

router = APIRouter(tags=["fairness"])


class PublishedKeyOut(BaseModel):
    key_id: str = Field(description="`ed25519:` + the first 16 hex digits of SHA-256 of the raw public key.")
    algorithm: str = Field(description="Always `Ed25519`.")
    public_key: str = Field(description="The 32-byte raw public key, base64url without padding.")
    status: str = Field(description="`current` signs new documents; `retired` keys still verify old ones.")


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
)
def fairness_keys(runtime: RuntimeDep) -> KeyRingOut:
    return KeyRingOut.of(runtime.keys.key_ring)


def _static(name: str) -> str:
    return resources.files("pokna").joinpath("static", name).read_text(encoding="utf-8")


@router.get("/verify", response_class=HTMLResponse, summary="The browser proof verifier (static page)")
def verify_page() -> HTMLResponse:
    return HTMLResponse(_static("verify.html"))


@router.get("/verify.js", include_in_schema=False)
def verify_script() -> Response:
    return Response(_static("verify.js"), media_type="text/javascript")
