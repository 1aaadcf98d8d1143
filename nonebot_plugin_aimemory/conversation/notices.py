"""How often the same bad news is told: while the key or the balance is bad every message
fails the same way, and a chat over its daily quota asks again and again, so each notice
goes out at most once in its interval."""

from __future__ import annotations

# While the key or the balance is bad every message fails the same way: one notice per chat
# in this time (the other messages get no reply), one private message to the SUPERUSERS.
ACCOUNT_NOTICE_INTERVAL_SECONDS = 600.0
SUPERUSER_NOTICE_INTERVAL_SECONDS = 3600.0
# A chat over its daily token quota gets one notice in this time; its other addressed
# messages get no reply (and no model call).
QUOTA_NOTICE_INTERVAL_SECONDS = 3600.0


class NoticeTimes:
    """When each chat was last told of an account problem or of its used-up quota, and
    when the SUPERUSERS were; `now` is the caller's monotonic clock, in seconds."""

    def __init__(self) -> None:
        self._account_noticed_at: dict[str, float] = {}
        # chat key -> (day, when) of its last quota notice.
        self._quota_noticed_at: dict[str, tuple[str, float]] = {}
        self._superusers_told_at: float | None = None

    def account_notice_due(self, key: str, now: float) -> bool:
        """Whether the chat is told of the key or balance problem now (and then not again
        for ACCOUNT_NOTICE_INTERVAL_SECONDS)."""
        noticed = self._account_noticed_at
        for stale in [
            k for k, at in noticed.items() if now - at >= ACCOUNT_NOTICE_INTERVAL_SECONDS
        ]:
            del noticed[stale]
        if key in noticed:
            return False
        noticed[key] = now
        return True

    def superusers_notice_due(self, now: float) -> bool:
        """Whether the SUPERUSERS are told what the service said now (and then not again
        for SUPERUSER_NOTICE_INTERVAL_SECONDS)."""
        told = self._superusers_told_at
        if told is not None and now - told < SUPERUSER_NOTICE_INTERVAL_SECONDS:
            return False
        self._superusers_told_at = now
        return True

    def quota_notice_due(self, key: str, day: str, now: float) -> bool:
        """Whether the chat is told of its used-up quota now: once per
        QUOTA_NOTICE_INTERVAL_SECONDS, and again on a new day."""
        noticed = self._quota_noticed_at
        for stale in [
            k for k, (_, at) in noticed.items() if now - at >= QUOTA_NOTICE_INTERVAL_SECONDS
        ]:
            del noticed[stale]
        if noticed.get(key, ("", 0.0))[0] == day:
            return False
        noticed[key] = (day, now)
        return True
