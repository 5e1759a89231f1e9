"""The agent's TLS to the federation trusts what its kubeconfig says, as client-go does: a
certificate-authority replaces the system roots (and keeps the agent from parsing the whole system
store into memory); without one the system roots are used."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

from federation.apiserver.tls import ensure_self_signed
from member_agent.federation_rest import kubeconfig_parts


def _kubeconfig(cluster: dict[str, object]) -> dict[str, object]:
    return {"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "f", "user": "u"}}],
            "clusters": [{"name": "f", "cluster": {"server": "https://127.0.0.1:6443", **cluster}}],
            "users": [{"name": "u", "user": {"token": "t"}}]}


def test_a_kubeconfig_ca_is_the_only_root_trusted(tmp_path: Path) -> None:
    cert, _ = ensure_self_signed(tmp_path, "127.0.0.1")
    ca = base64.b64encode(cert.read_bytes()).decode()
    _, headers, context = kubeconfig_parts(_kubeconfig({"certificate-authority-data": ca}), str(tmp_path))
    assert isinstance(context, ssl.SSLContext)
    assert context.cert_store_stats()["x509_ca"] == 1
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert headers["Authorization"] == "Bearer t"


def test_without_a_ca_the_system_roots_are_trusted(tmp_path: Path) -> None:
    _, _, context = kubeconfig_parts(_kubeconfig({}), str(tmp_path))
    assert isinstance(context, ssl.SSLContext)
    system = ssl.create_default_context().cert_store_stats()["x509_ca"]
    assert context.cert_store_stats()["x509_ca"] == system
    assert context.verify_mode == ssl.CERT_REQUIRED


def test_insecure_skip_tls_verify_checks_nothing(tmp_path: Path) -> None:
    _, _, context = kubeconfig_parts(_kubeconfig({"insecure-skip-tls-verify": True}), str(tmp_path))
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_NONE and not context.check_hostname


async def test_tls_connections_read_through_a_small_buffer(tmp_path: Path, monkeypatch) -> None:
    """The agent gives each TLS connection a 64 KiB read buffer instead of asyncio's 256 KiB (its
    four federation connections stay open); a response much bigger than that still arrives whole."""
    from asyncio import sslproto

    import aiohttp
    from aiohttp import web

    from member_agent.agent_cmd import TLS_READ_BUFFER, small_tls_read_buffers

    monkeypatch.setattr(sslproto.SSLProtocol, "max_size", 256 * 1024)  # restored after the test
    small_tls_read_buffers()
    assert sslproto.SSLProtocol.max_size == TLS_READ_BUFFER == 64 * 1024
    cert, key = ensure_self_signed(tmp_path, "127.0.0.1")
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    client_context = ssl.create_default_context(cafile=str(cert))
    body = bytes(range(256)) * 4096 * 3  # 3 MiB

    async def big(_: web.Request) -> web.Response:
        return web.Response(body=body)

    app = web.Application()
    app.router.add_get("/big", big)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with aiohttp.ClientSession() as session, \
                session.get(f"https://127.0.0.1:{port}/big", ssl=client_context) as response:
            transport = response.connection.transport  # type: ignore[union-attr]
            assert len(transport._ssl_protocol._ssl_buffer) <= TLS_READ_BUFFER  # type: ignore[union-attr]
            assert await response.read() == body
    finally:
        await runner.cleanup()
