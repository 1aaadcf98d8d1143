"""Who may use the panel: the operator with the token. Logging in trades the token for a
random session id kept here with an expiry (the cookie never holds the token); the JSON API
also takes the token itself as a Bearer header. Writes authorised by the cookie also need
the session's CSRF token in a header, which a page of another site cannot read or send.
Wrong tokens are counted per client address: too many in a minute and it must wait."""

from __future__ import annotations

import hmac
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

SESSION_COOKIE = "aimemory_session"
CSRF_COOKIE = "aimemory_csrf"
CSRF_HEADER = "X-CSRF-Token"
SESSION_SECONDS = 7 * 24 * 3600
# Wrong tokens allowed per client address in FAILURE_WINDOW_SECONDS, then 429 until the
# oldest of them is that old.
MAX_FAILURES = 5
FAILURE_WINDOW_SECONDS = 60.0
# Sessions kept at most (oldest dropped first): logging in in a loop cannot grow memory.
MAX_SESSIONS = 256

Clock = Callable[[], float]


@dataclass(slots=True)
class PanelSession:
    """A logged-in browser: its CSRF token and when it expires (monotonic seconds)."""

    csrf: str
    expires_at: float


class PanelAuth:
    """The token, the logged-in sessions and the failure counts, in memory (a restart
    logs everyone out, which is fine for one operator)."""

    def __init__(self, token: str, clock: Clock = time.monotonic) -> None:
        self._token = token.encode()
        self._clock = clock
        self._sessions: dict[str, PanelSession] = {}
        self._failures: dict[str, deque[float]] = {}

    def token_matches(self, candidate: str) -> bool:
        """Constant-time comparison with the configured token."""
        return hmac.compare_digest(candidate.encode(), self._token)

    def limited(self, client: str) -> bool:
        """Whether `client` made too many wrong attempts lately."""
        failures = self._recent_failures(client)
        return failures is not None and len(failures) >= MAX_FAILURES

    def note_failure(self, client: str) -> None:
        """Count one wrong token from `client`."""
        failures = self._recent_failures(client)
        if failures is None:
            failures = self._failures[client] = deque()
        failures.append(self._clock())
        if len(self._failures) > MAX_SESSIONS * 16:
            self._failures.pop(next(iter(self._failures)))

    def _recent_failures(self, client: str) -> deque[float] | None:
        failures = self._failures.get(client)
        if failures is None:
            return None
        cutoff = self._clock() - FAILURE_WINDOW_SECONDS
        while failures and failures[0] < cutoff:
            failures.popleft()
        if not failures:
            del self._failures[client]
            return None
        return failures

    def open_session(self) -> tuple[str, PanelSession]:
        """A new session id and its session, after a right token."""
        now = self._clock()
        for sid in [s for s, session in self._sessions.items() if session.expires_at <= now]:
            del self._sessions[sid]
        while len(self._sessions) >= MAX_SESSIONS:
            self._sessions.pop(next(iter(self._sessions)))
        sid = secrets.token_urlsafe(32)
        session = self._sessions[sid] = PanelSession(
            secrets.token_urlsafe(32), now + SESSION_SECONDS
        )
        return sid, session

    def session(self, sid: str | None) -> PanelSession | None:
        """The live session with this id, or None."""
        if not sid:
            return None
        session = self._sessions.get(sid)
        if session is None:
            return None
        if session.expires_at <= self._clock():
            del self._sessions[sid]
            return None
        return session

    def close_session(self, sid: str | None) -> None:
        """Log a session out."""
        if sid:
            self._sessions.pop(sid, None)


def csrf_matches(session: PanelSession, header: str | None) -> bool:
    """Whether the request carries the session's CSRF token."""
    return bool(header) and hmac.compare_digest(str(header).encode(), session.csrf.encode())
