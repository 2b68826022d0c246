"""The hot routes' requests, answered without FastAPI's dependency solver when nothing is off (issue 44).

FastAPI solves a route's dependencies on every request, generically: for each dependency it checks for
overrides, builds cache keys, looks at whether the callable is a generator, a coroutine or neither, and
gathers the parameters of each level through its own extraction. For a game action that was about a
tenth of the API's CPU. A route of `DirectRoute` whose endpoint answers a `Response` (the bytes it built:
a game's creation and actions, a table's round, deposits and withdrawals) has its dependency tree laid
out once, when the route is built, and a request walks that plan: every parameter validated with
FastAPI's own functions (`request_params_to_args`, `request_body_to_args`, so the values are the ones
FastAPI would pass), then the dependencies called in FastAPI's order, then the endpoint.

Behaviour stays FastAPI's by construction: the plan is only taken when the request is one FastAPI would
answer the same way, and anything else goes to FastAPI's own handler, which does everything again from
the start (the body is cached on the request, and nothing the plan did has any effect): a parameter or a
body that does not validate (so every 422, whatever it lists and in whatever order), a body that is not
JSON, a content type other than `application/json`, dependency overrides (tests moving the clock), or
FastAPI's telemetry being on. When every parameter validates, FastAPI calls the same dependencies in the
same order with the same values, so an exception one of them raises (a missing API key's 401, a blank
Idempotency-Key's 422) is the same exception. Reading the body fails the way FastAPI's handler fails.
The OpenAPI document is built from the endpoint's signature, which does not change.

A route whose tree has anything the plan does not handle (a generator dependency, a sync one, a
`Response` or `BackgroundTasks` parameter, security scopes, parameter models, forms) or whose endpoint
answers a model is FastAPI's as before."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, get_type_hints

from fastapi import Request, Response
from fastapi._compat import field_annotation_is_sequence
from fastapi.dependencies import utils as fastapi_utils
from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import _get_param_aliases, _get_param_model, request_body_to_args
from fastapi.params import Form
from fastapi.routing import APIRoute, _effective_route_context_var
from fastapi.telemetry import get_telemetry_data
from starlette.exceptions import HTTPException
from starlette.middleware.body_limit import MAX_BODY_SIZE_SCOPE_KEY

from pokna.api.written_numbers import WrittenNumbersRequest, WrittenNumbersRoute

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


@dataclass(frozen=True)
class _Step:
    """One dependant of the tree: its parameters, and the dependencies whose answers it takes."""

    call: Callable[..., Any]
    name: str | None
    subs: tuple[_Step, ...]
    path: tuple[Any, ...]
    query: tuple[Any, ...]
    header: tuple[Any, ...]
    cookie: tuple[Any, ...]
    body: tuple[Any, ...]
    request_names: tuple[str, ...]
    """Its `Request` and `HTTPConnection` parameters: both are given the request."""
    scalars: tuple[tuple[_Scalar, ...] | None, ...]
    """Per kind (path, query, header, cookie), its parameters as `_Scalar`s, or None where one is not."""


@dataclass(frozen=True)
class _Scalar:
    """A parameter read as one value (not a list, not a model): what `request_params_to_args` works out
    for it on every request (its param model, its request keys, its location), worked out once."""

    name: str
    field: Any
    keys: tuple[str, ...]
    """The request keys it may come under, in FastAPI's order of preference (the first is its default)."""
    kind: str
    """Where it comes from, as the error's location names it: "path", "query", "header", "cookie"."""
    default: Any
    """Its value when not sent, where FastAPI takes the field's default as it is (an optional parameter
    whose default is None, text or a number, not validated); else `_ASK_FASTAPI`."""


_ASK_FASTAPI = object()
_AS_IS = (type(None), str, int, bool)
"""Defaults that FastAPI's deep copy gives back as they are."""


class _Unsupported(Exception):
    """Something in the tree the plan leaves to FastAPI."""


def _awaitable(call: Any) -> bool:
    function = call if inspect.isfunction(call) or inspect.ismethod(call) else getattr(call, "__call__", None)  # noqa: B004
    return inspect.iscoroutinefunction(function) and not inspect.isasyncgenfunction(function)


def _step(dependant: Dependant, *, root: bool) -> _Step:
    if (
        dependant.call is None
        or not _awaitable(dependant.call)
        or dependant.concurrency is not None
        or not dependant.use_cache
        or dependant.scope not in (None, "function")
        or dependant.response_param_name
        or dependant.background_tasks_param_name
        or dependant.security_scopes_param_name
        or dependant.websocket_param_name
        or dependant.own_oauth_scopes
        or dependant.parent_oauth_scopes
        or (dependant.body_params and not root)
        or any(isinstance(field.field_info, Form) for field in dependant.body_params)
        or any(_is_model(field) for field in _params(dependant))
    ):
        raise _Unsupported
    return _Step(
        call=dependant.call,
        name=dependant.name,
        subs=tuple(_step(sub, root=False) for sub in dependant.dependencies),
        path=tuple(dependant.path_params),
        query=tuple(dependant.query_params),
        header=tuple(dependant.header_params),
        cookie=tuple(dependant.cookie_params),
        body=tuple(dependant.body_params),
        request_names=tuple(
            name for name in (dependant.http_connection_param_name, dependant.request_param_name) if name
        ),
        scalars=tuple(
            _scalars(fields)
            for fields in (
                dependant.path_params,
                dependant.query_params,
                dependant.header_params,
                dependant.cookie_params,
            )
        ),
    )


def _scalars(fields: list[Any]) -> tuple[_Scalar, ...] | None:
    """The fields as `_Scalar`s, or None if one of them is read otherwise (a list, a model)."""
    scalars = []
    for field in fields:
        if _get_param_model(field) is not None or field_annotation_is_sequence(field.field_info.annotation):
            return None
        keys = tuple(key for _alias, key in _get_param_aliases(field))
        info = field.field_info
        as_is = (
            not info.is_required()
            and info.default_factory is None  # a factory's value is made anew on every request
            and not info.validate_default
            and type(info.default) in _AS_IS
        )
        default = info.default if as_is else _ASK_FASTAPI
        scalars.append(_Scalar(field.name, field, keys, info.in_.value, default))
    return tuple(scalars)


def _params(dependant: Dependant) -> list[Any]:
    return [
        *dependant.path_params,
        *dependant.query_params,
        *dependant.header_params,
        *dependant.cookie_params,
    ]


def _is_model(field: Any) -> bool:
    """A parameter model (`Annotated[Model, Query()]`): FastAPI extracts it differently."""
    annotation = field.field_info.annotation
    return isinstance(annotation, type) and hasattr(annotation, "model_fields")


def _ordered(step: _Step) -> list[_Step]:
    """Every step, dependencies before what depends on them: the order FastAPI calls them in."""
    return [*(inner for sub in step.subs for inner in _ordered(sub)), step]


class _Invalid(Exception):
    """A parameter or the body does not validate: FastAPI's handler words the 422."""


async def _parameters(step: _Step, request: Request, body: Any, embed: bool) -> dict[str, Any]:
    """`step`'s own parameters, validated as `solve_dependencies` validates them."""
    values: dict[str, Any] = {}
    for fields, scalars, received in (
        (step.path, step.scalars[0], request.path_params),
        (step.query, step.scalars[1], request.query_params if step.query else None),
        (step.header, step.scalars[2], request.headers if step.header else None),
        (step.cookie, step.scalars[3], request.cookies if step.cookie else None),
    ):
        if fields:
            if scalars is not None and _read_scalars(scalars, received, values):
                continue
            found, errors = fastapi_utils.request_params_to_args(list(fields), received)  # type: ignore[arg-type]
            if errors:
                raise _Invalid
            values.update(found)
    if step.body:
        found, errors = await request_body_to_args(list(step.body), body, embed)
        if errors:
            raise _Invalid
        values.update(found)
    for name in step.request_names:
        values[name] = request
    return values


def _read_scalars(scalars: tuple[_Scalar, ...], received: Any, values: dict[str, Any]) -> bool:
    """`request_params_to_args` for parameters each sent once, the common case, without its per-request
    work on the fields: the same lookups, the same validation, an absent optional one's default as FastAPI
    takes it (`_validate_value_with_model_field`). False (and `values` as it was) when one is absent and
    anything else would be done, so that FastAPI's function works out its default or its error."""
    found: dict[str, Any] = {}
    for scalar in scalars:
        key = next((key for key in scalar.keys if key in received), scalar.keys[0])
        value = received.get(key)
        if value is None:
            if scalar.default is _ASK_FASTAPI:
                return False
            found[scalar.name] = scalar.default
            continue
        found[scalar.name], errors = scalar.field.validate(value, found, loc=(scalar.kind, key))
        if errors:
            raise _Invalid
    values.update(found)
    return True


class DirectRoute(WrittenNumbersRoute):
    """The route class of the routers with hot routes: `WrittenNumbersRoute` (a body's numbers read as
    written), and for an endpoint that answers a `Response`, the plan of this module's docstring."""

    @property
    def direct(self) -> bool:
        """Whether a valid request is answered by the plan (pokna.api.hot_paths indexes such routes)."""
        return _plan(self) is not None

    def get_route_handler(self) -> Handler:
        handle = super().get_route_handler()
        # FastAPI builds a handler per inclusion of the route, from the inclusion's state (its dependant,
        # its overrides' provider: the app's), which it names in a context variable meanwhile.
        included = _effective_route_context_var.get()
        route: Any = included if included is not None and included.original_route is self else self
        plan = _plan(route)
        if plan is None:
            return handle
        fastapi_handle = APIRoute.get_route_handler(self)  # without the wrapper: takes `written` as it is
        steps = _ordered(plan)
        overrides = route.dependency_overrides_provider
        embed = route._embed_body_fields
        endpoint = plan.call

        async def handle_direct(request: Request) -> Response:
            if (
                (overrides is not None and overrides.dependency_overrides)
                or get_telemetry_data() is not None
                or MAX_BODY_SIZE_SCOPE_KEY in request.scope
            ):
                return await handle(request)
            written = WrittenNumbersRequest(request.scope, request.receive)
            body = await _json_body(written) if plan.body else None
            if body is _NOT_JSON:
                return await fastapi_handle(written)
            try:
                parameters = [await _parameters(step, written, body, embed) for step in steps]
            except _Invalid:
                return await fastapi_handle(written)
            solved: dict[Callable[..., Any], Any] = {}
            for step, values in zip(steps[:-1], parameters[:-1], strict=True):
                if step.call not in solved:
                    for sub in step.subs:
                        values[sub.name] = solved[sub.call]  # type: ignore[index]
                    solved[step.call] = await step.call(**values)
            values = parameters[-1]
            for sub in plan.subs:
                values[sub.name] = solved[sub.call]  # type: ignore[index]
            answer: Response = await endpoint(**values)
            return answer

        return handle_direct


def _plan(route: Any) -> _Step | None:
    """The route's plan, or None for FastAPI's own handler."""
    try:
        answers = get_type_hints(route.endpoint).get("return")
    except Exception:  # an annotation that does not resolve: FastAPI's as before
        return None
    if not (isinstance(answers, type) and issubclass(answers, Response)):
        return None
    try:
        plan = _step(route.dependant, root=True)
    except _Unsupported:
        return None
    if any(sub.name is None for step in _ordered(plan) for sub in step.subs):
        return None  # a dependency run for its effect alone (`dependencies=[...]`): FastAPI's
    return plan


_NOT_JSON = object()


async def _json_body(request: WrittenNumbersRequest) -> Any:
    """The body as FastAPI reads it for a JSON body, or `_NOT_JSON` when FastAPI would do anything else
    with it (no body, another content type, JSON that does not parse): its handler then reads it again
    from the cache and answers. A failure to read it fails as in FastAPI's handler."""
    try:
        raw = await request.body()
    except HTTPException:
        raise
    except Exception as error:  # FastAPI's handler, word for word (a client gone, a broken stream)
        raise HTTPException(status_code=400, detail="There was an error parsing the body") from error
    if not raw or request.headers.get("content-type") != "application/json":
        return _NOT_JSON
    try:
        return await request.json()
    except Exception:  # FastAPI's handler parses it again and words the refusal (422, or 400)
        return _NOT_JSON
