"""An authenticated HTTP client for one tenant, as an integrating app would hold it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from fastapi.testclient import TestClient

from support.driver import Database, new_api_key


@dataclass
class TenantApi:
    client: TestClient
    tenant_id: str
    api_key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.client.get(path, headers={**self.headers, **kwargs.pop("headers", {})}, **kwargs)

    def post(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self.client.post(
            path, json=json, headers={**self.headers, **kwargs.pop("headers", {})}, **kwargs
        )

    def put(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self.client.put(
            path, json=json, headers={**self.headers, **kwargs.pop("headers", {})}, **kwargs
        )

    def deposit(self, account_id: str, amount: int, **body: Any) -> Any:
        """A deposit under a key of its own, as an app sends one (money moves only under a key)."""
        return self.post(
            f"/v1/accounts/{account_id}/deposits", {"amount": amount, **body}, headers=money_key()
        )

    def withdraw(self, account_id: str, amount: int, **body: Any) -> Any:
        return self.post(
            f"/v1/accounts/{account_id}/withdrawals", {"amount": amount, **body}, headers=money_key()
        )

    def wallet(self, balance: int = 0, external_id: str | None = None) -> str:
        created = self.post("/v1/accounts", {"external_id": external_id} if external_id else {})
        assert created.status_code == 201, created.text
        account_id: str = created.json()["id"]
        if balance:
            deposit = self.deposit(account_id, balance)
            assert deposit.status_code == 201, deposit.text
        return account_id

    def balance(self, account_id: str) -> int:
        response = self.get(f"/v1/accounts/{account_id}")
        assert response.status_code == 200, response.text
        balance: int = response.json()["balance"]
        return balance


def money_key() -> dict[str, str]:
    """A fresh `Idempotency-Key` header: one per intended money move, as the API requires."""
    return {"Idempotency-Key": f"move-{uuid4()}"}


def new_tenant(client: TestClient, database: Database, name: str = "Cantina") -> TenantApi:
    issued = new_api_key(database, name)
    return TenantApi(client, issued.tenant_id, issued.secret)


def api_key_on(database_url: str, name: str) -> str:
    """A new tenant's API key, written straight to the database at `database_url` (as `pokna tenants
    create` does), for a test that talks to a real server over HTTP."""
    return new_api_key(database_url, name).secret
