"""What each command and option is, in the words both command lines show: `pokna-verify proof|audit` and
the service's `pokna verify` / `pokna audit verify`, which run the same code. Plain strings and nothing
else, so that a command's --help imports no checker."""

from __future__ import annotations

PROOF_SUMMARY = "Verify a game proof offline."
PROOF_EXIT_CODES = (
    "Exit codes: 0 valid (every check ran and passed); 1 invalid (the failed checks are named); 2 unusable "
    "input; 3 not revealed yet (the game has not ended); 4 partly verified (nothing failed, but a check could "
    "not run, e.g. the signature without keys or the receipt without --receipt: not a pass)."
)
PROOF_SOURCE = (
    "What you hold of the game: its browser link (https://host/verify?proof=TOKEN), its public "
    "proof link (https://host/v1/fairness/proofs/TOKEN), a saved copy of that link's document, "
    "a proof from GET /v1/games/{id}/proof, or the bare TOKEN with --server."
)
PROOF_SERVER = (
    "The service's base URL (https://host), to fetch a bare TOKEN or a link given without its "
    "site (/verify?proof=TOKEN) from. Nothing else is fetched from it."
)
PROOF_PUBLIC_KEY = "The operator's Ed25519 public key: PEM, or base64url of the raw 32 bytes."
PROOF_KEYS = (
    "The key ring from GET /v1/fairness/keys: a saved JSON file, or the http(s) URL itself. "
    "Without it (or --public-key), a link URL's own keys_url is fetched, and said so."
)
PROOF_RECEIPT = "The commitment receipt you were given when the game was created; wins over the link's."
PROOF_LOG = (
    "The game's tenant's public log (https://host/v1/logs/TENANT): also check that this very proof is in it, "
    "in its latest signed checkpoint. Without it, a link that carries the game's place in the log "
    "(`public_log`) is checked offline. A game not logged yet is said, and fails nothing."
)
PROOF_STATE = (
    "Judge the log's checkpoint (from --log, or the one the link carries) against the one kept in FILE "
    "(as `log watch`) and keep it."
)

LOG_SUMMARY = "Witness a tenant's public log of finished games."
LOG_WATCH_SUMMARY = "Check the log's latest checkpoint extends the one kept in --state, and keep it."
LOG_WATCH_EXIT_CODES = (
    "Exit codes: 0 the same history (or the first checkpoint seen, now kept); 1 a fork, a rollback, a bad "
    "signature, or a checkpoint under another origin than the log's (the state file is left as it was); "
    "2 unusable input."
)
LOG_URL = "The log: https://host/v1/logs/TENANT (or its /checkpoint)."
LOG_STATE = "The witness's state file (JSON; made if missing): the last checkpoint accepted of each log."
LOG_KEYS = (
    "The key ring to check checkpoints with: a saved GET /v1/fairness/keys file, or its URL. "
    "Default: the log's host's /v1/fairness/keys."
)

AUDIT_SUMMARY = (
    "Verify a ledger export or an audit bundle offline; a bundle is recognized by its first record."
)
AUDIT_EXIT_CODES = (
    "Exit codes: 0 valid; 1 invalid (each finding names its record); 2 unusable input (nothing that could "
    "be judged, an empty export or bundle included); 3 not revealed (a bundle with no finding whose games "
    "are not all over yet: their money cannot be checked until their proofs exist); 4 partly verified (an "
    "export whose --checkpoint's signature could not be checked, for want of a key: not a pass)."
)
AUDIT_SOURCE_METAVAR = "EXPORT.jsonl|BUNDLE.jsonl"
AUDIT_SOURCE = "A `pokna ledger export` JSONL file or an audit bundle (`pokna audit bundle`), or - for stdin."
AUDIT_KEYS = "The published key ring: a file of GET /v1/fairness/keys's JSON, or its URL."
AUDIT_CHECKPOINT = "A signed checkpoint a ledger export must contain."
AUDIT_PREVIOUS_CHECKPOINT = (
    "The public log checkpoint of your previous bundle (its signed note, or that bundle itself): the "
    "bundle's log must extend it."
)
AUDIT_PUBLIC_KEY = "The key that signed --checkpoint: a file (PEM or base64url) or the base64url text itself."
PROCESSES = "Worker processes (default: every core)."
PROGRESS = "Progress on stderr once past a second (default: when stderr is a terminal)."

BEACON_CHAIN = (
    "A drand chain's /info document to trust for beacon-mode games besides drand's quicknet "
    "(a private or test beacon); repeatable. Its key's holder chooses its rounds: trust it knowingly."
)
JSON = "Print the report as JSON."
