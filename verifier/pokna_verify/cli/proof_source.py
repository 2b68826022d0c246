"""Every form of a game's proof a player may hold, turned into what `pokna-verify proof` reads.

A player is handed the browser link (`https://host/verify?proof=TOKEN`, the game's `fairness.verify_url`),
sometimes the public link (`https://host/v1/fairness/proofs/TOKEN`), a saved file, or just the token. Each
names the same link document, and the browser page accepts each of them; so does the command. Only what the
user names is fetched: a browser link is read as the link document of the same site (as the page itself
does), and a bare token or a relative link only with the `--server` it came from.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from pokna_verify.cli.input_files import UnusableInputError, is_url
from pokna_verify.fairness.links import is_token_shaped, link_path

LINK_PREFIX = link_path("")
VERIFY_PAGE = "/verify"


def where_to_read(source: str, server: str | None) -> str:
    """A file path, or the http(s) URL to fetch: a browser link becomes its public link's URL; a bare token
    or a path relative to the service is resolved against `server`. Anything else is read as it was given."""
    if server is not None and not is_url(server):
        raise UnusableInputError(f"--server {server!r} is not an http(s) URL: give the service's base URL")
    if server is not None:
        try:
            urllib.parse.urlsplit(server)
        except ValueError as error:  # "http://[::1": the links joined to it could not be either
            raise UnusableInputError(
                f"--server {server[:80]!r} is no address ({error}): give the service's base URL"
            ) from None
    if _is_file(source):
        return source
    text = source.strip()
    if is_url(text):
        return _link_of(text)
    relative = is_token_shaped(text) or text.startswith((LINK_PREFIX, VERIFY_PAGE))
    if not relative:
        return source
    if server is None:
        raise UnusableInputError(
            f"{text[:80]!r} is a proof token or a link without its site: give the whole link "
            f"(https://host{VERIFY_PAGE}?proof=TOKEN or https://host{LINK_PREFIX}TOKEN), or the site it came "
            "from with --server https://host"
        )
    if is_token_shaped(text):
        return urllib.parse.urljoin(server, link_path(text))
    return _link_of(urllib.parse.urljoin(server, text))


def _link_of(url: str, *, within: str | None = None) -> str:
    """The public link a URL names. The browser page's `?proof=` takes a token, the link's path, or a whole
    link on the same site (even the page's own link), and so does this."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # a malformed URL: fetching it says so, naming it, as for any URL that gives nothing
        return url
    if within is not None and _origin(parts) != within:
        raise UnusableInputError(
            f"{url} is on another site than the page that names it ({within}): verify that link itself if "
            "you trust it"
        )
    if not parts.path.rstrip("/").endswith(VERIFY_PAGE):
        return url
    given = urllib.parse.parse_qs(parts.query).get("proof")
    if not given:
        raise UnusableInputError(
            f"{url} is the browser verifier with no ?proof=: give the game's link (its ?proof=TOKEN)"
        )
    value = given[0].strip()
    if is_token_shaped(value):
        return urllib.parse.urljoin(url, link_path(value))
    if value.startswith(LINK_PREFIX) and is_token_shaped(value[len(LINK_PREFIX) :]):
        return urllib.parse.urljoin(url, value)
    if is_url(value) and within is None:
        return _link_of(value, within=_origin(parts))
    raise UnusableInputError(
        f"{url}: ?proof={value[:80]!r} is neither a proof token (letters, digits, - and _) nor a proof link"
    )


def _is_file(source: str) -> bool:
    try:
        return Path(source).exists()
    except (OSError, ValueError):  # a name too long for a path, or one holding NUL: not a file
        return False


def _origin(parts: urllib.parse.SplitResult) -> str:
    return f"{parts.scheme}://{parts.netloc}"
