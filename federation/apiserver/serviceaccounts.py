"""ServiceAccount tokens: TokenRequest (``kubectl create token SA --duration``) and their authentication.

Tokens are JWTs signed RS256 with the server's service-account key (``DIR/sa-signing.key``,
made at first start, or ``--service-account-signing-key-file``), with kube's claims: ``iss``,
``sub`` (``system:serviceaccount:<ns>:<name>``), ``aud``, ``exp``/``iat``/``nbf``, ``jti`` and
``kubernetes.io: {namespace, serviceaccount: {name, uid}}``. A token authenticates while its
signature, issuer and audience check out, it has not expired, and its ServiceAccount still
exists with the same uid; anything else is 401. The user is the ServiceAccount, in groups
``system:serviceaccounts`` and ``system:serviceaccounts:<ns>``.

A ServiceAccount ``agent-<cluster>`` in ``karmada-cluster`` is that cluster's member agent: its
tokens also carry ``caldera:agent:<cluster>`` (only cluster admins can create accounts there).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from federation.apiserver import discovery
from federation.apiserver import status as st
from federation.apiserver.auth import User
from federation.apiserver.registry import resource_key, timestamp
from policies.kinds import lookup

SERVICE_ACCOUNTS = lookup("v1", "ServiceAccount")
discovery.register("", "v1", [{"name": "serviceaccounts/token", "singularName": "", "namespaced": True,
                               "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest",
                               "verbs": ["create"]}])
DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
DEFAULT_EXPIRATION = 3600
MAX_EXPIRATION = 48 * 3600
AGENT_NAMESPACE = "karmada-cluster"
AGENT_PREFIX = "agent-"
Obj = dict[str, Any]


def load_or_create_key(path: Path) -> rsa.RSAPrivateKey:
    if path.exists():
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if not isinstance(key, rsa.RSAPrivateKey):
            raise ValueError(f"{path}: the service-account signing key must be an RSA private key")
        return key
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return key


class ServiceAccountTokens:
    """Mint (TokenRequest) and verify service-account JWTs against the store."""

    def __init__(self, store: Any, key: rsa.RSAPrivateKey, issuer: str = DEFAULT_ISSUER,
                 min_expiration: int = 600, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.key = key
        self.public_key = key.public_key()
        self.issuer = issuer
        self.audiences = (issuer,)
        self.min_expiration = min_expiration
        self.clock = clock

    def _account(self, namespace: str, name: str) -> Obj | None:
        found: Obj | None = self.store.get(resource_key(SERVICE_ACCOUNTS), namespace, name)
        return found

    def request(self, namespace: str, name: str, body: Any) -> Obj:
        """Answer a TokenRequest for ``namespace/name`` (the ServiceAccount must exist)."""
        account = self._account(namespace, name)
        if account is None:
            raise st.not_found(SERVICE_ACCOUNTS, name)
        body = body if isinstance(body, dict) else {}
        spec = body.get("spec") or {}
        expiration = spec.get("expirationSeconds") or DEFAULT_EXPIRATION
        audiences = list(spec.get("audiences") or self.audiences)
        if not isinstance(expiration, int) or expiration < self.min_expiration:
            raise _invalid(name, "spec.expirationSeconds", f"Invalid value: {expiration}: may not specify a duration "
                                                          f"less than {self.min_expiration} seconds")
        expiration = min(expiration, MAX_EXPIRATION)
        now = int(self.clock())
        claims = {"iss": self.issuer, "sub": f"system:serviceaccount:{namespace}:{name}", "aud": audiences,
                  "iat": now, "nbf": now, "exp": now + expiration, "jti": str(uuid.uuid4()),
                  "kubernetes.io": {"namespace": namespace, "serviceaccount": {
                      "name": name, "uid": account["metadata"].get("uid", "")}}}
        token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.key_id()})
        from datetime import UTC, datetime

        expires = timestamp(datetime.fromtimestamp(now + expiration, UTC))
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
                "spec": {"audiences": audiences, "expirationSeconds": expiration,
                         **({"boundObjectRef": spec["boundObjectRef"]} if spec.get("boundObjectRef") else {})},
                "status": {"token": token, "expirationTimestamp": expires}}

    def key_id(self) -> str:
        import hashlib

        der = self.public_key.public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
        return hashlib.sha256(der).hexdigest()[:32]

    def authenticate(self, token: str) -> User | None:
        """The ServiceAccount user of a valid token, else None (expired, forged, account gone)."""
        if token.count(".") != 2:
            return None
        try:
            claims = jwt.decode(token, self.public_key, algorithms=["RS256"], audience=list(self.audiences),
                                issuer=self.issuer, options={"verify_exp": False, "require": ["exp", "sub"]})
        except jwt.PyJWTError:
            return None
        if int(claims["exp"]) <= self.clock():
            return None
        private = claims.get("kubernetes.io") or {}
        namespace = str(private.get("namespace") or "")
        account_claim = private.get("serviceaccount") or {}
        name = str(account_claim.get("name") or "")
        account = self._account(namespace, name)
        if account is None or account["metadata"].get("uid") != account_claim.get("uid"):
            return None  # deleted (or deleted and re-created): its tokens die with it
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
        if namespace == AGENT_NAMESPACE and name.startswith(AGENT_PREFIX):
            groups.append("caldera:agent:" + name.removeprefix(AGENT_PREFIX))
        return User(str(claims["sub"]), str(account["metadata"].get("uid", "")), tuple(groups))


def _invalid(name: str, path: str, message: str) -> st.ApiError:
    return st.ApiError(422, "Invalid", f'TokenRequest.authentication.k8s.io "{name}" is invalid: {path}: {message}',
                       {"name": name, "group": "authentication.k8s.io", "kind": "TokenRequest",
                        "causes": [{"reason": "FieldValueInvalid", "message": message, "field": path}]})
