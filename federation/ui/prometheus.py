"""The dashboard's GPU chart from Prometheus, when ``caldera serve --prometheus-url`` names one.

Prometheus keeps the series the federation exports (``caldera_cluster_gpus`` and
``caldera_cluster_gpus_free``, :mod:`federation.fleet_metrics`) for as long as its retention, across
restarts of the API server, so the chart reads the last hour from it with ``query_range``. Several
federation replicas scraped at once export the same series: ``max by (cluster, model)`` counts each
cluster's GPUs once. When Prometheus is not configured, does not answer, or has no samples yet, the
chart falls back to the server's own samples (:mod:`federation.ui.history`) and says why.

An answer is kept for one ``step`` (the page refreshes every few seconds); after a failure Prometheus
is not asked again for ``retry_after`` seconds, so a Prometheus that is down costs one timeout, not
one per refresh.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Optional
from urllib.parse import urlsplit, urlunsplit

import aiohttp

Obj = dict[str, Any]
TOTAL = "sum(max by (cluster, model) (caldera_cluster_gpus))"
FREE = "sum(max by (cluster, model) (caldera_cluster_gpus_free))"


class PrometheusError(Exception):
    """Prometheus answered with an error, or not as its HTTP API documents."""


def _series(answer: Obj, query: str) -> dict[float, float]:
    """timestamp -> value of a ``query_range`` answer holding at most one series (a ``sum``)."""
    if answer.get("status") != "success":
        raise PrometheusError(f"{query}: {answer.get('errorType', 'error')}: {answer.get('error', answer)}")
    result = (answer.get("data") or {}).get("result")
    if not isinstance(result, list):
        raise PrometheusError(f"{query}: no data.result matrix in the answer")
    if not result:
        return {}
    return {float(t): float(v) for t, v in result[0].get("values") or []}


def points_from(total_answer: Obj, free_answer: Obj) -> list[Obj]:
    """Chart points (as :meth:`GpuHistory.points`) from the two ``query_range`` answers: one per
    timestamp both series have, used = total - free."""
    total, free = _series(total_answer, TOTAL), _series(free_answer, FREE)
    points = []
    for stamp in sorted(total.keys() & free.keys()):
        used = max(0, round(total[stamp] - free[stamp]))
        moment = datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        points.append({"time": moment, "used": used, "total": round(total[stamp])})
    return points


@dataclass
class PrometheusGpuSource:
    url: str
    window: timedelta = timedelta(hours=1)
    step_seconds: float = 5.0  # as the server's own samples
    timeout: float = 3.0
    retry_after: float = 30.0
    #: why the last attempt gave no points (None after a good answer)
    problem: Optional[str] = None
    _kept: Optional[tuple[datetime, list[Obj]]] = field(default=None, repr=False)
    _failed_at: Optional[datetime] = field(default=None, repr=False)

    @property
    def shown_url(self) -> str:
        """The URL without any ``user:password@`` (the page is readable by every viewer token)."""
        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))

    async def points(self, now: datetime) -> Optional[list[Obj]]:
        """The last ``window`` of GPU use, or None (``problem`` says why) to fall back."""
        if self._kept is not None and (now - self._kept[0]).total_seconds() < self.step_seconds:
            return self._kept[1]
        if self._failed_at is not None and (now - self._failed_at).total_seconds() < self.retry_after:
            return None
        try:
            points = await self._fetch(now)
        except (TimeoutError, aiohttp.ClientError, PrometheusError, ValueError) as exc:
            self.problem = f"Prometheus at {self.shown_url} did not answer: {type(exc).__name__}: {exc}"
            self._failed_at, self._kept = now, None
            return None
        self._failed_at = None
        if len(points) < 2:
            self.problem = f"Prometheus at {self.shown_url} has no caldera_cluster_gpus samples yet"
            return None
        self.problem, self._kept = None, (now, points)
        return points

    async def _fetch(self, now: datetime) -> list[Obj]:
        params = {"start": f"{(now - self.window).timestamp():.3f}", "end": f"{now.timestamp():.3f}",
                  "step": f"{self.step_seconds:g}s"}
        endpoint = self.url.rstrip("/") + "/api/v1/query_range"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as session:
            answers = []
            for query in (TOTAL, FREE):
                async with session.get(endpoint, params={**params, "query": query}) as response:
                    answers.append(await response.json(content_type=None))
        return points_from(answers[0], answers[1])
