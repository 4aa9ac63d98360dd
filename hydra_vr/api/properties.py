"""How verify_property asks about a property: a state ("Is the jug full?") or a part the thing has.

A program asked ``jug.verify_property("jug", "handle")``, and the VQA backend was asked "Is the jug
handle?", which no reader answers with yes. A property that is a thing (a noun in WordNet, not an
adjective, a living thing or a substance) is something the object has: "Does the jug have a handle?".
WordNet decides, not a list of parts.
"""

from __future__ import annotations

import re

from hydra_vr.lexicon import wordnet as wn


_NOT_HAD = ("organism", "substance", "material")


def names_a_part(prop: str) -> bool:
    """Whether ``prop`` ("handle", "red handle", "wheels") names a thing an object has rather than a state
    ("full", "wooden", "made of wood") or what it is ("a doctor": a person). Every word must be a noun or an
    adjective, and the last a noun that is no adjective, no living thing and no substance."""
    words = re.findall(r"[a-z]+(?:-[a-z]+)?", prop.lower())
    if not words or len(words) > 3:
        return False
    head = words[-1]
    if not wn.is_noun(head) or wn.is_adjective(head):
        return False
    # "a puppy", "a doctor": what the thing is; "cotton": what it is made of
    if any(wn.is_a(s, kind) for s in wn.noun_senses(head) for kind in _NOT_HAD):
        return False
    return all(wn.is_noun(w) or wn.is_adjective(w) for w in words[:-1])


def _with_article(prop: str) -> str:
    head = prop.split()[-1].lower()
    if wn.singular(head) != head:  # "wheels": no article
        return prop
    return ("an " if prop[:1].lower() in "aeiou" else "a ") + prop


def property_question(name: str, prop: str) -> str:
    """The yes/no question verify_property asks of a VQA backend."""
    if names_a_part(prop):
        return f"Does the {name} have {_with_article(prop)}?"
    return f"Is the {name} {prop}?"


def property_caption(name: str, prop: str) -> str:
    """The caption verify_property scores against ``a photo of a {name}`` with an image-text matcher."""
    if names_a_part(prop):
        return f"a photo of a {name} with {_with_article(prop)}"
    return f"a photo of a {prop} {name}"


__all__ = ["names_a_part", "property_caption", "property_question"]
