"""One rule of the window labels (`LabelRule`) and how an ordered list of them names a window (`first`): the first
rule that applies names the label, with the labels the counters could not rule out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from gputriage.diagnosis.run.window_figures import Figures
from gputriage.model.bottleneck import Bottleneck as B
from gputriage.model.finding import Threshold, fill_known

Decision = tuple[B, list[B]]  # the label, and the others the counters cannot rule out


def _always(f: Figures) -> bool:
    return True


def _nothing(f: Figures) -> list[B]:
    return []


@dataclass(frozen=True)
class LabelRule:
    """Where `when` holds for a window's figures, the window is `label`, with `possible` left open. A rule without
    one label is a group (`then`: the first of its rules that applies names the label) or reads its label from the
    figures (`read`, naming one of `names`)."""

    label: B | None
    meaning: str  # what it says, for the docs: a template that names its thresholds as fields (`{name:g}`)
    thresholds: tuple[Threshold, ...] = ()
    when: Callable[[Figures], bool] = _always
    possible: Callable[[Figures], list[B]] = _nothing
    gpm: bool | None = None  # True: only where GPM is read; False: only where it is not
    needs: tuple[str, ...] = ("gpu",)  # what it needs to see a window at all (besides GPM, `gpm`)
    title: str = ""  # the docs' name of a rule without one label
    then: tuple[LabelRule, ...] = ()
    read: Callable[[Figures], Decision | None] | None = None
    names: tuple[B, ...] = ()
    leaves_open: Callable[[Figures], bool] | None = None  # it may hold: its label stays possible beside a later rule's
    # it names its label by elimination: what is left once the counters rule the other causes out, no sign of it seen
    by_elimination: bool = False

    def apply(self, f: Figures) -> Decision | None:
        """The label this rule names for `f`, or None where it does not apply."""
        if self.gpm is not None and self.gpm != f.gpm:
            return None
        if not self.when(f):
            return None
        if self.then:
            return first(self.then, f)
        if self.read is not None:
            return self.read(f)
        assert self.label is not None, self.title
        return self.label, self.possible(f)

    def gives(self) -> tuple[B, ...]:
        """The labels this rule can name."""
        if self.then:
            return tuple(dict.fromkeys(b for rule in self.then for b in rule.gives()))
        return (self.label,) if self.label is not None else self.names

    def requires(self) -> tuple[str, ...]:
        """What a window needs for this rule to see it."""
        return (*self.needs, "gpm") if self.gpm else self.needs

    def rendered(self) -> str:
        """The meaning with the thresholds' values written where it names them."""
        return fill_known(self.meaning, {t.name: t.value for t in self.thresholds})


def first(rules: Sequence[LabelRule], f: Figures) -> Decision | None:
    """The label the first rule that applies names; a rule passed over that may hold (`leaves_open`) stays possible
    beside it."""
    left_open: list[B] = []
    for rule in rules:
        found = rule.apply(f)
        if found is not None:
            return found[0], [*found[1], *left_open]
        if rule.leaves_open is not None and rule.label is not None and rule.leaves_open(f):
            left_open.append(rule.label)
    return None


def deciding(rules: Sequence[LabelRule], f: Figures) -> LabelRule | None:
    """The rule that names `f`'s label (inside a group, the group's rule that does)."""
    for rule in rules:
        if rule.apply(f) is None:
            continue
        return deciding(rule.then, f) if rule.then else rule
    return None
