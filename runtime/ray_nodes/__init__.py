"""The driver of a multi-node run on Ray (``python -m ftspec.runtime.ray_nodes``).

It runs as the Ray job's entrypoint with the plan of ``ftspec.targets.ray_nodes`` in
``FTSPEC_NODES``: one placement-group bundle per node (STRICT_SPREAD), one ``NodeRunner``
actor per bundle (holding the whole bundle, so Ray sets its GPUs), the launcher started once
per node with its rank and the rank-0 node's address and a free port there. Ray has no
ready-made "run this command once per node with ranks" for an arbitrary launcher (Ray Train
wraps the training function itself), hence this small driver.

The first node that fails fails the job: the others are stopped (their launcher's process
group gets SIGTERM, then SIGKILL), the placement group is removed, the driver exits 1. A
stopped job (SIGTERM to the driver, what ``ftspec destroy`` causes) stops them the same way.
A watcher process beside each launcher kills its process group if the actor itself dies, so
nothing is left running. Each node's state is a log line ``[ftspec-node] rank=R …``.
"""
