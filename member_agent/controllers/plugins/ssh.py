"""``ssh`` plugin: password-less ssh between the job's pods (volcano.md §9.3).

Secret ``<job>-ssh`` holds ``id_rsa``, ``id_rsa.pub``, ``authorized_keys`` and an ssh
``config`` with one ``Host`` entry per replica of the federated job. The key pair is, in
order: the existing Secret's (so a resync never rotates keys), the ``--ssh-private-key`` /
``--ssh-public-key`` flags, or a fresh 2048-bit RSA pair from ``cryptography``. Tests inject a
fixed :data:`~member_agent.controllers.plugins.base.KeySource` to stay deterministic.
"""

from __future__ import annotations

import base64

from member_agent.controllers.plugins.base import (
    JobPlugin,
    PluginContext,
    WireObject,
    add_mount,
    add_volume,
    containers,
    owned_metadata,
    subdomain_of,
    task_hosts,
)

DEFAULT_KEY_PATH = "/root/.ssh"
KEY_FILES = ("id_rsa", "id_rsa.pub", "authorized_keys", "config")


def generate_rsa_key_pair() -> tuple[str, str]:
    """A new 2048-bit RSA key: (PKCS#1 PEM private key, OpenSSH public key)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return private, public


def secret_name(job_name: str) -> str:
    return f"{job_name}-ssh"


class SshPlugin(JobPlugin):
    NAME = "ssh"
    FLAGS = {"ssh-key-file-path": DEFAULT_KEY_PATH, "ssh-private-key": "", "ssh-public-key": "", "ssh-port": 22}

    def ssh_config(self, ctx: PluginContext) -> str:
        lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
        for task, _ in ctx.job.federated_tasks():
            subdomain = subdomain_of(ctx.job, task)
            for host in task_hosts(ctx.job, task):
                short = host[: -len(subdomain) - 1]
                lines += [f"Host {short}", f"  HostName {host}", f"  Port {self.number('ssh-port')}"]
        return "\n".join(lines) + "\n"

    def _key_pair(self, ctx: PluginContext) -> tuple[str, str]:
        existing = ctx.existing.get(("Secret", secret_name(ctx.job.name)))
        if existing is not None and "id_rsa" in (existing.get("data") or {}):
            data = existing["data"]
            return (base64.b64decode(data["id_rsa"]).decode(), base64.b64decode(data["id_rsa.pub"]).decode())
        if self.text("ssh-private-key") and self.text("ssh-public-key"):
            return self.text("ssh-private-key"), self.text("ssh-public-key")
        source = ctx.key_source or generate_rsa_key_pair
        return source()

    def on_job_add(self, ctx: PluginContext) -> list[WireObject]:
        private, public = self._key_pair(ctx)
        files = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public, "config": self.ssh_config(ctx)}
        return [{
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": owned_metadata(ctx.job, secret_name(ctx.job.name)),
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in files.items()},
        }]

    def owned_objects(self, ctx: PluginContext) -> list[tuple[str, str]]:
        return [("Secret", secret_name(ctx.job.name))]

    def on_pod_create(self, pod: WireObject, ctx: PluginContext) -> None:
        path = self.text("ssh-key-file-path")
        # Private keys must not be group/world readable; a custom path keeps Volcano's 0644.
        mode = 0o600 if path == DEFAULT_KEY_PATH else 0o644
        name = secret_name(ctx.job.name)
        add_volume(pod, {"name": name, "secret": {
            "secretName": name,
            "defaultMode": mode,
            "items": [{"key": key, "path": f".ssh/{key}"} for key in KEY_FILES],
        }})
        for container in containers(pod):
            add_mount(container, {"name": name, "mountPath": path, "subPath": ".ssh"})
