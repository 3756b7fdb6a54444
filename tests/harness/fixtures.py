"""pytest plugin: real-component fixtures, markers and test ordering.

Load with ``pytest_plugins = ["harness.fixtures"]`` (root conftest) or ``-p harness.fixtures``.

Fixtures:
- ``kube_cluster`` (session): a started ``KubeCluster``: the pinned kube-apiserver and etcd only,
  with the upstream CRDs (their CEL rules enforced by the server) and runtimes.
- ``kube_namespace`` (function): name of a fresh namespace, deleted after the test.
- ``ray_head`` (session): a started ``RayHead``.
- ``real_cluster`` (session): a started ``RealCluster``: a current kube-apiserver with the real
  Trainer, JobSet and KubeRay controllers, kube-controller-manager, kube-scheduler and kwok.
- ``real_namespace`` (function): a fresh namespace on ``real_cluster``, deleted after the test.

Heavy fixtures one at a time: two cores cannot host an API server, a Ray head and training runs
at once. When a test needs a heavy component, every other running heavy component that the test
does not also need is stopped first; a component that was stopped this way is started again
(fresh: new etcd data, new Ray session; see ``start_count``) when a later test needs it. Tests are
ordered so this rarely happens: unmarked tests, then those of ``kube_cluster``, ``real_cluster``
and ``ray_head`` in turn (each group's e2e tests at its end), then the other e2e tests.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from typing import Protocol

import pytest

from harness.kube import KubeCluster
from harness.ray_head import RayHead, RayNotInstalled, ray_command
from harness.realcluster import RealCluster
from harness.upstream import UpstreamMissing, require_upstream_dir

MARKERS = {
    "kube": "uses the real kube-apiserver (kube_cluster fixture); run together",
    "realcluster": "uses the real control plane and controllers (real_cluster fixture); run together",
    "ray": "uses the real Ray head (ray_head fixture); run together",
    "e2e": "end-to-end test of the ftspec CLI against real components; run last",
    "slow": ("imports torch, torchtune or accelerate, runs a process for seconds, or takes a "
             "second or more (a whole-corpus walk); out of the fast loop (tests/README.md)"),
}
HEAVY_FIXTURES = ("kube_cluster", "ray_head", "real_cluster")


class Heavy(Protocol):
    @property
    def running(self) -> bool: ...

    def start(self) -> object: ...

    def stop(self) -> None: ...


class HeavyRegistry:
    """Keeps at most the heavy components the current test needs running."""

    def __init__(self) -> None:
        self.components: dict[str, Heavy] = {}
        self.wanted: set[str] = set()

    def add(self, name: str, component: Heavy) -> None:
        self.components[name] = component

    def remove(self, name: str) -> None:
        self.components.pop(name, None)

    def activate(self, name: str) -> None:
        """Stop running components the current test does not need, then make ``name`` run."""
        for other, component in self.components.items():
            if other != name and other not in self.wanted and component.running:
                component.stop()
        component = self.components[name]
        if not component.running:
            component.start()

    def stop_all(self) -> None:
        for component in self.components.values():
            component.stop()


_REGISTRY = pytest.StashKey[HeavyRegistry]()


def _registry(config: pytest.Config) -> HeavyRegistry:
    return config.stash[_REGISTRY]


# --------------------------------------------------------------------------- hooks


def pytest_configure(config: pytest.Config) -> None:
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    config.stash[_REGISTRY] = HeavyRegistry()


def _order_key(item: pytest.Item) -> tuple[int, int]:
    """Unmarked tests first, then the tests of each heavy component together (its e2e tests
    last among them), so a session starts each component once: ``kube_cluster``,
    ``real_cluster``, ``ray_head``; then the e2e tests that use none of them."""
    markers = {mark.name for mark in item.iter_markers()}
    fixtures = set(getattr(item, "fixturenames", ()))
    e2e = 1 if "e2e" in markers else 0
    if "kube" in markers or "kube_cluster" in fixtures:
        return (1, e2e)
    if "realcluster" in markers or "real_cluster" in fixtures:
        return (2, e2e)
    if "ray" in markers or "ray_head" in fixtures:
        return (3, e2e)
    return (4, 0) if e2e else (0, 0)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keyed = sorted(enumerate(items), key=lambda pair: (*_order_key(pair[1]), pair[0]))
    items[:] = [item for _index, item in keyed]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    registry = _registry(item.config)
    fixtures = set(getattr(item, "fixturenames", ()))
    registry.wanted = {name for name in HEAVY_FIXTURES if name in fixtures}
    for name in registry.wanted:
        if name in registry.components:  # already created in this session, maybe stopped since
            registry.activate(name)


def pytest_sessionfinish(session: pytest.Session) -> None:
    registry = session.config.stash.get(_REGISTRY, None)
    if registry is not None:
        registry.stop_all()


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def kube_cluster(request: pytest.FixtureRequest) -> Iterator[KubeCluster]:
    """The pinned kube-apiserver + etcd (no controllers) with the upstream CRDs and torchtune runtimes."""
    try:
        upstream = require_upstream_dir()
    except UpstreamMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    registry = _registry(request.config)
    cluster = KubeCluster(upstream=upstream)
    registry.add("kube_cluster", cluster)
    try:
        registry.activate("kube_cluster")
        yield cluster
    finally:
        registry.remove("kube_cluster")
        cluster.stop()


_SLUG = re.compile(r"[^a-z0-9]+")


@pytest.fixture
def kube_namespace(kube_cluster: KubeCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace (unique name derived from the test name), deleted after the test."""
    slug = _SLUG.sub("-", request.node.name.lower()).strip("-")[:40].strip("-") or "test"
    name = f"t-{slug}-{secrets.token_hex(3)}"
    kube_cluster.create_namespace(name, labels={"ftspec.test/namespace": "true"})
    yield name
    if not kube_cluster.started:
        return  # stopped meanwhile: its etcd data (and the namespace) are gone
    if not kube_cluster.running:
        kube_cluster.start()  # the test killed the API server and left it down: restart it
    kube_cluster.delete_namespace(name)


@pytest.fixture(scope="session")
def real_cluster(request: pytest.FixtureRequest) -> Iterator[RealCluster]:
    """The current control plane with the real controllers (built once per pin set, then cached)."""
    registry = _registry(request.config)
    cluster = RealCluster()
    registry.add("real_cluster", cluster)
    try:
        registry.activate("real_cluster")
        yield cluster
    finally:
        registry.remove("real_cluster")
        cluster.stop()


@pytest.fixture
def real_namespace(real_cluster: RealCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace on the real cluster; deleted (by the real namespace controller) after the test."""
    slug = _SLUG.sub("-", request.node.name.lower()).strip("-")[:30].strip("-") or "test"
    name = f"r-{slug}-{secrets.token_hex(3)}"
    if real_cluster.recycle_volumes() < 8:  # a test binds a few claims; earlier tests' are released
        real_cluster.add_volumes(16)
    real_cluster.create_namespace(name, labels={"ftspec.test/namespace": "true"})
    yield name
    if real_cluster.running:
        real_cluster.request("DELETE", f"/api/v1/namespaces/{name}")


@pytest.fixture(scope="session")
def ray_head(request: pytest.FixtureRequest) -> Iterator[RayHead]:
    """A real local Ray head; ``ray_head.address`` is the Jobs API URL."""
    try:
        ray_command()
    except RayNotInstalled as err:
        pytest.fail(str(err), pytrace=False)
    registry = _registry(request.config)
    head = RayHead()
    registry.add("ray_head", head)
    try:
        registry.activate("ray_head")
        yield head
    finally:
        registry.remove("ray_head")
        head.stop()
