"""What the package knows of the English language, from kept resources (WordNet 3.0), not word lists.

A lower layer: it imports nothing from the rest of the package, so the API, the question parser and
the agents may all use it.
"""
