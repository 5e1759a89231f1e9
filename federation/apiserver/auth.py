"""Bearer-token authentication from a static token file; Caldera's three token roles.

The token file has kube-apiserver's ``--token-auth-file`` format, one user per line::

    token,user,uid,"group1,group2"

What a user may do is decided by RBAC (:mod:`federation.apiserver.rbac`) from its name and
groups; the token roles are groups bound by the bootstrap policy: ``caldera:admin`` (or
``system:masters``) to ``cluster-admin``; ``caldera:agent:<cluster>`` to the agent role (read
everything, write only its own Cluster, Lease, Works' status and Events); ``caldera:viewer`` to
read-only. The file is re-read when it changes, so tokens minted by ``caldera token`` work
without a restart.
"""

from __future__ import annotations

import csv
import io
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class User:
    name: str
    uid: str
    groups: tuple[str, ...]

    @property
    def role(self) -> str:
        """``admin``, ``agent:<cluster>`` or ``viewer``."""
        if "caldera:admin" in self.groups or "system:masters" in self.groups:
            return "admin"
        for group in self.groups:
            if group.startswith("caldera:agent:"):
                return "agent:" + group.removeprefix("caldera:agent:")
        return "viewer"


def role_groups(role: str) -> str:
    """The groups column for a role name (``admin``, ``viewer``, ``agent:<cluster>``)."""
    if role == "admin":
        return "caldera:admin,system:masters"
    if role == "viewer":
        return "caldera:viewer"
    if role == "controller-manager":  # bound to cluster-admin by the bootstrap policy
        return "caldera:controllers"
    if role.startswith("agent:") and len(role) > len("agent:"):
        return "caldera:" + role
    raise ValueError(f"unknown role {role!r}: use admin, viewer, controller-manager or agent:<cluster>")


def parse_token_file(text: str) -> dict[str, User]:
    users: dict[str, User] = {}
    for row in csv.reader(io.StringIO(text)):
        if not row or not row[0].strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 3:
            raise ValueError(f"token file line {row!r}: expected token,user,uid[,\"groups\"]")
        groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) > 3 else ()
        users[row[0].strip()] = User(row[1].strip(), row[2].strip(), groups)
    return users


class TokenAuthenticator:
    """Tokens from a file, reloaded when its modification time changes."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._mtime: float | None = None
        self._users: dict[str, User] = {}
        self._reload(force=True)

    def _reload(self, force: bool = False) -> None:
        try:
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            self._users, self._mtime = {}, None
            return
        if force or mtime != self._mtime:
            self._users = parse_token_file(self.path.read_text())
            self._mtime = mtime

    def authenticate(self, token: str) -> User | None:
        user = self._users.get(token)
        if user is None:
            self._reload()
            user = self._users.get(token)
        return user

    def mint(self, user: str, role: str) -> str:
        """Append a new token for ``user`` with ``role``; returns the token."""
        return self.mint_for(user, role_groups(role).split(","))

    def mint_for(self, user: str, groups: Sequence[str] = ()) -> str:
        """Append a new token for ``user`` in ``groups`` (what RBAC bindings name); returns the token."""
        token = secrets.token_urlsafe(32)
        line = io.StringIO()
        csv.writer(line, lineterminator="\n").writerow([token, user, user, ",".join(groups)])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as handle:
            handle.write(line.getvalue())
        self._reload(force=True)
        return token

    def token_for(self, role: str) -> str | None:
        for token, user in self._users.items():
            if user.role == role:
                return token
        return None


def with_default_groups(user: User) -> User:
    """The user as authorization sees it: kube adds ``system:authenticated`` to every
    authenticated user; Caldera adds ``caldera:agents`` to every agent (bound to the agent role)."""
    extra = ["system:authenticated"]
    if any(g.startswith("caldera:agent:") for g in user.groups):
        extra.append("caldera:agents")
    missing = [g for g in extra if g not in user.groups]
    return User(user.name, user.uid, user.groups + tuple(missing)) if missing else user
