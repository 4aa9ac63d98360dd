"""What a question asks of a measure, as explicit arguments of ``api``'s measures.

The question parsers (:mod:`hydra_vr.answer_types`, :mod:`hydra_vr.question`) read a question into these;
``api.where`` and ``api.focus`` take them as they are and never parse a question themselves. A module of its
own, importing nothing, so that both sides can import it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlaceAsked:
    """What a place question asks: where ``thing`` lies, as one of ``options`` (the question's own words,
    each naming the place in ``places``: left/right/top/bottom/middle/edge), in the photo
    (``reference`` "") or beside another thing ("to the left or to the right of the woman in the red
    scarf": ``reference`` "woman in the red scarf"). ``frame_named``: the question names the photo or a
    side of it, so it asks where in the photo even when there are several of the thing."""

    thing: str
    options: tuple[str, ...]
    places: tuple[str, ...]
    reference: str = ""
    frame_named: bool = False


@dataclass(frozen=True)
class FocusAsked:
    """A question about focus: the ``region`` it asks about ("background", "photo" or "thing") and the pole each
    answer claims (``claims``: (answer, "sharp" | "blurry") pairs: "sharp or blurry?" -> each option its own;
    "Is the background blurry?" -> yes blurry, no sharp)."""

    region: str
    claims: tuple[tuple[str, str], ...]

    def claim(self, answer: str) -> str | None:
        return dict(self.claims).get(answer)


@dataclass(frozen=True)
class LightAsked:
    """A question about the light a photo shows: by day or at night (``measure`` "time"), in sun or under a sky that
    hides it (``measure`` "sky"); ``claims`` gives the pole each answer claims ("day" | "night", "sunny" |
    "overcast": "Is it sunny or rainy?" -> sunny sunny, rainy overcast; "Is it night?" -> yes night, no day)."""

    measure: str
    claims: tuple[tuple[str, str], ...]

    def claim(self, answer: str) -> str | None:
        return dict(self.claims).get(answer)

    @property
    def needs_clear_sky(self) -> bool:
        """A yes/no of the sky's own state ("Is it cloudy?"): a sunny sky may still hold clouds, so only a clear one
        decides it (a choice, "sunny or rainy?", is decided by blue sky in part of it)."""
        return self.measure == "sky" and {a for a, _ in self.claims} <= {"yes", "no"}


@dataclass(frozen=True)
class Claims:
    """A question about one measure with two poles: ``claims`` gives the pole each answer claims."""

    claims: tuple[tuple[str, str], ...]

    def claim(self, answer: str) -> str | None:
        return dict(self.claims).get(answer)


@dataclass(frozen=True)
class OrientationAsked(Claims):
    """A question about which way up a thing is ("Is the label upside down?", "Is the page upright or upside
    down?"): each answer claims "upside down" or "upright"."""


@dataclass(frozen=True)
class SmileAsked(Claims):
    """A question whether someone smiles ("Is the chef smiling?", "Are they smiling or frowning?"): each answer claims
    "smiling" or "not smiling"."""


__all__ = ["Claims", "FocusAsked", "LightAsked", "OrientationAsked", "PlaceAsked", "SmileAsked"]
