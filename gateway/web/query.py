"""The calls page's query string, read strictly: a view is a bookmarkable URL, and junk in it is a clear 400.

    /ui?agent=w1&outcome=denied&from=2026-11-23T09:00&to=2026-11-23&tz=Europe/Berlin&size=100&page=2&at=812

``from`` and ``to`` are ISO 8601 dates or date-times; without an offset they are read in ``tz`` (an IANA zone,
default UTC), the zone every time on the page is shown in. ``to`` as a bare date includes that whole day.
``at`` is the newest ledger row the pages count (the first page sets it), so paging does not shift while new
calls arrive. The export links carry the same query, so an export holds exactly what the page shows.

    query = CallQuery.parse(request.query_params, roles=["admin", "worker"])    # BadQuery: answer 400
    page = traces.page(query.filters, query.offset, query.size, query.at)
    query.link(page=2)                                                         # '/ui?agent=w1&page=2&at=812'
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import overload
from urllib.parse import urlencode
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gateway.errors import InvalidRequest
from gateway.traces import Filters, clean
from gateway.types import FILTER_OUTCOMES

PAGE_SIZES = (25, 50, 100, 200, 500)
DEFAULT_SIZE = 100
MAX_PAGE = 1_000_000
MAX_TEXT = 200  # characters of a free-text filter
TEXT_FILTERS = ("agent", "task", "tool", "rule")
KNOWN = {*TEXT_FILTERS, "role", "tier", "outcome", "from", "to", "tz", "page", "size", "at", "before", "checks"}


class BadQuery(InvalidRequest):
    code = "bad_query"


@dataclass
class CallQuery:
    filters: Filters
    page: int = 1
    size: int = DEFAULT_SIZE
    at: int | None = None
    before: int | None = None  # keyset paging: the page starts below this ledger row (the "older" link sets it)
    zone: tzinfo = UTC
    zone_name: str = "UTC"
    raw: dict[str, str] = field(default_factory=dict)  # the filters as given, for the form and the links

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.size

    @classmethod
    def parse(cls, params: Mapping[str, str], roles: Collection[str]) -> CallQuery:
        unknown = sorted(set(params) - KNOWN)
        if unknown:
            raise BadQuery(f"unknown parameter {clean(unknown[0], 40)!r}: filter by {', '.join(sorted(KNOWN))}")
        raw = {k: v.strip() for k, v in params.items() if v.strip()}
        for name, value in raw.items():
            if len(value) > MAX_TEXT:
                raise BadQuery(f"{name} is longer than {MAX_TEXT} characters")
        role = raw.get("role")
        if role and role not in roles:
            raise BadQuery(f"unknown role {clean(role, 64)!r}: the roles are {', '.join(sorted(roles))}")
        outcome = raw.get("outcome")
        if outcome and outcome not in FILTER_OUTCOMES:
            raise BadQuery(f"unknown outcome {clean(outcome, 40)!r}: one of {', '.join(FILTER_OUTCOMES)}")
        tier = raw.get("tier")
        if tier and tier not in ("1", "2", "3"):
            raise BadQuery(f"unknown tier {clean(tier, 40)!r}: tiers are 1, 2 and 3")
        zone_name = raw.get("tz", "UTC")
        zone = _zone(zone_name)
        since = _when(raw.get("from"), "from", zone, end_of_day=False)
        until = _when(raw.get("to"), "to", zone, end_of_day=True)
        if since and until and since >= until:
            raise BadQuery("'from' must be earlier than 'to'")
        size = _number(raw.get("size"), "size", DEFAULT_SIZE, 1, max(PAGE_SIZES))
        checks = raw.get("checks")
        if checks and checks != "1":
            raise BadQuery(f"checks must be 1 (show dry runs) or absent, not {clean(checks, 40)!r}")
        filters = Filters(
            role=role,
            agent=raw.get("agent"),
            task=raw.get("task"),
            tier=int(tier) if tier else None,
            rule=raw.get("rule"),
            outcome=outcome,
            tool=raw.get("tool"),
            since=since,
            until=until,
            checks=checks == "1",
        )
        return cls(
            filters=filters,
            page=_number(raw.get("page"), "page", 1, 1, MAX_PAGE),
            size=size,
            at=_number(raw.get("at"), "at", None, 0, 2**62),
            before=_number(raw.get("before"), "before", None, 0, 2**62),
            zone=zone,
            zone_name=zone_name,
            raw={k: v for k, v in raw.items() if k not in ("page", "at", "before")},
        )

    def check_page(self, total: int) -> None:
        """BadQuery when the page lies past the last one (an empty view has one, empty, page)."""
        last = max(1, -(-total // self.size))
        if self.page > last:
            raise BadQuery(f"page {self.page} is past the last page ({last}) of this view")

    def link(self, path: str = "/ui", **changes: str | int | None) -> str:
        """This view's URL with some parameters changed (None removes one); it keeps ``at`` when paging, and
        ``before`` only where a change sets it."""
        params: dict[str, str | int | None] = {**self.raw, "at": self.at, **changes}
        kept = {k: v for k, v in params.items() if v not in (None, "")}
        return path + ("?" + urlencode(kept) if kept else "")

    def shown(self, iso: str) -> str:
        """An ISO time from the ledger as this view shows it: 2026-11-23 10:36:20 in the view's zone."""
        try:
            return datetime.fromisoformat(iso).astimezone(self.zone).strftime("%Y-%m-%d %H:%M:%S")
        except ValueError:
            return clean(iso, 40)


def _zone(name: str) -> tzinfo:
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadQuery(f"unknown time zone {clean(name, 60)!r}: an IANA name such as UTC or Europe/Berlin") from None


def _when(value: str | None, name: str, zone: tzinfo, end_of_day: bool) -> datetime | None:
    if not value:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise BadQuery(
            f"{name} {clean(value, 60)!r} is not a date or time: use 2026-11-23 or 2026-11-23T10:30 (ISO 8601)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=zone)
    if end_of_day and len(value) == 10:  # a bare date: up to the end of that day
        try:
            when += timedelta(days=1)
        except OverflowError:  # 9999-12-31: the end of time
            raise BadQuery(f"{name} {clean(value, 60)!r} is past the last date there is") from None
    return when


@overload
def _number(value: str | None, name: str, default: int, low: int, high: int) -> int: ...
@overload
def _number(value: str | None, name: str, default: None, low: int, high: int) -> int | None: ...
def _number(value: str | None, name: str, default: int | None, low: int, high: int) -> int | None:
    if value is None:
        return default
    if not (value.isascii() and value.isdigit()) or not low <= int(value) <= high:
        raise BadQuery(f"{name} must be a whole number from {low} to {high}, not {clean(value, 40)!r}")
    return int(value)
