"""Signed-in sessions, held by the console's process (docs/decisions/0019-console.md).

A session is a random id in an HttpOnly, SameSite=Strict cookie; the API key it signed in
with stays here, in memory, and is never written to a page, a URL or a log line. A session
ends after `idle_s` without a request, after `absolute_s` in all, on sign-out, or when the
process restarts. Each session has its own CSRF token, which every form that changes
something must carry back (`valid_csrf`)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

SESSION_ID_BYTES = 32
CSRF_BYTES = 32
MAX_SESSIONS = 10_000  # beyond this the least recently used session is signed out
# Sessions made by auto sign-in (no key typed) are a pool of their own, so that no number of
# them can sign out a session someone signed in to by hand; beyond this the least recently
# used automatic one ends.
MAX_AUTO_SESSIONS = 64


def key_digest(key: str) -> str:
    """A key's name in the console's caches and logs (never the key itself)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


@dataclass
class Session:
    id: str
    key: str = field(repr=False)  # never logged, never rendered
    csrf: str = field(repr=False)
    created: float
    last_seen: float
    subject: str = ""  # who the gateway says the key is (for the page header and logs)
    scopes: tuple[str, ...] = ()
    # made by auto sign-in, for the browser with this id (its own cookie; "" for a client
    # that keeps no cookies)
    auto: bool = False
    browser: str = field(default="", repr=False)

    @property
    def key_name(self) -> str:
        return key_digest(self.key)


class SessionStore:
    """Sessions by id; thread-safe. `clock` is injectable for tests."""

    def __init__(self, idle_s: float, absolute_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if idle_s <= 0 or absolute_s <= 0:
            raise ValueError("session lifetimes must be positive")
        self.idle_s = idle_s
        self.absolute_s = absolute_s
        self._clock = clock
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def create(self, key: str, subject: str = "", scopes: tuple[str, ...] = (),
               auto: bool = False, browser: str = "") -> Session:
        now = self._clock()
        session = Session(id=secrets.token_urlsafe(SESSION_ID_BYTES), key=key,
                          csrf=secrets.token_urlsafe(CSRF_BYTES), created=now, last_seen=now,
                          subject=subject, scopes=scopes, auto=auto, browser=browser)
        with self._lock:
            self._expire(now)
            if auto:
                self._evict([s for s in self._sessions.values() if s.auto],
                            MAX_AUTO_SESSIONS)
            self._evict(list(self._sessions.values()), MAX_SESSIONS)
            self._sessions[session.id] = session
        return session

    def _evict(self, pool: list[Session], most: int) -> None:
        """Ends the least recently used sessions of `pool` until one more fits."""
        pool.sort(key=lambda s: s.last_seen)
        for session in pool[:max(0, len(pool) - most + 1)]:
            del self._sessions[session.id]

    def auto_for(self, browser: str) -> Session | None:
        """The live automatic session of this browser, if it has one (its idle clock
        restarts)."""
        if not browser:
            return None
        with self._lock:
            found = next((s for s in self._sessions.values()
                          if s.auto and hmac.compare_digest(s.browser, browser)), None)
        return self.get(found.id) if found else None

    def get(self, session_id: str | None) -> Session | None:
        """The live session with this id (its idle clock restarts), or None."""
        if not session_id:
            return None
        now = self._clock()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            if self._expired(session, now):
                del self._sessions[session_id]
                return None
            session.last_seen = now
            return session

    def alive(self, session_id: str) -> bool:
        """Whether a session is live, without counting this as its use."""
        with self._lock:
            session = self._sessions.get(session_id)
            return session is not None and not self._expired(session, self._clock())

    def drop(self, session_id: str | None) -> None:
        if session_id:
            with self._lock:
                self._sessions.pop(session_id, None)

    def drop_key(self, key: str) -> int:
        """Sign out every session of a key (the gateway refused it: revoked); how many."""
        with self._lock:
            gone = [sid for sid, s in self._sessions.items() if hmac.compare_digest(s.key, key)]
            for sid in gone:
                del self._sessions[sid]
        return len(gone)

    def __len__(self) -> int:
        with self._lock:
            self._expire(self._clock())
            return len(self._sessions)

    def _expired(self, session: Session, now: float) -> bool:
        return (now - session.last_seen > self.idle_s
                or now - session.created > self.absolute_s)

    def _expire(self, now: float) -> None:
        for sid in [sid for sid, s in self._sessions.items() if self._expired(s, now)]:
            del self._sessions[sid]


def valid_csrf(session: Session, presented: str | None) -> bool:
    """Whether a form carried this session's CSRF token (compared in constant time)."""
    return bool(presented) and hmac.compare_digest(session.csrf.encode(),
                                                   (presented or "").encode())
