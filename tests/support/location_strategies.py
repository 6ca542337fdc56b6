"""Hypothesis strategies for location prefixes, shared by the rebase properties and the SQL comparisons.

Each caller brings its own alphabet: the unit properties use characters no database could store
(the Kelvin sign), the SQL comparisons only what fits a latin1 column.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st


def random_case(draw, text: str) -> str:
    """`text` with some ASCII letters' case flipped (scheme and host must match whatever the case)."""
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.swapcase() if flip and c.isascii() else c for c, flip in zip(text, flips))


@dataclass(frozen=True)
class LocationAlphabet:
    segment_chars: str
    schemes: tuple[str, ...]
    hosts: tuple[str, ...]
    users: tuple[str, ...]   # userinfo parts, "" for none (repeat "" to weight it)
    ports: tuple[str, ...]
    segment_max: int

    def paths(self) -> st.SearchStrategy[str]:
        """'' or '/seg/seg', no '.'/'..' segments and no trailing white space (invalid in a prefix)."""
        segments = st.text(self.segment_chars, min_size=1, max_size=self.segment_max).filter(
            lambda s: s not in (".", ".."))
        return st.lists(segments, max_size=3).map(lambda parts: "".join("/" + p for p in parts)).filter(
            lambda p: not p[-1:].isspace())

    def prefixes(self) -> st.SearchStrategy[str]:
        """Valid prefix text, in any of its spellings, with or without a trailing slash."""
        @st.composite
        def build(draw) -> str:
            scheme = draw(st.sampled_from(self.schemes))
            path = draw(self.paths())
            if scheme == "file":
                text = random_case(draw, draw(st.sampled_from(["file:", "file://"]))) + (path or "/r")
            else:
                user = draw(st.sampled_from(self.users))
                port = draw(st.sampled_from(self.ports))
                host = random_case(draw, draw(st.sampled_from(self.hosts)))
                text = f"{random_case(draw, scheme)}://{user}{host}{port}{path}"
            return text + ("/" if draw(st.booleans()) else "")
        return build()

    def mutate(self, draw, base: str, choice: int) -> str:
        """A near miss of `base`: 1 respells its case, 2 drops a character, 3 inserts one; else unchanged."""
        if choice == 1:
            return random_case(draw, base)
        if choice == 2 and base:
            i = draw(st.integers(0, len(base) - 1))
            return base[:i] + base[i + 1:]
        if choice == 3:
            i = draw(st.integers(0, len(base)))
            return base[:i] + draw(st.sampled_from(list(self.segment_chars + "/"))) + base[i:]
        return base
