"""``kubectl logs`` of a member pod at the federation: the pod's agent ships the log on request.

Agents connect to the federation, never the other way round, so the federation cannot open the
member's ``pods/log``. It *asks* instead (push on request, docs/protocol.md "Member pods"):

1. ``GET /api/v1/namespaces/NS/pods/NAME/log`` (RBAC ``get pods/log``) finds the pod's current copy
   in the member view and queues a log request for its cluster;
2. the cluster's agent long-polls ``GET /caldera/v1/clusters/C/logrequests?timeoutSeconds=N`` and
   gets ``{"items": [{id, namespace, name, container, follow, tailLines, limitBytes}]}``;
3. it reads the log from its member (sim kubelet, or the kube gateway's ``pods/log``) and streams it
   as the body of ``POST /caldera/v1/clusters/C/logrequests/ID`` (or ``?code=404&message=...``);
4. the federation pipes that body to the waiting client. A client that goes away ends the POST,
   which tells the agent to stop (a ``-f`` follow ends there, or when the container ends).

Only cluster ``C``'s agent may poll or answer for ``C`` (RBAC ``get``/``post`` on the URL, then the
agent's own cluster checked here). Requests live in this replica's memory: with several replicas
the agent must be connected to the one ``kubectl logs`` reached (a limit, docs/protocol.md).
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from federation.apiserver import keys
from federation.apiserver import status as st
from federation.apiserver.member_view import cluster_of
from federation.apiserver.rbac.agents import agent_cluster

Obj = dict[str, Any]
PREFIX = "/caldera/v1/clusters"
#: how long a log request waits for its agent to pick it up and answer
ANSWER_TIMEOUT = 20.0
#: the longest long poll an agent may ask for
MAX_POLL_SECONDS = 60.0


@dataclass
class LogRequest:
    id: str
    cluster: str
    params: Obj
    #: the agent's answer: its request body (a stream), or an ApiError
    answer: asyncio.Future[Any] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    #: set when the client has what it gets (or went away): the agent's POST then ends
    done: asyncio.Event = field(default_factory=asyncio.Event)


class LogBroker:
    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._pending: dict[str, list[LogRequest]] = {}
        self._open: dict[str, LogRequest] = {}
        self._arrived: dict[str, asyncio.Event] = {}

    def submit(self, cluster: str, params: Obj) -> LogRequest:
        req = LogRequest(f"{cluster}-{next(self._ids)}", cluster, params)
        self._pending.setdefault(cluster, []).append(req)
        self._open[req.id] = req
        self._arrived.setdefault(cluster, asyncio.Event()).set()
        return req

    def close(self, req: LogRequest) -> None:
        req.done.set()
        self._open.pop(req.id, None)
        pending = self._pending.get(req.cluster)
        if pending and req in pending:
            pending.remove(req)

    async def poll(self, cluster: str, timeout: float) -> list[LogRequest]:
        """The requests waiting for ``cluster``'s agent (waits up to ``timeout`` for one)."""
        event = self._arrived.setdefault(cluster, asyncio.Event())
        if not self._pending.get(cluster):
            if timeout <= 0:
                return []
            event.clear()
            try:
                await asyncio.wait_for(event.wait(), timeout)
            except TimeoutError:
                return []
        taken = self._pending.pop(cluster, [])
        event.clear()
        return taken

    def get(self, cluster: str, request_id: str) -> LogRequest:
        req = self._open.get(request_id)
        if req is None or req.cluster != cluster:
            raise st.ApiError(404, "NotFound", f"log request {request_id!r} of cluster {cluster!r} is not open")
        return req


def broker_of(state: Any) -> LogBroker:
    if state.log_broker is None:
        state.log_broker = LogBroker()
    return state.log_broker  # type: ignore[no-any-return]


def _int(query: Any, name: str) -> int | None:
    text = query.get(name)
    if text in (None, ""):
        return None
    try:
        return int(text)
    except ValueError:
        raise st.bad_request(f"{name}: must be an integer, got {text!r}") from None


async def serve_log(state: Any, request: web.Request, pod: Obj) -> web.StreamResponse:
    """Ask the pod's agent for its log and stream the answer to the client."""
    meta = pod["metadata"]
    cluster = cluster_of(pod)
    params = {"namespace": meta["namespace"], "name": meta["name"], "container": request.query.get("container", ""),
              "follow": request.query.get("follow", "").lower() in ("true", "1"),
              "tailLines": _int(request.query, "tailLines"), "limitBytes": _int(request.query, "limitBytes")}
    broker = broker_of(state)
    req = broker.submit(cluster, params)
    try:
        try:
            answer = await asyncio.wait_for(asyncio.shield(req.answer), ANSWER_TIMEOUT)
        except TimeoutError:
            raise st.ApiError(503, "ServiceUnavailable",
                              f'pods "{meta["name"]}": the agent of member cluster {cluster} did not answer the log '
                              f"request within {ANSWER_TIMEOUT:.0f}s (is it connected to this federation "
                              f"replica?)") from None
        if isinstance(answer, st.ApiError):
            raise answer
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/plain; charset=utf-8"})
        await response.prepare(request)
        async for chunk in answer.iter_any():
            await response.write(chunk)
        await response.write_eof()
        return response
    finally:  # done, refused, timed out or the client left: the agent's POST (if any) ends here
        broker.close(req)


def _agent_of(request: web.Request, cluster: str) -> None:
    user = request[keys.USER]
    if agent_cluster(user.groups) != cluster:
        raise st.ApiError(403, "Forbidden", f"only the agent of cluster {cluster!r} may serve its log requests")


def add_routes(app: web.Application, state: Any) -> None:
    async def poll(request: web.Request) -> web.Response:
        cluster = request.match_info["cluster"]
        _agent_of(request, cluster)
        asked = _int(request.query, "timeoutSeconds")
        timeout = max(0.0, min(float(30 if asked is None else asked), MAX_POLL_SECONDS))
        taken = await broker_of(state).poll(cluster, timeout)
        return web.json_response({"items": [dict(r.params, id=r.id) for r in taken]})

    async def answer(request: web.Request) -> web.Response:
        cluster = request.match_info["cluster"]
        _agent_of(request, cluster)
        req = broker_of(state).get(cluster, request.match_info["id"])
        code = _int(request.query, "code")
        if req.answer.done():
            raise st.ApiError(409, "Conflict", f"log request {req.id!r} was answered already")
        if code is not None:
            reason = {404: "NotFound", 400: "BadRequest"}.get(code, "InternalError")
            req.answer.set_result(st.ApiError(code, reason, request.query.get("message", "no log")))
            return web.json_response({"status": "Success"})
        req.answer.set_result(request.content)
        await req.done.wait()  # the client has it all (or left): ending this POST stops the agent
        return web.json_response({"status": "Success"})

    app.router.add_get(PREFIX + "/{cluster}/logrequests", poll)
    app.router.add_post(PREFIX + "/{cluster}/logrequests/{id}", answer)
