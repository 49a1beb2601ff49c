"""Labelled notes read by the model server, scored beside the local classifier.

Reads every note of the chosen sets through the configured OpenAI-compatible endpoint
(PRDIGEST_LLM_URL, PRDIGEST_LLM_MODEL, PRDIGEST_LLM_API_KEY, PRDIGEST_LLM_TIMEOUT and
PRDIGEST_LLM_CONCURRENCY, or --url / --model) and prints, per set and in aggregate,
verdict accuracy (main verdict, and every verdict of the note), named-role macro-F1 and
each role's F1 for: the classifier alone; the model on every note
(PRDIGEST_LLM_READS=all); the model on the notes the classifier is unsure of or that name
more than one group (PRDIGEST_LLM_READS=unsure). A note the model gives no valid reading
keeps the classifier's, as in the product. Aggregates only; nothing is stored.

    .venv/bin/python -m tests.bench.bench_llm --sets unseen_v9 val1 val2
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Sequence
from typing import Any

from bot.classify import build_classifier
from bot.classify.taxonomy import load_taxonomy
from bot.config import load_settings
from bot.domain import Classification
from bot.llm_reader import LlmConfig, ModelReader, unsure
from tests.labelled import Labelled, load_set, score

DEFAULT_SETS = ("unseen_v9",)


class MemoryCache:
    """Readings kept for this run only (the product keeps them in the store)."""

    def __init__(self) -> None:
        self.readings: dict[str, dict[str, Any]] = {}

    def cached_readings(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        return {k: self.readings[k] for k in keys if k in self.readings}

    def save_readings(self, readings: Sequence[tuple[str, str, dict[str, Any]]]) -> None:
        self.readings.update((k, r) for k, _, r in readings)


def _config(args: argparse.Namespace) -> LlmConfig:
    settings = load_settings()
    url = args.url or settings.llm_url
    model = args.model or settings.llm_model
    if not url or not model:
        raise SystemExit("set PRDIGEST_LLM_URL and PRDIGEST_LLM_MODEL (or --url and --model)")
    key = settings.llm_api_key
    return LlmConfig(
        url=url.rstrip("/"),
        model=model,
        api_key=key.get_secret_value() if key else None,
        reads="all",
        timeout=settings.llm_timeout,
        concurrency=args.concurrency or settings.llm_concurrency,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(DEFAULT_SETS), help="labelled sets")
    parser.add_argument("--url", help="base URL (default PRDIGEST_LLM_URL)")
    parser.add_argument("--model", help="model (default PRDIGEST_LLM_MODEL)")
    parser.add_argument("--concurrency", type=int, help="default PRDIGEST_LLM_CONCURRENCY")
    parser.add_argument("--limit", type=int, default=0, help="first N notes of each set")
    args = parser.parse_args()
    config = _config(args)
    taxonomy = load_taxonomy(None)
    classifier = build_classifier(taxonomy)
    slugs = taxonomy.slugs
    sets: dict[str, list[Labelled]] = {}
    for name in args.sets:
        notes = load_set(name)
        sets[name] = notes[: args.limit] if args.limit else notes
    everything = [n for notes in sets.values() for n in notes]
    local = {(n.title, n.paragraph): classifier.classify(n.title, n.paragraph) for n in everything}

    reader = ModelReader(config, taxonomy, MemoryCache())
    items = [(title, paragraph, c) for (title, paragraph), c in local.items()]
    started = time.monotonic()
    got = reader.read(items)
    seconds = time.monotonic() - started
    problem = reader.finish()
    model = {key: g or local[key] for key, g in zip(local, got, strict=True)}
    stats = reader.stats
    print(
        f"{len(local)} notes of {', '.join(sets)} through {config.read_by} at {config.url}: "
        f"{stats.read} read, {stats.invalid} invalid answers, "
        f"{stats.implausible} implausible answers, "
        f"{stats.failed + stats.not_asked} not read, in {seconds:.1f} s "
        f"(concurrency {config.concurrency})"
    )
    if problem:
        print(problem)

    def by(table: dict[tuple[str, str], Classification]) -> Any:
        return lambda title, paragraph: table[(title, paragraph)]

    mixed = {key: model[key] if unsure(c) else c for key, c in local.items()}
    asked = sum(unsure(c) for c in local.values())
    readers = {
        "classifier": local,
        "llm (every note)": model,
        f"llm (unsure notes: {asked} of {len(local)})": mixed,
    }
    groups = [*sets.items(), ("all", everything)] if len(sets) > 1 else list(sets.items())
    for name, notes in groups:
        print(f"\n{name}")
        for label, table in readers.items():
            print("  " + score(notes, by(table), slugs).line(label))


if __name__ == "__main__":
    main()
