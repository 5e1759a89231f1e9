"""``caldera demo``: the whole system as real processes on loopback (docs/demo.md).

* :mod:`federation.demo.processes` starts ``caldera serve`` and one ``caldera agent`` per member
  cluster, each in its own process group, and guarantees they are all gone at the end (the e2e
  suite uses the same supervisor);
* :mod:`federation.demo.manifests` builds the seed objects the demo applies, with short simulated
  durations, and what final phase each is expected to reach;
* :mod:`federation.demo.observe` polls the API into snapshots and records when each job was placed,
  reserved, started and finished;
* :mod:`federation.demo.render` draws the live view (rich on a terminal, plain lines otherwise)
  and the closing summary.
"""
