"""The etcd connection: kube-apiserver's flags checked up front, and a gRPC channel to etcd's v3 API.

Caldera speaks etcd's v3 gRPC API itself (grpc.aio): the messages are generated in the repository
from etcd's .proto files (:mod:`federation.apiserver.etcdpb`, regenerated with ``grpc_tools.protoc``),
and the methods are called by their gRPC paths (``/etcdserverpb.KV/Range``, ``Txn``, ``Compact`` and
the ``/etcdserverpb.Watch/Watch`` stream), so no etcd client library is needed. The channel
round-robins over the endpoints with keepalives, over TLS or mutual TLS. A unary read or compaction
that fails with UNAVAILABLE or DEADLINE_EXCEEDED is tried once more on the channel (the next
endpoint); a transaction never is (it could apply twice). The watch stream is opened by the store
(:meth:`EtcdConnection.watch_stream`), which resumes it from the last event it applied and sends
progress requests to learn the watch's revision; the stream carries ``hasleader`` metadata so that
a member that lost its leader cancels it instead of going silent.

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

from federation.apiserver.etcdpb import rpc_pb2 as pb
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


#: gRPC status codes worth one more try on another endpoint (a member down, a slow answer)
TRANSIENT = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
#: unary reads and compactions: tries per call (writes get one, see :meth:`EtcdConnection.txn`)
READ_ATTEMPTS = 2
KEEPALIVE = [("grpc.keepalive_time_ms", 10_000), ("grpc.keepalive_timeout_ms", 5_000),
             ("grpc.keepalive_permit_without_calls", 1)]


class EtcdConnection:
    """One gRPC channel to the etcd members of a store, with its own error mapping."""

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
        self._options: list[tuple[str, Any]] = [("grpc.lb_policy_name", "round_robin"), *KEEPALIVE]
        self._credentials: grpc.ChannelCredentials | None = None
        if tls:
            self._credentials = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                                             certificate_chain=cert)
            # several addresses have no one host name to verify: the certificate must name the first
            # host name given (or, with IP addresses only, carry IP SANs)
            server_name = next((h for h in hosts if not _is_ip(h)), None)
            if server_name is not None:
                self._options.append(("grpc.ssl_target_name_override", server_name))
        if len(targets) == 1 and not _is_ip(hosts[0]):
            # a single name (a headless Service): gRPC's DNS resolver follows its changes
            self.target = f"dns:///{targets[0]}"
        else:
            # several endpoints: gRPC's ipv4: list, so names are resolved here once
            self.target = "ipv4:" + ",".join(self._ip_targets(targets))
        self._channel: grpc.aio.Channel | None = None

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
        if self._credentials is not None:
            channel = grpc.aio.secure_channel(self.target, self._credentials, options=self._options)
        else:
            channel = grpc.aio.insecure_channel(self.target, options=self._options)
        self._channel = channel
        self._range = channel.unary_unary("/etcdserverpb.KV/Range", request_serializer=pb.RangeRequest.SerializeToString,
                                          response_deserializer=pb.RangeResponse.FromString)
        self._txn = channel.unary_unary("/etcdserverpb.KV/Txn", request_serializer=pb.TxnRequest.SerializeToString,
                                        response_deserializer=pb.TxnResponse.FromString)
        self._compact = channel.unary_unary("/etcdserverpb.KV/Compact",
                                            request_serializer=pb.CompactionRequest.SerializeToString,
                                            response_deserializer=pb.CompactionResponse.FromString)
        self._watch = channel.stream_stream("/etcdserverpb.Watch/Watch",
                                            request_serializer=pb.WatchRequest.SerializeToString,
                                            response_deserializer=pb.WatchResponse.FromString)
        try:
            await self.range(b"\0", timeout=self.config.request_timeout)
        except StorageUnavailable as exc:
            await self.close()
            flag = "--etcd-cafile/--etcd-certfile/--etcd-keyfile" if _tls_failure(str(exc)) else "--etcd-servers"
            raise EtcdConfigError(f"{flag}: cannot use etcd at {self.describe}: {exc}") from None

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    # -- unary calls ---------------------------------------------------------------------

    @staticmethod
    async def _unary(method: Any, request: Any, timeout: float, attempts: int) -> Any:
        """``attempts`` tries within ``timeout`` in all, the next one only after a transient status."""
        backoff = 0.05
        async with asyncio.timeout(timeout):
            for attempt in range(1, attempts + 1):
                try:
                    return await method(request, timeout=timeout)
                except grpc.aio.AioRpcError as exc:
                    if exc.code() not in TRANSIENT or attempt == attempts:
                        raise
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _call(self, what: str, method: Any, request: Any, timeout: float | None = None,
                    write: bool = False) -> Any:
        if self._channel is None:
            raise StorageUnavailable(f"etcd cannot serve the {what} (the connection is closed)")
        try:
            return await self._unary(method, request, timeout or self.config.request_timeout,
                                     1 if write else READ_ATTEMPTS)
        except (grpc.aio.AioRpcError, TimeoutError) as exc:
            detail = _detail(exc)
            if write and "database space exceeded" in detail:
                # etcd refused the write: kube-apiserver passes etcd's own words on as a 500. Reads go
                # on; writes return once the space is freed and the alarm disarmed. Refused before the
                # proposal (the alarm was already raised) nothing is committed; the one write that
                # crosses the quota is applied first and then answered NOSPACE, as etcd itself does.
                raise StoreFailed(NOSPACE, exc) from None
            if write:
                raise StorageUnavailable(f"etcd did not confirm the write ({detail}); it was not "
                                         f"acknowledged and may or may not have been committed",
                                         unknown_outcome=True) from None
            raise StorageUnavailable(f"etcd cannot serve the {what} ({detail})") from None

    async def range(self, key: bytes, range_end: bytes | None = None, revision: int = 0,
                    timeout: float | None = None, count_only: bool = False) -> Any:
        request = pb.RangeRequest(key=key, range_end=range_end or b"", revision=revision, count_only=count_only)
        return await self._call("read", self._range, request, timeout)

    async def txn(self, compare: list[Any], success: list[Any], failure: list[Any]) -> Any:
        # One attempt: a retried transaction could apply twice (or fail its own compare).
        request = pb.TxnRequest(compare=compare, success=success, failure=failure)
        return await self._call("write", self._txn, request, write=True)

    async def compact(self, revision: int) -> None:
        await self._call("compaction", self._compact, pb.CompactionRequest(revision=revision))

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
                yield pb.WatchRequest(progress_request=pb.WatchProgressRequest())

        if self._channel is None:
            raise StorageUnavailable("etcd cannot serve the watch (the connection is closed)")
        return self._watch(requests(), metadata=REQUIRE_LEADER)


def _detail(exc: BaseException) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    if isinstance(exc, TimeoutError):
        return "request timed out"
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
