"""Reading an operator's /metrics the way Prometheus does (its text format, parsed by prometheus_client)."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(port: int, host: str = "127.0.0.1") -> dict[tuple[str, frozenset], float]:
    """Every sample as {(name, frozenset(labels.items())): value}."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def sample(samples: dict[tuple[str, frozenset], float], name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))
