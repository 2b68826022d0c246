"""The zero-setup default holds a burst: 64 concurrent clients, reads and keyed writes, against a real
`pokna serve` on the embedded PostgreSQL. The SQLite default answered most of such a burst with 503 after
~10 s; this one must answer every request, none with 503 or 500, and apply every keyed write exactly once.
How long the answers take is measured by bench/embedded_burst.py (figures in bench/README.md), not here:
on this shared 2-core machine the suite's other worker runs beside this test."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from support.burst import CLIENTS, REQUESTS_PER_CLIENT, TENANTS, burst, opened_wallets, percentiles
from support.servers import serving

pytestmark = pytest.mark.xdist_group("embedded")


def test_64_clients_on_the_embedded_default_all_get_their_answer(cluster_home: Path) -> None:
    data_dir = cluster_home / ".pokna"
    with serving({"POKNA_DATABASE_URL": ""}, data_dir) as server:
        keys, wallets = opened_wallets(server.base, data_dir)
        answers = burst(server.base, keys, wallets, attempt=0)
        print(f"\n{len(answers)} answers from {CLIENTS} clients: {percentiles(answers)}")
        assert len(answers) == CLIENTS * REQUESTS_PER_CLIENT
        assert sorted({status for status, _ in answers}) == [200, 201]
        with httpx.Client(base_url=server.base, timeout=30) as http:
            for key, wallet in zip(keys, wallets, strict=True):
                balance = http.get(f"/v1/accounts/{wallet}", headers={"Authorization": f"Bearer {key}"})
                assert balance.json()["balance"] == CLIENTS // TENANTS  # every keyed write applied once
