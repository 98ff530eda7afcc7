"""Reading a /metrics answer: every sample by name and labels, and what moved between two scrapes."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

Key = tuple[str, frozenset[tuple[str, str]]]


class Samples(dict[Key, float]):
    def value(self, name: str, **labels: str) -> float:
        """The sample with exactly these labels (0 when absent: a series is born on first use)."""
        return self.get((name, frozenset(labels.items())), 0.0)

    def total(self, name: str, **labels: str) -> float:
        """The sum over every sample of `name` whose labels include these."""
        wanted = set(labels.items())
        return sum(v for (n, found), v in self.items() if n == name and wanted <= found)

    def minus(self, before: Mapping[Key, float]) -> Samples:
        keys = set(self) | set(before)
        return Samples({key: self.get(key, 0.0) - before.get(key, 0.0) for key in keys})


def parse(text: str) -> Samples:
    samples = Samples()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples
