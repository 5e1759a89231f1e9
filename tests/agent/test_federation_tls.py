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
