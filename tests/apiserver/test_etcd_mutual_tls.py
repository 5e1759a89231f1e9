"""``caldera etcd-certs`` makes certificates a real etcd cluster runs on with mutual TLS between its members
and to its clients (deploy/federation/etcd's flags), and ``caldera serve`` stores through them with
--etcd-cafile/--etcd-certfile/--etcd-keyfile; a client without a certificate is refused."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from federation.apiserver.etcd_client import EtcdConfig, EtcdConfigError
from federation.apiserver.server import ApiServer, ServerConfig
from federation.cli import main
from tests.apiserver.helpers import request
from tests.etcd_process import EtcdCluster, EtcdMember, require_etcd


@dataclass
class TlsMember(EtcdMember):
    """An etcd member on https:// for clients and peers, as the StatefulSet runs it."""

    certs: Path = Path()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"https://127.0.0.1:{self.peer_port}"

    def healthy(self) -> bool:
        context = ssl.create_default_context(cafile=str(self.certs / "ca.crt"))
        context.load_cert_chain(str(self.certs / "client.crt"), str(self.certs / "client.key"))
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=1, context=context) as resp:  # noqa: S310
                return b'"true"' in resp.read()
        except urllib.error.HTTPError as exc:
            exc.close()
            return False
        except OSError:
            return False


def _write_certs(tmp_path: Path) -> Path:
    out = tmp_path / "secrets.yaml"
    assert main(["etcd-certs", "-o", str(out)]) == 0
    assert out.stat().st_mode & 0o077 == 0, "private keys must not be readable by others"
    certs = tmp_path / "certs"
    certs.mkdir()
    for secret in yaml.safe_load_all(out.read_text()):
        for key, value in secret["stringData"].items():
            (certs / key).write_text(value)
    return certs


@pytest.fixture
def tls_etcd(tmp_path: Path) -> Iterator[tuple[EtcdCluster, Path]]:
    require_etcd()
    certs = _write_certs(tmp_path)
    flags = ["--client-cert-auth=true", f"--trusted-ca-file={certs / 'ca.crt'}",
             f"--cert-file={certs / 'server.crt'}", f"--key-file={certs / 'server.key'}",
             "--peer-client-cert-auth=true", f"--peer-trusted-ca-file={certs / 'ca.crt'}",
             f"--peer-cert-file={certs / 'peer.crt'}", f"--peer-key-file={certs / 'peer.key'}"]
    cluster = EtcdCluster(tmp_path / "etcd", size=2)
    cluster.members = [TlsMember(m.name, m.data_dir, extra_args=flags, certs=certs) for m in cluster.members]
    cluster.initial = ",".join(f"{m.name}={m.peer_url}" for m in cluster.members)
    try:
        yield cluster.start(timeout=60), certs
    finally:
        cluster.stop()


def test_the_certificates_are_for_what_etcd_uses_them(tmp_path: Path) -> None:
    certs = _write_certs(tmp_path)

    def usages(name: str) -> set[x509.ObjectIdentifier]:
        cert = x509.load_pem_x509_certificate((certs / name).read_bytes())
        return set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)

    server, client = ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH
    assert usages("server.crt") == {server} and usages("peer.crt") == {server, client}
    assert usages("client.crt") == {client}
    peer = x509.load_pem_x509_certificate((certs / "peer.crt").read_bytes())
    names = peer.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName)
    assert {"caldera-etcd", "*.caldera-etcd-peer.caldera-system.svc"} <= set(names)


def test_a_bad_validity_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="--days 0: must be at least 1"):
        main(["etcd-certs", "--days", "0", "-o", str(tmp_path / "x.yaml")])
    assert not (tmp_path / "x.yaml").exists()


@pytest.mark.slow
async def test_two_members_on_mutual_tls_serve_the_federation(tls_etcd: tuple[EtcdCluster, Path],
                                                            tmp_path: Path) -> None:
    cluster, certs = tls_etcd  # healthy: two members, so they reached each other (quorum) over https:// peers
    # by name, as deploy/ does (https://caldera-etcd:2379): the name is what the certificate is checked for
    urls = [url.replace("127.0.0.1", "localhost") for url in cluster.urls]
    config = EtcdConfig(servers=urls, prefix="/tls", cafile=certs / "ca.crt",
                        certfile=certs / "client.crt", keyfile=certs / "client.key", compaction_interval=0)
    async with ApiServer(ServerConfig(data_dir=tmp_path / "data", etcd=config)) as server:
        code, body = await request(server, "POST", "/api/v1/namespaces/default/configmaps",
                                   body='{"metadata": {"name": "over-tls"}, "data": {"a": "b"}}')
        assert code == 201, body
    no_cert = EtcdConfig(servers=urls, prefix="/tls", cafile=certs / "ca.crt", request_timeout=3,
                         compaction_interval=0)
    with pytest.raises(EtcdConfigError, match="--etcd-cafile/--etcd-certfile/--etcd-keyfile"):
        await ApiServer(ServerConfig(data_dir=tmp_path / "other", etcd=no_cert)).start()

