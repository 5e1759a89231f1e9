"""``federation.client``: a kubeconfig's CA becomes one file per distinct CA, not one per client."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path

from federation.client import configuration_from_dict


def kubeconfig(ca_pem: bytes) -> dict[str, object]:
    return {
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1",
                                               "certificate-authority-data": base64.b64encode(ca_pem).decode()}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }


def test_clients_share_one_ca_file_per_ca() -> None:
    tmp = Path(tempfile.gettempdir())
    before = set(tmp.glob("*.crt"))
    first = configuration_from_dict(kubeconfig(b"-----BEGIN CERTIFICATE-----\nAAAA\n"))
    again = [configuration_from_dict(kubeconfig(b"-----BEGIN CERTIFICATE-----\nAAAA\n")) for _ in range(20)]
    other = configuration_from_dict(kubeconfig(b"-----BEGIN CERTIFICATE-----\nBBBB\n"))
    assert {c.ssl_ca_cert for c in again} == {first.ssl_ca_cert}
    assert other.ssl_ca_cert != first.ssl_ca_cert
    assert Path(first.ssl_ca_cert).read_bytes() == b"-----BEGIN CERTIFICATE-----\nAAAA\n"
    assert Path(other.ssl_ca_cert).read_bytes() == b"-----BEGIN CERTIFICATE-----\nBBBB\n"
    assert len(set(tmp.glob("*.crt")) - before) <= 2  # at most the two CA files, nothing per client
    assert first.api_key == {"BearerToken": "t"}
