"""The federation controllers, run by the controller manager (:mod:`federation.controllers.manager`:
``caldera controllers``, or inside ``caldera serve``).

Each entry is ``async def controller(ctx: ControllerContext) -> None`` (:mod:`.context`), started
once the manager leads and cancelled on shutdown. To add a controller: import it here and append
it to the list.
"""

from federation.controllers.dispatch import dispatch_controller
from federation.controllers.placement import placement_controller

CONTROLLERS = [
    placement_controller,
    dispatch_controller,
]

from federation.controllers.health import health_controller  # noqa: E402  (H2: cluster health)
from federation.controllers.status import status_controller  # noqa: E402  (H2: Job status aggregation)

CONTROLLERS += [status_controller, health_controller]  # type: ignore[list-item]

from federation.controllers.jobflow import jobflow_controller  # noqa: E402  (H4: JobFlow DAGs)

CONTROLLERS.append(jobflow_controller)  # type: ignore[arg-type]

from federation.controllers.source_status import source_status_controller  # noqa: E402  (H11: source kinds' status)

CONTROLLERS.append(source_status_controller)  # type: ignore[arg-type]
