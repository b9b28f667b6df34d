"""The wait engine against a real API server: watch from a fresh read, one deadline, early failure,
410 Gone re-lists, a dropped stream resumes from the last version seen, a window catches a change."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path

import pytest
import yaml

from kbc import apis
from kbc.cluster.providers import Cluster
from kbc.errors import ConsistencyViolation, KubeApiError, WaitGaveUp, WaitTimeout
from kbc.kube import Kube, Obj, connect, hold_list, is_true, observe, wait_for_list, wait_until_exists
from kbc.polling import poll
from kbc.workloads import pod

pytestmark = pytest.mark.cluster


def names(pods: list[Obj]) -> set[str]:
    return {p["metadata"]["name"] for p in pods}


def later(seconds: float, action: object) -> threading.Timer:
    timer = threading.Timer(seconds, action)  # type: ignore[arg-type]
    timer.start()
    return timer


class CountingKube(Kube):
    """The real client, counting its lists; the first list may hand out a stale resourceVersion."""

    def __init__(self, kube: Kube, stale_first: bool = False) -> None:
        super().__init__(kube.api_client)
        self.lists = 0
        self.stale_first = stale_first

    def list_at(
        self,
        kind: apis.Kind,
        *,
        namespace: str | None = None,
        labels: Mapping[str, str | None] | None = None,
        fields: Mapping[str, str] | None = None,
    ) -> tuple[list[Obj], str]:
        self.lists += 1
        items, version = super().list_at(kind, namespace=namespace, labels=labels, fields=fields)
        return items, (STALE_VERSION if self.stale_first and self.lists == 1 else version)


# Older than what any watch cache made after the cluster's first writes holds. Whether the server
# still serves it depends on the kind: the API server's cache of a built-in kind starts with the
# cluster and keeps every event until its buffer wraps, so a young cluster answers a watch of pods
# from "1" (found on a fresh cluster: the 410 test passed only after enough pod churn). The cache of
# a custom resource starts when its CRD is established, so for a CRD made here "1" is always too old.
STALE_VERSION = "1"
PROBE = apis.Kind("engine.kbc.test", "v1", "Probe")


def probe(name: str) -> Obj:
    return PROBE.manifest(name)


@pytest.fixture
def fresh_kind(kube: Kube) -> Iterator[apis.Kind]:
    """A namespaced custom resource whose CRD (and so the API server's watch cache) is new."""
    crd_name = f"probes.{PROBE.group}"
    kube.create(
        apis.CUSTOM_RESOURCE_DEFINITION.manifest(
            crd_name,
            spec={
                "group": PROBE.group,
                "scope": "Namespaced",
                "names": {"plural": "probes", "singular": "probe", "kind": PROBE.kind},
                "versions": [
                    {
                        "name": PROBE.version,
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        )
    )
    try:
        wait_until_exists(
            kube,
            apis.CUSTOM_RESOURCE_DEFINITION,
            crd_name,
            until=lambda crd: is_true(crd, "Established"),
            timeout=30,
            what=f"CRD {crd_name} to be Established",
        )
        yield PROBE
    finally:
        kube.delete(apis.CUSTOM_RESOURCE_DEFINITION, crd_name)


def watch_status(kube: Kube, kind: apis.Kind, namespace: str, version: str) -> int | None:
    """The status a watch of *kind* from *version* is refused with (None: it is served)."""
    try:
        for _ in kube.watch(kind, resource_version=version, timeout=1, namespace=namespace):
            pass
    except KubeApiError as exc:
        return exc.status
    return None


def test_a_wait_reacts_to_a_change_and_returns_what_it_saw(kube: Kube, namespace: str) -> None:
    timer = later(1.0, lambda: kube.create(pod("arrives"), namespace=namespace))
    started = time.monotonic()
    try:
        found = wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            until=lambda pods: "arrives" in names(pods),
            timeout=20,
            what="a pod",
        )
    finally:
        timer.join()
    assert names(found) == {"arrives"}
    assert time.monotonic() - started < 10, (
        "the wait must return when the change arrives, not at its deadline"
    )


def test_a_wait_keeps_one_deadline_and_reports_the_last_state(kube: Kube, namespace: str) -> None:
    kube.create(pod("present"), namespace=namespace)
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as info:
        wait_for_list(
            kube, apis.POD, namespace=namespace, until=lambda pods: not pods, timeout=3, what="no pods"
        )
    took = time.monotonic() - started
    assert 3 <= took < 6, f"one 3 s deadline for the whole wait, took {took:.1f}s"
    assert "timed out after 3s waiting for no pods" in str(info.value)
    assert f"Pod {namespace}/present" in info.value.last_state


def test_a_wait_stops_early_when_the_opposite_outcome_appears(kube: Kube, namespace: str) -> None:
    timer = later(1.0, lambda: kube.create(pod("wrong"), namespace=namespace))
    started = time.monotonic()
    try:
        with pytest.raises(WaitGaveUp) as info:
            wait_for_list(
                kube,
                apis.POD,
                namespace=namespace,
                until=lambda pods: "right" in names(pods),
                fail=lambda pods: "pod wrong appeared" if "wrong" in names(pods) else None,
                timeout=30,
                what="pod right",
            )
    finally:
        timer.join()
    assert time.monotonic() - started < 10, "the wait must stop at the failure, not at its deadline"
    assert info.value.reason == "pod wrong appeared"
    assert f"Pod {namespace}/wrong" in info.value.last_state


def test_the_opposite_outcome_wins_over_a_state_that_also_satisfies_the_wait(
    kube: Kube, namespace: str
) -> None:
    """A state can satisfy *until* and show the failure at once (pods Running, on the wrong nodes): it
    fails the wait, even when it is the very first state seen."""
    kube.create(pod("already-there"), namespace=namespace)
    with pytest.raises(WaitGaveUp, match="it runs where it must not"):
        wait_for_list(
            kube,
            apis.POD,
            namespace=namespace,
            until=bool,
            fail=lambda pods: "it runs where it must not" if pods else None,
            timeout=10,
            what="a pod",
        )


def test_a_consistency_window_catches_a_change_inside_it(kube: Kube, namespace: str) -> None:
    """hold_list watches the whole window: a pod that appears after 1 s of 5 fails it at once."""
    timer = later(1.0, lambda: kube.create(pod("intruder"), namespace=namespace))
    try:
        with pytest.raises(ConsistencyViolation) as info:
            hold_list(kube, apis.POD, namespace=namespace, holds=lambda pods: not pods, what="no pods")
    finally:
        timer.join()
    assert 0.9 <= info.value.after < 5, info.value.after
    assert "intruder" in str(info.value)


def test_an_expired_resource_version_is_listed_again(
    cluster: Cluster, namespace: str, fresh_kind: apis.Kind
) -> None:
    # A client of its own: it discovers the new kind (the session's client cached discovery before).
    with connect(cluster.kubeconfig) as client:

        def refusal() -> int | None:
            status = watch_status(client, fresh_kind, namespace, STALE_VERSION)
            return None if status == 429 else status or 200  # 429: the kind's cache is still starting

        # The server must really refuse the stale version, or this test proves nothing.
        refused = poll(refusal, timeout=30, step=0.5)
        assert refused == 410, f"a watch from resourceVersion {STALE_VERSION} was answered with {refused}"
        counting = CountingKube(client, stale_first=True)
        timer = later(1.0, lambda: client.create(probe("after-410"), namespace=namespace))
        try:
            found = wait_for_list(
                counting,
                fresh_kind,
                namespace=namespace,
                until=lambda objects: "after-410" in names(objects),
                timeout=20,
                what="the object created after the expired watch",
            )
        finally:
            timer.join()
    assert names(found) == {"after-410"}
    assert counting.lists == 2, f"a 410 Gone re-lists once; lists made: {counting.lists}"


class DroppingProxy:
    """A TCP forwarder in front of the API server that can cut every open connection."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.upstream)
            with self._lock:
                self.connections += 1
                self._open += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def drop_all(self) -> None:
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            self._open.clear()

    def close(self) -> None:
        self.server.close()
        self.drop_all()


@pytest.fixture
def proxy(kube: Kube) -> Iterator[DroppingProxy]:
    host, port = kube.host.removeprefix("https://").rsplit(":", 1)
    proxy = DroppingProxy((host, int(port)))
    try:
        yield proxy
    finally:
        proxy.close()


def until_seen(states: Iterator[list[Obj]], name: str) -> set[str]:
    """The pod names of the first state that includes *name* (empty when the deadline ends first)."""
    return next((names(state) for state in states if name in names(state)), set())


def proxied_kubeconfig(cluster: Cluster, proxy: DroppingProxy, tmp_path: Path) -> Path:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_dropped_stream_resumes_from_the_last_version_seen(
    kube: Kube, namespace: str, cluster: Cluster, proxy: DroppingProxy, tmp_path: Path
) -> None:
    watcher = CountingKube(connect(proxied_kubeconfig(cluster, proxy, tmp_path)))
    states: Generator[list[Obj], None, None] = observe(
        watcher, apis.POD, namespace=namespace, deadline=time.monotonic() + 30
    )
    assert next(states) == [], "the namespace starts empty"
    kube.create(pod("before-drop"), namespace=namespace)
    assert until_seen(states, "before-drop"), "the watch delivers the first change"

    # Cut the stream; a change made while no stream is open reaches the client only if it watches
    # again from the last version it saw (a watch from "now" would miss it, a re-list would count).
    proxy.drop_all()
    kube.create(pod("while-dropped"), namespace=namespace)
    assert until_seen(states, "while-dropped") == {"before-drop", "while-dropped"}
    assert watcher.lists == 1, (
        f"the engine resumed the watch instead of listing again ({watcher.lists} lists)"
    )
    assert proxy.connections >= 2, "the stream was really dropped and opened again"
    states.close()
