"""The comments of a source text, as Python's tokenizer finds them (a `#` inside a string literal
is no comment)."""
from __future__ import annotations

import io
import tokenize
from typing import Iterator


def comment_texts(text: str) -> Iterator[str]:
    """Each comment of `text`, with its `#`, in order; none past a point the tokenizer cannot read."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                yield token.string
    except (tokenize.TokenError, SyntaxError):
        return
