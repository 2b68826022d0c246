"""`pokna tenants ...`: integrating apps and their API keys (a key is printed once, never stored)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from psycopg import AsyncConnection

from pokna.cli.app import app
from pokna.cli.command_database import require_tenant, run_command
from pokna.cli.errors import EXIT_USAGE, CommandError
from pokna.errors import NotFound
from pokna.tenants import service

tenants_app = typer.Typer(help="Tenants (integrating apps) and their API keys.", no_args_is_help=True)
keys_app = typer.Typer(help="A tenant's API keys.", no_args_is_help=True)
tenants_app.add_typer(keys_app, name="keys")
app.add_typer(tenants_app, name="tenants")

JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
TenantArgument = Annotated[str, typer.Argument(help="The tenant's id (`pokna tenants list` shows them).")]


@tenants_app.command("create")
def create(
    name: Annotated[
        str,
        typer.Argument(
            help="The app's name: 1-200 characters, no control or invisible formatting characters."
        ),
    ],
    as_json: JsonOption = False,
) -> None:
    """Create a tenant and its first API key. The key is shown only now."""

    async def create(connection: AsyncConnection[Any]) -> tuple[service.TenantRecord, service.IssuedKey]:
        async with connection.transaction():
            try:
                tenant = await service.create_tenant(connection, name)
            except ValueError as error:
                raise CommandError(str(error), 'e.g. pokna tenants create "Chalmun\'s Cantina"') from None
            return tenant, await service.issue_api_key(connection, tenant.id)

    tenant, issued = run_command(create)
    _print_key(issued, as_json, tenant_name=tenant.name)


@tenants_app.command("list")
def list_(as_json: JsonOption = False) -> None:
    """List tenants."""
    rows = [
        {"id": t.id, "name": t.name, "created_at": t.created_at.isoformat()}
        for t in run_command(service.list_tenants)
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    else:
        for row in rows:
            typer.echo(f"{row['id']}  {row['name']}")


@keys_app.command("create")
def create_key(tenant_id: TenantArgument, as_json: JsonOption = False) -> None:
    """Issue another API key for a tenant (for rotation: issue, deploy, then revoke the old one)."""

    async def issue(connection: AsyncConnection[Any]) -> service.IssuedKey:
        await require_tenant(connection, tenant_id)
        return await service.issue_api_key(connection, tenant_id)

    _print_key(run_command(issue), as_json)


@keys_app.command("list")
def list_keys(tenant_id: TenantArgument, as_json: JsonOption = False) -> None:
    """List a tenant's keys (ids and state only; secrets are never stored)."""

    async def keys(connection: AsyncConnection[Any]) -> list[service.ApiKeyRecord]:
        await require_tenant(connection, tenant_id)
        return await service.list_api_keys(connection, tenant_id)

    rows = [
        {
            "id": key.id,
            "created_at": key.created_at.isoformat(),
            "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
        }
        for key in run_command(keys)
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    else:
        for row in rows:
            typer.echo(
                f"{row['id']}  {'revoked ' + str(row['revoked_at']) if row['revoked_at'] else 'active'}"
            )


@keys_app.command("revoke")
def revoke_key(
    key_id: Annotated[str, typer.Argument(help="The key's id (`pokna tenants keys list` shows them).")],
) -> None:
    """Revoke an API key; requests with it get 401 from then on."""
    try:
        run_command(lambda connection: service.revoke_api_key(connection, key_id))
    except NotFound:
        raise CommandError(  # a wrong argument, as an unknown tenant is (require_tenant): exit 2
            f"no API key {key_id!r}",
            "`pokna tenants keys list TENANT_ID` shows a tenant's keys",
            exit_code=EXIT_USAGE,
        ) from None
    typer.echo(f"revoked {key_id}")


def _print_key(issued: service.IssuedKey, as_json: bool, tenant_name: str | None = None) -> None:
    if as_json:
        payload = {"tenant_id": issued.tenant_id, "key_id": issued.key_id, "api_key": issued.secret}
        if tenant_name is not None:
            payload["name"] = tenant_name
        typer.echo(json.dumps(payload, indent=2))
        return
    typer.echo(f"tenant:  {issued.tenant_id}")
    typer.echo(f"key id:  {issued.key_id}")
    typer.echo(f"API key: {issued.secret}")
    typer.echo("Store the API key now: it is not shown again.", err=True)
