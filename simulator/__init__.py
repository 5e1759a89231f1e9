"""``caldera simulate``: replay job traces in virtual time through Caldera's own scheduling code.

A composition root: it imports ``policies``, ``member_agent`` (the session scheduler and its
incremental cache) and, for several clusters, ``federation.placement``; nothing imports it.
The cores get an injected clock and are fed objects as events, exactly as the agent feeds
them; there is no simulation branch inside them. See docs/simulate.md.
"""
