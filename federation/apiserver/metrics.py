"""Prometheus metrics of one API server (its own registry, so tests can run several servers)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class ApiMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("apiserver_request_total", "API requests by verb, resource and HTTP code",
                                ["verb", "resource", "code"], registry=self.registry)
        self.latency = Histogram("apiserver_request_duration_seconds", "API request latency (watches excluded)",
                                 ["verb", "resource"], registry=self.registry,
                                 buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5))
        self.watchers = Gauge("apiserver_registered_watchers", "Open watches by resource", ["resource"],
                              registry=self.registry)
        self.watch_sent = Counter("apiserver_watch_events_total", "Watch events sent by resource", ["resource"],
                                  registry=self.registry)
        self.objects = Gauge("apiserver_storage_resource_version", "Current global resourceVersion",
                             registry=self.registry)
        self.commits = Gauge("apiserver_storage_commits", "SQLite transactions committed (one fsync each)",
                             registry=self.registry)
        self.committed_writes = Gauge("apiserver_storage_committed_writes",
                                      "Object writes committed (group commit: many per transaction)",
                                      registry=self.registry)
        self.failed_commits = Counter("apiserver_storage_failed_commits",
                                      "Writes the store refused for good: SQLite commits that failed (a full "
                                      "disk), etcd writes over its space quota", registry=self.registry)
        self._failed_commits_seen = 0

    def count_failed_commits(self, total: int) -> None:
        """Bring the counter up to the store's own count (read at scrape time, like the commits)."""
        if total > self._failed_commits_seen:
            self.failed_commits.inc(total - self._failed_commits_seen)
            self._failed_commits_seen = total

    def observe(self, verb: str, resource: str, code: int, seconds: float) -> None:
        self.requests.labels(verb, resource, str(code)).inc()
        if verb != "watch":
            self.latency.labels(verb, resource).observe(seconds)

    def watch_started(self, resource: str) -> None:
        self.watchers.labels(resource).inc()

    def watch_ended(self, resource: str) -> None:
        self.watchers.labels(resource).dec()
