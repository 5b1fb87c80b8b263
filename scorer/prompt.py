"""The versioned prompt builder.

The prompt puts the static parts first (instructions, question, options: the same for every decision
of a type, so their KV cache can be reused) and the per-decision state last. Each option's text is
appended directly to the rendered prompt; the separator (``"Decision: "``'s trailing space) belongs to
the prompt, as the contract says. Changing a template string is a new builder version.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

BUILDER_NAME = "default/1"

INSTRUCTIONS = (
    "Choose the one option that best fits the case below. Reply with the option exactly as written.\n\n"
)
STATIC_TEMPLATE = "{instructions}Question: {question}\nOptions:\n{options}\n\nCase: "
OPTION_LINE = "- {text}"
SUFFIX_TEMPLATE = "{state}\nDecision: "

TEMPLATE_SHA256 = hashlib.sha256(
    f"{BUILDER_NAME}\x00{INSTRUCTIONS}\x00{STATIC_TEMPLATE}\x00{OPTION_LINE}\x00{SUFFIX_TEMPLATE}".encode()
).hexdigest()


@dataclass(frozen=True, slots=True)
class RenderedPrompt:
    """A prompt split where the static prefix ends and the per-decision suffix begins."""

    static: str
    suffix: str

    @property
    def text(self) -> str:
        """The whole prompt: each option's text is appended to exactly this string."""
        return self.static + self.suffix


def render(question: str, option_texts: Sequence[str], state: str) -> RenderedPrompt:
    """Render the default/1 prompt for one decision."""
    options = "\n".join(OPTION_LINE.format(text=text) for text in option_texts)
    static = STATIC_TEMPLATE.format(instructions=INSTRUCTIONS, question=question, options=options)
    return RenderedPrompt(static=static, suffix=SUFFIX_TEMPLATE.format(state=state))
