"""The etcd connection: kube-apiserver's flags checked up front, and the etcd3aio client.

Caldera talks to etcd through `etcd3aio` (asyncio, grpc.aio): its channel (round-robin over the
endpoints, TLS and mutual TLS), its KV service (range, txn, compact) and its generated
protobuf messages. One thing is done here instead of through the library's ``watch()``: that
generator resumes a broken stream from the last response's header revision, which can skip
events when etcd sends a catching-up watcher part of a batch; the store must resume from the
last event it applied, and needs progress requests to learn the watch's revision. So the watch
stream is opened on the library's channel with the library's ``WatchStub`` and messages
(:meth:`EtcdConnection.watch_stream`), with ``hasleader`` metadata so that a member that lost
its leader cancels the stream instead of going silent.

A bad flag value fails with one line naming the flag (:class:`EtcdConfigError`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import grpc.aio
from etcd3aio import Etcd3Client, EtcdError
from etcd3aio import _protobuf as pb

from federation.apiserver.storage import StorageUnavailable, StoreFailed

#: etcd's answer to a write once its backend reached --quota-backend-bytes (the NOSPACE alarm)
NOSPACE = "etcdserver: mvcc: database space exceeded"
#: etcd cancels a watch whose member has no leader when the stream carries this metadata
REQUIRE_LEADER = (("hasleader", "true"),)


class EtcdConfigError(ValueError):
    """A wrong ``--etcd-*`` flag: the message is one line that names the flag."""


@dataclass
class EtcdConfig:
    servers: Sequence[str]
    prefix: str = "/caldera/registry"
    cafile: Path | None = None
    certfile: Path | None = None
    keyfile: Path | None = None
    #: how long one etcd request may take before the API answers 503
    request_timeout: float = 5.0
    #: compact etcd's history every this many seconds (kube-apiserver: 5 min); 0 = never
    compaction_interval: float = 300.0


def _read(flag: str, path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise EtcdConfigError(f"{flag} {path}: cannot read the file ({exc.strerror})") from None
    if b"-----BEGIN" not in data:
        raise EtcdConfigError(f"{flag} {path}: not a PEM file")
    return data


def _endpoints(servers: Sequence[str]) -> tuple[list[str], bool]:
    """``host:port`` targets and whether they use TLS, from ``--etcd-servers`` URLs."""
    if not servers:
        raise EtcdConfigError("--etcd-servers: at least one URL is required")
    targets: list[str] = []
    schemes: set[str] = set()
    for url in servers:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise EtcdConfigError(f"--etcd-servers {url!r}: expected http://HOST:PORT or https://HOST:PORT")
        try:
            port = parts.port or 2379
        except ValueError:
            raise EtcdConfigError(f"--etcd-servers {url!r}: the port is not a number") from None
        schemes.add(parts.scheme)
        targets.append(f"{parts.hostname}:{port}")
    if len(schemes) > 1:
        raise EtcdConfigError("--etcd-servers: mix of http:// and https:// URLs")
    return targets, schemes == {"https"}


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class EtcdConnection:
    """One etcd3aio client for a store, with its own error mapping."""

    def __init__(self, config: EtcdConfig) -> None:
        self.config = config
        targets, tls = _endpoints(list(config.servers))
        ca = _read("--etcd-cafile", config.cafile)
        cert = _read("--etcd-certfile", config.certfile)
        key = _read("--etcd-keyfile", config.keyfile)
        if (cert is None) != (key is None):
            raise EtcdConfigError("--etcd-certfile and --etcd-keyfile go together (one is missing)")
        if tls and ca is None:
            raise EtcdConfigError("--etcd-cafile: required with https:// --etcd-servers")
        if not tls and (ca or cert):
            raise EtcdConfigError("--etcd-servers: certificates given but the URLs are http://, not https://")
        self.describe = ",".join(config.servers)
        hosts = [t.rsplit(":", 1)[0] for t in targets]
        tls_args: dict[str, Any] = {}
        if tls:
            tls_args = {"ca_cert": ca, "cert_chain": cert, "cert_key": key,
                        "tls_server_name": next((h for h in hosts if not _is_ip(h)), None)}
        # etcd3aio addresses endpoints with gRPC's ipv4: scheme, so names are resolved here once;
        # a single name (a headless Service) uses gRPC's DNS resolver instead and follows its changes.
        self.client = Etcd3Client(self._ip_targets(targets), rpc_max_attempts=2, **tls_args)
        self._single_name = targets[0] if len(targets) == 1 and not _is_ip(hosts[0]) else None

    @staticmethod
    def _ip_targets(targets: list[str]) -> list[str]:
        out = []
        for target in targets:
            host, port = target.rsplit(":", 1)
            if not _is_ip(host):
                try:
                    host = socket.getaddrinfo(host, int(port), socket.AF_INET)[0][4][0]
                except OSError as exc:
                    raise EtcdConfigError(f"--etcd-servers: cannot resolve {host!r} ({exc})") from None
            out.append(f"{host}:{port}")
        return out

    async def connect(self) -> None:
        """Open the channel and prove etcd answers (a quorum read): else one line naming the flag."""
        if self._single_name is not None:
            self.client._manager.target = f"dns:///{self._single_name}"  # see _ip_targets
        await self.client.connect()
        try:
            await self.range(b"\0", timeout=self.config.request_timeout)
        except StorageUnavailable as exc:
            await self.client.close()
            flag = "--etcd-cafile/--etcd-certfile/--etcd-keyfile" if _tls_failure(str(exc)) else "--etcd-servers"
            raise EtcdConfigError(f"{flag}: cannot use etcd at {self.describe}: {exc}") from None

    async def close(self) -> None:
        await self.client.close()

    # -- unary calls ---------------------------------------------------------------------

    async def _call(self, what: str, coro: Any, write: bool = False) -> Any:
        try:
            return await coro
        except (EtcdError, grpc.aio.AioRpcError, TimeoutError) as exc:
            detail = _detail(exc)
            if write and "database space exceeded" in detail:
                # etcd refused the write (nothing committed): kube-apiserver passes etcd's own words
                # on as a 500. Reads go on; writes return once the space is freed and the alarm disarmed.
                raise StoreFailed(NOSPACE, exc) from None
            if write:
                raise StorageUnavailable(f"etcd did not confirm the write ({detail}); it was not "
                                         f"acknowledged and may or may not have been committed",
                                         unknown_outcome=True) from None
            raise StorageUnavailable(f"etcd cannot serve the {what} ({detail})") from None

    async def range(self, key: bytes, range_end: bytes | None = None, revision: int = 0,
                    timeout: float | None = None, count_only: bool = False) -> Any:
        kv = self.client.kv
        assert kv is not None
        return await self._call("read", kv.get(key, range_end, revision=revision, count_only=count_only,
                                               timeout=timeout or self.config.request_timeout))

    async def txn(self, compare: list[Any], success: list[Any], failure: list[Any]) -> Any:
        kv = self.client.kv
        assert kv is not None
        # One attempt: a retried transaction could apply twice (or fail its own compare).
        return await self._call("write", kv.txn(compare, success, failure, timeout=self.config.request_timeout,
                                                max_attempts=1), write=True)

    async def compact(self, revision: int) -> None:
        kv = self.client.kv
        assert kv is not None
        await self._call("compaction", kv.compact(revision, timeout=self.config.request_timeout))

    # -- watch stream --------------------------------------------------------------------

    def watch_stream(self, key: bytes, range_end: bytes, start_revision: int, prev_kv: bool,
                     progress: asyncio.Queue[None] | None = None) -> Any:
        """A raw watch stream (async iterator of WatchResponse); ``progress`` items ask for progress."""

        async def requests() -> AsyncIterator[Any]:
            yield pb.WatchRequest(create_request=pb.WatchCreateRequest(
                key=key, range_end=range_end, start_revision=start_revision, prev_kv=prev_kv))
            while True:
                if progress is None:
                    await asyncio.Future()
                    continue
                await progress.get()
                yield pb.WatchRequest(progress_request=pb.rpc_pb2.WatchProgressRequest())

        channel = self.client._channel  # the library's channel (TLS, endpoints): see the module docstring
        assert channel is not None
        return pb.WatchStub(channel).Watch(requests(), metadata=REQUIRE_LEADER)


def _detail(exc: BaseException) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    if isinstance(exc, TimeoutError):
        return "request timed out"
    cause = exc.__cause__
    if isinstance(cause, grpc.aio.AioRpcError):
        return f"{cause.code().name}: {cause.details()}"
    return str(exc)


def _tls_failure(text: str) -> bool:
    lowered = text.lower()
    # gRPC words a refused client certificate as "Unwrap failed (TSI_DATA_CORRUPTED)"
    return any(word in lowered for word in ("ssl", "tls", "handshake", "certificate", "tsi_"))


def compare_mod(key: bytes, revision: int) -> Any:
    return pb.Compare(result=pb.Compare.EQUAL, target=pb.Compare.MOD, key=key, mod_revision=revision)


def compare_absent(key: bytes) -> Any:
    return pb.Compare(result=pb.Compare.EQUAL, target=pb.Compare.CREATE, key=key, create_revision=0)


def op_put(key: bytes, value: bytes) -> Any:
    return pb.RequestOp(request_put=pb.PutRequest(key=key, value=value))


def op_delete(key: bytes) -> Any:
    return pb.RequestOp(request_delete_range=pb.DeleteRangeRequest(key=key))


def op_get(key: bytes) -> Any:
    return pb.RequestOp(request_range=pb.RangeRequest(key=key))


def prefix_end(prefix: bytes) -> bytes:
    """The range end that covers every key starting with ``prefix``."""
    end = bytearray(prefix)
    for i in range(len(end) - 1, -1, -1):
        if end[i] < 0xFF:
            end[i] += 1
            return bytes(end[: i + 1])
    return b"\0"
