"""Certificates for an etcd cluster run with mutual TLS, for its clients and between its members.

One CA signs three certificates, as etcd's security guide lays them out:

* ``server``: what etcd presents to clients (port 2379); serverAuth;
* ``peer``: what a member presents to, and uses to reach, the other members (port 2380); serverAuth and
  clientAuth, because with ``--peer-client-cert-auth`` each member is the other's client too;
* ``client``: what ``caldera serve`` presents (``--etcd-certfile/--etcd-keyfile``); clientAuth.

The server and peer certificates carry every name the members and their clients use: the given
DNS names (for ``deploy/``: ``caldera-etcd``, ``caldera-etcd.caldera-system.svc`` and
``*.caldera-etcd-peer.caldera-system.svc``), ``localhost`` and ``127.0.0.1``. EC P-256 keys.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

Clock = Callable[[], dt.datetime]


@dataclass(frozen=True)
class Pem:
    cert: bytes
    key: bytes


@dataclass(frozen=True)
class EtcdCertificates:
    ca: Pem
    server: Pem
    peer: Pem
    client: Pem


def deploy_names(namespace: str, service: str = "caldera-etcd", peer_service: str = "caldera-etcd-peer") -> list[str]:
    """The DNS names of deploy/federation/etcd in ``namespace`` (clients' Service, each member's peer name)."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc",
            f"*.{peer_service}.{namespace}.svc", f"*.{peer_service}.{namespace}.svc.cluster.local"]


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pem:
    return Pem(cert.public_bytes(serialization.Encoding.PEM),
               key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption()))


def _builder(common_name: str, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, now: dt.datetime,
             days: int) -> x509.CertificateBuilder:
    return (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(issuer)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days)))


def _usage(signing: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, key_cert_sign=signing, crl_sign=signing, key_encipherment=False,
                         content_commitment=False, data_encipherment=False, key_agreement=False,
                         encipher_only=False, decipher_only=False)


def generate(dns_names: Sequence[str], days: int = 3650,
             clock: Clock = lambda: dt.datetime.now(dt.UTC)) -> EtcdCertificates:
    """A fresh CA and the server, peer and client certificates it signs (see the module docstring)."""
    now = clock()
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "caldera-etcd-ca")])
    ca = (_builder("caldera-etcd-ca", ca_name, ca_key.public_key(), now, days)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(_usage(True), critical=True)
          .sign(ca_key, hashes.SHA256()))
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dict.fromkeys([*dns_names, "localhost"])]
    sans += [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]

    def leaf(name: str, usages: list[x509.ObjectIdentifier], with_sans: bool) -> Pem:
        key = _key()
        builder = (_builder(name, ca_name, key.public_key(), now, days)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(_usage(False), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(usages), critical=False))
        if with_sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return _pem(builder.sign(ca_key, hashes.SHA256()), key)

    server_auth, client_auth = ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH
    return EtcdCertificates(ca=_pem(ca, ca_key),
                            server=leaf("caldera-etcd-server", [server_auth], True),
                            peer=leaf("caldera-etcd-peer", [server_auth, client_auth], True),
                            client=leaf("caldera-federation", [client_auth], False))
