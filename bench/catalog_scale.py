"""Store-sized catalogs for the benchmark (issue 12): the shipped products followed by synthetic ones.

The synthetic titles never occur in the dataset: a generated series any of whose index keys (title,
series name, Japanese and romaji titles, ASIN) is found in any text of any line is dropped, so the
products in play, and therefore every result, are the same whatever the catalog's size.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ahocorasick

from fmquality.catalog_index import key_of, title_keys
from fmquality.models import CatalogItem

DEFAULT_SEED = 12

# -------------------------------------------------------------------------------------------------
# Synthetic catalog
# -------------------------------------------------------------------------------------------------

_ROMAJI = ("a i u e o ka ki ku ke ko sa shi su se so ta chi tsu te to na ni nu ne no ha hi fu he ho ma mi mu "
           "me mo ya yu yo ra ri ru re ro wa ga gi gu ge go za ji zu ze zo da de do ba bi bu be bo pa pi pu "
           "pe po kyo ryu sho jo").split()
_ENGLISH = ("vel mor dra kin thal wyn zor bel cor dun fen gal hal ith lor mar nor quel ran sil tor var wen yor "
            "bra cal del eth fal gor hel jor kal lun mir nel pel rhy sar tam vor xan zen").split()
_NOUNS = ("Chronicles Academy Saga Blade Requiem Frontier Legacy Knights Garden Odyssey Covenant Rhapsody "
          "Horizon Archive Labyrinth Eclipse").split()
_KATAKANA = ("アイウエオカキクケコサシスセソタチツテトナニヌネノ"
             "ハヒフヘホマミムメモヤユヨラリルレロワガギグゲゴザ"
             "ジズゼゾダデドバビブベボパピプペポ")
_KANJI = ("月星風花雪海空夜光影剣刃竜鬼神魔王姫騎士学園物語伝"
          "城島森川山火水雷銀黒白紅蒼翠桜雲霧炎氷鏡夢獣")
_ASIN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_USD = (7.99, 9.99, 10.99, 11.99, 12.99, 13.99, 14.99, 17.99, 19.99, 24.99, 29.99, 39.99)
_JPY = (418, 462, 484, 528, 594, 660, 693, 748, 770, 880, 990, 1320, 1980, 2420)
_AVAILABILITY = (("in_stock", 70), ("out_of_stock", 10), ("preorder", 10), ("limited", 10))


def _romaji_word(rng: random.Random, low: int = 2, high: int = 4) -> str:
    return "".join(rng.choice(_ROMAJI) for _ in range(rng.randint(low, high))).capitalize()


def _romaji_title(rng: random.Random) -> str:
    form = rng.random()
    if form < 0.4:
        return f"{_romaji_word(rng)} no {_romaji_word(rng)}"
    if form < 0.7:
        return f"{_romaji_word(rng)} {_romaji_word(rng)}"
    return _romaji_word(rng, 3, 5)


def _english_title(rng: random.Random) -> str:
    word = "".join(rng.choice(_ENGLISH) for _ in range(rng.randint(2, 3))).capitalize()
    noun = rng.choice(_NOUNS)
    form = rng.random()
    if form < 0.4:
        return f"{word} {noun}"
    if form < 0.6:
        return f"The {word} {noun}"
    if form < 0.8:
        return f"{noun} of {word}"
    return f"{word}: {noun} of the {rng.choice(_NOUNS)}"


def _japanese_title(rng: random.Random) -> str:
    form = rng.random()
    if form < 0.4:
        return "".join(rng.choice(_KATAKANA) for _ in range(rng.randint(4, 7)))
    if form < 0.7:
        return "".join(rng.choice(_KANJI) for _ in range(rng.randint(3, 5)))
    return "".join(rng.choice(_KANJI) for _ in range(2)) + "の" + "".join(rng.choice(_KANJI) for _ in range(2))


def _series(rng: random.Random, genres: list[str]) -> list[dict[str, Any]]:
    """One invented series: one to twelve volumes sharing author, genre, currency and price."""
    romaji = _romaji_title(rng)
    title = _english_title(rng) if rng.random() < 0.5 else romaji
    title_ja = _japanese_title(rng)
    volumes = rng.randint(2, 12) if rng.random() < 0.2 else 1
    author = f"{_romaji_word(rng)} {_romaji_word(rng)}"
    if rng.random() < 0.15:
        currency, price = "JPY", rng.choice(_JPY)
    else:
        currency, price = "USD", rng.choice(_USD)
    genre = rng.choice(genres)
    states, weights = zip(*_AVAILABILITY)
    out = []
    for volume in range(1, volumes + 1):
        many = volumes > 1
        out.append({
            "asin": "B0" + "".join(rng.choice(_ASIN_CHARS) for _ in range(8)),
            "title": f"{title}, Vol. {volume}" if many else title,
            "price": price,
            "currency": currency,
            "availability": rng.choices(states, weights)[0],
            "author": author,
            "title_ja": f"{title_ja} {volume}巻" if many else title_ja,
            "title_romaji": romaji,
            "genre": genre,
        })
    return out


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def dataset_haystack(dataset: str | Path) -> str:
    """Every string of every line of the dataset (queries, answers, conversations, references,
    snapshots, ids...) in the index's compact form, one per line: where a key must not occur."""
    texts: list[str] = []
    for line in Path(dataset).read_bytes().splitlines():
        if line.strip():
            _strings(json.loads(line), texts)
    return "\n".join(key_of(t) for t in texts)


def _keys_found(keys: set[str], haystack: str) -> set[str]:
    """The keys that occur anywhere in ``haystack``, even inside a word: stricter than the index."""
    automaton = ahocorasick.Automaton()
    for key in keys:
        automaton.add_word(key, key)
    automaton.make_automaton()
    return {key for _, key in automaton.iter(haystack)}


def synthetic_catalog(base: list[CatalogItem], size: int, haystack: str, seed: int = DEFAULT_SEED,
                      batch: int = 2000) -> tuple[list[CatalogItem], int]:
    """``base`` followed by synthetic products up to ``size`` items, and how many generated series
    were dropped because one of their keys occurs in ``haystack``. Deterministic for a seed; a
    smaller size gives a prefix of a larger one."""
    rng = random.Random(seed)
    genres = sorted({i.genre for i in base if i.genre})
    taken_keys = {k for item in base for k in title_keys(item)}
    taken_asins = {i.asin for i in base}

    def candidates() -> Iterator[list[CatalogItem]]:
        while True:
            series = [CatalogItem.model_validate(v) for v in _series(rng, genres)]
            keys = set().union(*(title_keys(i) for i in series))
            asins = {i.asin for i in series}
            # Unique titles and ASINs: another series (or a shipped product) never shares a key.
            if keys & taken_keys or asins & taken_asins or len(asins) < len(series):
                continue
            taken_keys.update(keys)
            taken_asins.update(asins)
            yield series

    out = list(base)
    dropped = 0
    stream = candidates()
    while len(out) < size:
        chunk = [next(stream) for _ in range(batch)]
        found = _keys_found(set().union(*(title_keys(i) for s in chunk for i in s)), haystack)
        for series in chunk:
            if any(title_keys(i) & found for i in series):
                dropped += 1
            else:
                out.extend(series)
    return out[:size], dropped


def write_catalog(items: list[CatalogItem], path: Path) -> None:
    path.write_text(json.dumps([i.model_dump(mode="json", exclude_none=True) for i in items], ensure_ascii=False),
                    encoding="utf-8")
