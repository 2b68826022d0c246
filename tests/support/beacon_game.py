"""The service set up to play beacon-mode games against a test relay (support.beacon_server): its drand
chain written as the /info file POKNA_BEACON_CHAIN_FILE names, and settings that use both."""

from __future__ import annotations

import json
from pathlib import Path

from pokna.settings import Environment, Settings
from support.beacon_server import BeaconRelay

WAIT_MARGIN_SECONDS = 0.5


def chain_file_of(directory: Path, relay: BeaconRelay) -> Path:
    """The relay's chain as its /info document, where a verifier's --beacon-chain can read it too."""
    path = directory / "beacon-info.json"
    path.write_text(json.dumps(relay.info()))
    return path


def beacon_settings(directory: Path, database_url: str, relay: BeaconRelay, chain_file: Path) -> Settings:
    return Settings(
        env=Environment.TEST,
        data_dir=directory / "data",
        database_url=database_url,
        beacon_urls=(relay.url,),
        beacon_chain_file=chain_file,
        beacon_wait_margin_seconds=WAIT_MARGIN_SECONDS,
    )
