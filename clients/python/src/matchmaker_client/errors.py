"""Typed errors of the client calls.

The matchmaker's functions answer a bad request in SQLSTATE class 22 with the message
``field = value: rule`` (22023), or with PostgreSQL's own message when a text is not a
value of the parameter's type at all (22P02, 22003, 22007). Classes 08, 40, 53 and 57
mean the server is unavailable for now. 42501 means the login lacks the role.
"""

from __future__ import annotations

import psycopg

__all__ = [
    "MatchmakerError",
    "Refusal",
    "Unavailable",
    "PermissionDenied",
    "Timeout",
    "parse_refusal",
    "is_unavailable",
    "translate",
]

# SQLSTATE classes that say "the server cannot answer now", not "the request is wrong".
UNAVAILABLE_CLASSES = frozenset({"08", "40", "53", "57"})


class MatchmakerError(Exception):
    """A call failed. ``sqlstate`` is the server's code, None when none was received."""

    def __init__(self, message: str, *, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate

    def __str__(self) -> str:
        if self.sqlstate:
            return f"{self.message} (SQLSTATE {self.sqlstate})"
        return self.message


class Refusal(MatchmakerError):
    """The request is wrong (class 22) and nothing was written: do not retry it unchanged.

    For a check of the matchmaker's functions (22023), ``field``, ``value`` and ``rule``
    are the parts of ``field = value: rule``: ``latencies.eu-west``, ``-3``, ``must be
    between 0 and 10000 ms``. ``value`` is as the message shows it, with the quotes of a
    quoted text removed; None when the message says NULL. For PostgreSQL's own messages
    (22P02, ...) ``field`` and ``value`` are None and ``rule`` is the message.
    """

    def __init__(
        self,
        message: str,
        *,
        sqlstate: str | None,
        field: str | None,
        value: str | None,
        rule: str,
    ) -> None:
        super().__init__(message, sqlstate=sqlstate)
        self.field = field
        self.value = value
        self.rule = rule


class Unavailable(MatchmakerError):
    """The server could not answer (class 08, 40, 53, 57, or the connection was lost).

    The call was retried where that is safe, ``attempts`` times in all. When
    ``may_have_committed`` is true the connection broke while the call's transaction was
    committing, so a write that is not idempotent (an enqueue) may have happened: read
    ``player_status`` before sending it again.
    """

    def __init__(
        self,
        message: str,
        *,
        sqlstate: str | None,
        attempts: int,
        may_have_committed: bool,
    ) -> None:
        super().__init__(message, sqlstate=sqlstate)
        self.attempts = attempts
        self.may_have_committed = may_have_committed


class PermissionDenied(MatchmakerError):
    """42501: the login is not a member of the role the call needs (matchmaker_client,
    matchmaker_server). Fix the login, not the request."""


class Timeout(MatchmakerError, TimeoutError):
    """The call did not finish within the client's ``timeout``; its statement was
    cancelled and its transaction rolled back."""


def parse_refusal(message: str) -> tuple[str, str | None, str] | None:
    """Split ``field = value: rule``; None when the message does not have that shape.

    The value may be a quoted text (``'alice'``, quotes doubled inside) that contains
    ``: `` itself, so a quoted value is read to its closing quote. A value cut at 80
    characters ends in ``...`` and may have lost its closing quote.
    """
    field, sep, rest = message.partition(" = ")
    if not sep or not field or " " in field.strip():
        return None
    value: str | None
    if rest.startswith("'"):
        i = 1
        text: list[str] = []
        while i < len(rest):
            ch = rest[i]
            if ch == "'":
                if rest.startswith("''", i):
                    text.append("'")
                    i += 2
                    continue
                if rest.startswith(": ", i + 1):
                    return field, "".join(text), rest[i + 3 :]
                break
            text.append(ch)
            i += 1
        # Not a whole quoted text: a value cut short, shown with `...`.
        cut = rest.find("...: ")
        if cut >= 0:
            return field, rest[1 : cut + 3], rest[cut + 5 :]
    value, sep, rule = rest.partition(": ")
    if not sep:
        return None
    if value == "NULL":
        value = None
    return field, value, rule


def sqlstate_of(exc: BaseException) -> str | None:
    return getattr(exc, "sqlstate", None)


def is_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the server is unavailable for now (worth a later retry)."""
    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate
    if state is not None:
        return state[:2] in UNAVAILABLE_CLASSES
    # No SQLSTATE: the connection could not be made or was lost (psycopg raises
    # OperationalError), or it was already closed (InterfaceError).
    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))


def translate(
    exc: psycopg.Error, *, attempts: int = 1, may_have_committed: bool = False
) -> MatchmakerError:
    """The typed error for a psycopg error."""
    state = exc.sqlstate
    diag = getattr(exc, "diag", None)
    message = (diag.message_primary if diag is not None else None) or str(exc).strip()
    if state is not None and state.startswith("22"):
        parts = parse_refusal(message) if state == "22023" else None
        if parts is None:
            return Refusal(message, sqlstate=state, field=None, value=None, rule=message)
        field, value, rule = parts
        return Refusal(message, sqlstate=state, field=field, value=value, rule=rule)
    if state == "42501":
        return PermissionDenied(message, sqlstate=state)
    if is_unavailable(exc):
        return Unavailable(
            message,
            sqlstate=state,
            attempts=attempts,
            may_have_committed=may_have_committed,
        )
    return MatchmakerError(message, sqlstate=state)
