"""Kubernetes ``Status`` errors: every failure the API answers is one of these.

Handlers raise :class:`ApiError`; the app's middleware turns it into a ``Status`` JSON body
with ``reason``, ``message``, ``details`` and ``code`` as kube-apiserver writes them, so
kubectl and kubernetes-asyncio print familiar messages (``jobs.batch.volcano.sh "x" not found``).
"""

from __future__ import annotations

from typing import Any

from policies.kinds import KindInfo


class ApiError(Exception):
    """An API failure with its HTTP code and Kubernetes reason."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def to_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": self.message, "reason": self.reason, "code": self.code,
        }
        if self.details:
            status["details"] = self.details
        return status


def success_status(info: KindInfo, name: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200,
            "details": {"name": name, "group": info.group, "kind": info.plural}}


def _details(info: KindInfo | None, name: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name} if name else {}
    if info is not None:
        details.update(group=info.group, kind=info.plural)
    details.update(extra)
    return details


def not_found(info: KindInfo, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{info.resource_ref} "{name}" not found', _details(info, name))


def namespace_not_found(namespace: str) -> ApiError:
    return ApiError(404, "NotFound", f'namespaces "{namespace}" not found',
                    {"name": namespace, "kind": "namespaces"})


def path_not_found(path: str) -> ApiError:
    return ApiError(404, "NotFound", f"the server could not find the requested resource ({path})")


def already_exists(info: KindInfo, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{info.resource_ref} "{name}" already exists', _details(info, name))


def conflict(info: KindInfo, name: str, why: str) -> ApiError:
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {info.resource_ref} "{name}": {why}',
                    _details(info, name))


def stale(info: KindInfo, name: str) -> ApiError:
    return conflict(info, name, "the object has been modified; please apply your changes to the latest "
                                "version and try again")


def invalid(info: KindInfo, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 Invalid listing every ``(field path, message)``."""
    joined = ", ".join(f"{path}: {msg}" if path else msg for path, msg in causes)
    cause_list = [{"reason": "FieldValueInvalid", "message": msg, "field": path} for path, msg in causes]
    return ApiError(422, "Invalid", f'{info.kind}.{info.group or "core"} "{name}" is invalid: {joined}',
                    _details(info, name, kind=info.kind, causes=cause_list))


def invalid_options(kind: str, field: str, message: str) -> ApiError:
    """422 Invalid for request options (``DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: ...``)."""
    cause = {"reason": "FieldValueNotSupported" if message.startswith("Unsupported") else "FieldValueInvalid",
             "message": message, "field": field}
    return ApiError(422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: {field}: {message}',
                    {"group": "meta.k8s.io", "kind": kind, "causes": [cause]})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(user: str, verb: str, info: KindInfo | None, name: str, namespace: str, why: str) -> ApiError:
    what = info.resource_ref if info else "resource"
    where = f' in the namespace "{namespace}"' if namespace else ""
    target = f' "{name}"' if name else ""
    return ApiError(403, "Forbidden",
                    f'{what}{target} is forbidden: User "{user}" cannot {verb} resource "{what}"{where}: {why}',
                    _details(info, name))


def method_not_allowed(method: str, path: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource "
                                             f"({method} {path})")


def too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"the request body is larger than the limit of {limit} bytes "
                                                  f"(MAX_REQUEST_BODY_BYTES)")


def unsupported_media(content_type: str, allowed: list[str]) -> ApiError:
    return ApiError(415, "UnsupportedMediaType",
                    f"the body of the request was in an unknown format ({content_type or 'none'}); "
                    f"accepted media types include: {', '.join(allowed)}")


def expired(since: int, oldest: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {since} ({oldest})")
