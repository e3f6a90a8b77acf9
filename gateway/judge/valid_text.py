"""Valid text: a call's text must be valid Unicode before anything reads it."""

from __future__ import annotations

from gateway.errors import InvalidUnicode
from gateway.judge.call import Call
from gateway.unicode import not_unicode

__all__ = ["ValidText"]


class ValidText:
    """Refuses a call whose arguments (or the input responses and request state it brings back) are not valid
    Unicode: a lone UTF-16 surrogate, which JSON can carry and no file name, store, hash or log can. Nothing
    could describe or run it faithfully; the ledger records it with the text escaped (gateway/unicode.py)."""

    async def __call__(self, call: Call) -> None:
        origin = call.origin
        for what, value in (
            ("argument", call.arguments),
            ("input response", origin.input_responses),
            ("request state", origin.request_state),
        ):
            problem = not_unicode(what, value)
            if problem is not None:
                raise InvalidUnicode(problem)
