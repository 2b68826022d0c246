"""Examples of the 2xx answers the OpenAPI document shows, by operation: real answers of a game in play
(a table of three, its first round just started), recorded once and kept here as data."""

from __future__ import annotations

from typing import Any

from pokna.webhooks.schemas import WebhookDeliveryOut, WebhookEndpointOut

ANSWERS: dict[str, Any] = {
    "game": {
        "id": "game_f043bbd6150a4c19b7c033641dfd2318",
        "object": "game",
        "status": "in_progress",
        "phase": "seeking",
        "table_id": "tbl_b95704d231084e2a8c0fe87ec395a519",
        "round_number": 1,
        "currency": "CREDIT",
        "stake": 10,
        "challenge_raise": 10,
        "rake": {"bps": 0, "cap": None},
        "rake_taken": 0,
        "turn_timeout_seconds": 60,
        "pot": 20,
        "pot_account_id": "acct_a687c24955a2493b86445ac70e07d493",
        "favor": "blue",
        "pass_number": 1,
        "seats": [
            {
                "seat": 0,
                "account_id": "acct_067ff998da1f47bf84e2ef2a950dff6c",
                "role": "vigo",
                "status": "vigo",
                "voted": False,
                "paid_in": 0,
                "paid_out": 0,
                "client_seed": "_iwODyw5lCGSnyOLXfIPrw",
                "client_seed_source": "server",
            },
            {
                "seat": 1,
                "account_id": "acct_0be97b12b1f64323bd219e732fa49b43",
                "role": "player",
                "status": "to_roll",
                "voted": False,
                "paid_in": 10,
                "paid_out": 0,
                "client_seed": "83sKOQ4ryQo6VM-1rq606w",
                "client_seed_source": "server",
            },
            {
                "seat": 2,
                "account_id": "acct_830a85c7c33940c597161a1ddab1a30a",
                "role": "player",
                "status": "to_roll",
                "voted": False,
                "paid_in": 10,
                "paid_out": 0,
                "client_seed": "Tj0xgObilxKrxWL2Wn1rKw",
                "client_seed_source": "server",
            },
        ],
        "turn": {
            "seats": [1],
            "account_ids": ["acct_0be97b12b1f64323bd219e732fa49b43"],
            "allowed_actions": ["roll"],
            "default_action": "roll",
            "deadline_at": "2026-12-01T15:16:08.231416Z",
        },
        "outcome": None,
        "fairness": {
            "protocol": "pokna-hmac-sha256-v1",
            "mode": "stake",
            "pending_roll": None,
            "server_seed_hash": "26cd0292461c86c6696d5f6e40fa8dfab3b3735415bc574e70b5abfee1195c32",
            "client_seed": "fc61d704edcb0f720e779ccc024fc4551338b6e1e251930c257f1f5adc22d494",
            "server_seed": None,
            "next_nonce": 1,
            "commitment": {
                "protocol": "pokna-hmac-sha256-v1",
                "document": "commitment_receipt",
                "game_id": "game_f043bbd6150a4c19b7c033641dfd2318",
                "server_seed_hash": "26cd0292461c86c6696d5f6e40fa8dfab3b3735415bc574e70b5abfee1195c32",
                "created_at": "2026-12-01T15:15:08.126470Z",
                "game": {
                    "stake": 10,
                    "challenge_raise": 10,
                    "seats": [
                        {"seat": 0, "account_id": "acct_067ff998da1f47bf84e2ef2a950dff6c"},
                        {"seat": 1, "account_id": "acct_0be97b12b1f64323bd219e732fa49b43"},
                        {"seat": 2, "account_id": "acct_830a85c7c33940c597161a1ddab1a30a"},
                    ],
                },
                "key_id": "ed25519:d6f490673a115410",
                "signature": "BcUuXUj_Jf-ICm01aHXsR1QIS7x6n0RM-_kE019oYxYljwcSVxi37Peu9VJhfCgPH9CDQch3UoHeiBY7IXx6Bw",
            },
            "public_url": "/v1/fairness/proofs/cW3xD6vvQt4ZD5ReHasUaCKarG_vxcPE",
            "verify_url": "/verify?proof=cW3xD6vvQt4ZD5ReHasUaCKarG_vxcPE",
        },
        "version": 2,
        "created_at": "2026-12-01T15:15:08.126470Z",
        "started_at": "2026-12-01T15:15:08.231416Z",
        "ended_at": None,
    },
    "table": {
        "id": "tbl_b95704d231084e2a8c0fe87ec395a519",
        "object": "table",
        "account_ids": [
            "acct_067ff998da1f47bf84e2ef2a950dff6c",
            "acct_0be97b12b1f64323bd219e732fa49b43",
            "acct_830a85c7c33940c597161a1ddab1a30a",
        ],
        "stake": 10,
        "challenge_raise": 10,
        "rake": {"bps": 0, "cap": None},
        "currency": "CREDIT",
        "turn_timeout_seconds": 60,
        "rounds_played": 1,
        "rounds": [
            {
                "round_number": 1,
                "game_id": "game_f043bbd6150a4c19b7c033641dfd2318",
                "status": "in_progress",
                "vigo_account_id": "acct_067ff998da1f47bf84e2ef2a950dff6c",
                "outcome": None,
            }
        ],
        "totals": [
            {"account_id": "acct_067ff998da1f47bf84e2ef2a950dff6c", "net": 0},
            {"account_id": "acct_0be97b12b1f64323bd219e732fa49b43", "net": -10},
            {"account_id": "acct_830a85c7c33940c597161a1ddab1a30a", "net": -10},
        ],
        "created_at": "2026-12-01T15:15:07.996968Z",
    },
    "checkpoint": {
        "type": "pokna.ledger.checkpoint",
        "tenant_id": "ten_71fdab1617fc469bb6e8a298afb29c99",
        "seq": 5,
        "hash": "8a0e20a7a3179f4a19298fd7bce57e02241fd49fa6f18bff75efc91fc254bbcf",
        "heads": [
            {
                "chain": 0,
                "seq": 5,
                "hash": "8a0e20a7a3179f4a19298fd7bce57e02241fd49fa6f18bff75efc91fc254bbcf",
            },
            {
                "chain": 11,
                "seq": 2,
                "hash": "0c27c9d1e4b0f76d3f2a3c0d8e51f3b9a0b6c1e7d2f4a8c6b3e9d0f1a2b4c6d8",
            },
        ],
        "created_at": "2026-12-01T15:15:08.275295Z",
        "key_id": "ed25519:d6f490673a115410",
        "signature": "5fcNsnjj1cnkMzv-36quwzY7fxXCmhuR41bOK4yAyzrgkhhLM184XLZU39n-b7toodtT5O6Qp_c3rTRKh5zqAQ",
    },
    "account_entries": {
        "data": [
            {
                "transaction_id": "txn_bf05f458fd5f4df0a076b42b5edd82ac",
                "chain": 11,
                "seq": 2,
                "kind": "ante",
                "reference": "game_f043bbd6150a4c19b7c033641dfd2318",
                "amount": -10,
                "currency": "CREDIT",
                "created_at": "2026-12-01T15:15:08.235839Z",
            },
            {
                "transaction_id": "txn_489f85d762cf4d15afc58b363e3e5ddc",
                "chain": 3,
                "seq": 1,
                "kind": "deposit",
                "reference": None,
                "amount": 100,
                "currency": "CREDIT",
                "created_at": "2026-12-01T15:15:07.348542Z",
            },
        ],
        "has_more": False,
        "next_cursor": None,
    },
    "game_events": {
        "data": [
            {
                "seq": 1,
                "kind": "game_created",
                "data": {
                    "server_seed_hash": "26cd0292461c86c6696d5f6e40fa8dfab3b3735415bc574e70b5abfee1195c32"
                },
                "occurred_at": "2026-12-01T15:15:08.126470Z",
            },
            {
                "seq": 2,
                "kind": "action",
                "data": {"action": "start", "seat": 0, "balances": {"0": 30, "1": 30, "2": 30}},
                "occurred_at": "2026-12-01T15:15:08.231416Z",
            },
        ],
        "has_more": True,
        "next_cursor": "2",
    },
    "proof_pending": {
        "game_id": "game_f043bbd6150a4c19b7c033641dfd2318",
        "status": "in_progress",
        "revealed": False,
        "commitment": None,  # the game's own, set below
    },
}

ANSWERS["fairness_link"] = {
    "object": "fairness_link",
    "game_id": "game_6f1d0c0e5b2a4f0f9b8c7d6e5f4a3b2c",
    "status": "in_progress",
    "revealed": False,
    "commitment": {
        "document": "commitment_receipt",
        "protocol": "pokna-hmac-sha256-v1",
        "game_id": "game_6f1d0c0e5b2a4f0f9b8c7d6e5f4a3b2c",
        "server_seed_hash": "861e71aae3914702057bf23c67148ff7bf08956965cd1b6f3d48792fa5875587",
        "created_at": "2026-12-01T12:00:00.000000Z",
        "game": {"stake": 10, "challenge_raise": 10, "seats": []},
        "key_id": "ed25519:24f6ed6acbfe1009",
        "signature": "IZgv9mg50J6nnSEs6K7nouibXff54pM_U7rQRuxRnDeDTv8gXt9_Q2GHlLOvu7-UYSwPttKo4cVLd134K1H8Aw",
    },
    "client_seeds": [
        {
            "seat": 0,
            "account_id": "acct_vigo",
            "client_seed": "vigo-seed",
            "source": "server",
        },
        {
            "seat": 1,
            "account_id": "acct_han",
            "client_seed": "never-tell-me-the-odds",
            "source": "player",
        },
    ],
    "proof": None,
    "keys_url": "/v1/fairness/keys",
}

BY_OPERATION = {
    "fairness_link": "fairness_link",
    "create_game": "game",
    "get_game": "game",
    "deal_round": "game",
    "act": "game_action",
    "create_table": "table",
    "get_table": "table",
    "new_checkpoint": "checkpoint",
    "account_transactions": "account_entries",
    "game_events": "game_events",
    "game_proof": "proof_pending",
}
"""Operations whose answer's model carries no example of its own, and the example to show."""


ANSWERS["proof_pending"]["commitment"] = ANSWERS["game"]["fairness"]["commitment"]
ANSWERS["game_action"] = {  # the start's answer: the game as above, with the favor roll it made
    **ANSWERS["game"],
    "rolls": [
        {
            "nonce": 0,
            "seat": 0,
            "account_id": "acct_067ff998da1f47bf84e2ef2a950dff6c",
            "purpose": "favor",
            "face": 4,
            "color": "blue",
            "in_favor": None,
        }
    ],
}


def _page_of(model: Any) -> dict[str, Any]:
    """A one-item page of a model that carries its own example."""
    example = model.model_config["json_schema_extra"]["examples"][0]
    return {"data": [example], "has_more": False, "next_cursor": None}


ANSWERS["webhook_endpoints"] = _page_of(WebhookEndpointOut)
ANSWERS["webhook_deliveries"] = _page_of(WebhookDeliveryOut)
BY_OPERATION["list_endpoints"] = "webhook_endpoints"
BY_OPERATION["list_deliveries"] = "webhook_deliveries"


def example_answer(operation_id: str) -> Any:
    if operation_id == "checkpoints":
        return [ANSWERS["checkpoint"]]
    return ANSWERS[BY_OPERATION[operation_id]] if operation_id in BY_OPERATION else None
