"""What the package knows of the English language: WordNet 3.0 (``wordnet``) and the few word classes
several parsers share, declared once (``words``).

A lower layer: it imports nothing from the rest of the package, so the API, the question parser and
the agents may all use it.
"""
