"""A real OCI registry and a real HTTP chart repository on 127.0.0.1, for the supply-chain tests.

The registry is distribution's ``registry`` at the version ``charts-lock.yaml`` pins
(``tools.registry``, built from the module proxy on first use), storing on a temporary
directory. Images are pushed to it through the registry API itself (blobs, manifest,
then an index over it, as a multi-arch image is), so the digests a test reads back are
the registry's. Charts go in with the pinned ``helm push``. The chart repository is
``helm repo index`` of a folder, served by Python's HTTP server. Both run in their own
process group and are stopped when the test ends.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kbc.cluster.net import HOST, free_port, http_ok
from kbc.polling import TimeoutException, poll
from kbc.process import ProcessRef, spawn_detached, tail
from kbc.supply.pins import ChartsLock
from kbc.supply.toolchain import Toolchain

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


@dataclass(frozen=True)
class Registry:
    """A running registry: ``127.0.0.1:<port>``."""

    host: str
    log: Path

    def _put_blob(self, repository: str, data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        start = urllib.request.Request(f"http://{self.host}/v2/{repository}/blobs/uploads/", method="POST")
        with urllib.request.urlopen(start, timeout=30) as answer:
            location = answer.headers["Location"]
        if location.startswith("/"):
            location = f"http://{self.host}{location}"
        separator = "&" if "?" in location else "?"
        upload = urllib.request.Request(
            f"{location}{separator}digest={digest}",
            data=data,
            method="PUT",
            headers={"Content-Type": "application/octet-stream"},
        )
        urllib.request.urlopen(upload, timeout=30).close()
        return digest

    def _put_manifest(self, repository: str, reference: str, media_type: str, body: bytes) -> str:
        request = urllib.request.Request(
            f"http://{self.host}/v2/{repository}/manifests/{reference}",
            data=body,
            method="PUT",
            headers={"Content-Type": media_type},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return str(answer.headers["Docker-Content-Digest"])

    def push_image(self, repository: str, tag: str, build: int = 1) -> str:
        """Push a one-layer image as an index over one linux/amd64 manifest; return the index's digest
        as the registry states it. Another *build* is other content under the same tag."""
        layer = f"kbatch-conformance test image {repository}:{tag}, build {build}\n".encode()
        config = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers"}}).encode()
        blobs = [(self._put_blob(repository, blob), len(blob)) for blob in (config, layer)]
        manifest = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": {
                    "mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": blobs[0][0],
                    "size": blobs[0][1],
                },
                "layers": [
                    {
                        "mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": blobs[1][0],
                        "size": blobs[1][1],
                    }
                ],
            }
        ).encode()
        manifest_digest = self._put_manifest(
            repository, "sha256:" + hashlib.sha256(manifest).hexdigest(), OCI_MANIFEST, manifest
        )
        index = json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": OCI_INDEX,
                "manifests": [
                    {
                        "mediaType": OCI_MANIFEST,
                        "digest": manifest_digest,
                        "size": len(manifest),
                        "platform": {"architecture": "amd64", "os": "linux"},
                    }
                ],
            }
        ).encode()
        return self._put_manifest(repository, tag, OCI_INDEX, index)


def _wait_serving(url: str, log: Path) -> None:
    try:
        poll(lambda: http_ok(url) or None, timeout=30, step=0.2)
    except TimeoutException:
        raise AssertionError(f"{url} did not answer 200 within 30 s; its log ends:\n{tail(log)}") from None


@contextmanager
def running_registry(lock: ChartsLock, directory: Path) -> Iterator[Registry]:
    """The pinned registry on a free loopback port, storing under *directory*."""
    binary = Toolchain(lock).ensure(["registry"])["registry"]
    port = free_port()
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "registry.yml"
    config.write_text(
        "version: 0.1\n"
        "log: {level: info}\n"
        f"storage: {{filesystem: {{rootdirectory: {directory / 'data'}}}, delete: {{enabled: true}}}}\n"
        f"http: {{addr: '{HOST}:{port}'}}\n"
    )
    log = directory / "registry.log"
    process = spawn_detached([str(binary), "serve", str(config)], log)
    ref = ProcessRef.of(process.pid)
    try:
        _wait_serving(f"http://{HOST}:{port}/v2/", log)
        yield Registry(f"{HOST}:{port}", log)
    finally:
        ref.terminate(grace=5)
        process.wait()


@contextmanager
def serving(directory: Path, log: Path, ready: str = "index.html", port: int = 0) -> Iterator[str]:
    """*directory* served over HTTP on 127.0.0.1 by Python's server (on *port*, else a free one) until the
    block ends, once *ready* answers; yields the URL."""
    port = port or free_port()
    url = f"http://{HOST}:{port}"
    command = [sys.executable, "-m", "http.server", str(port), "--bind", HOST, "--directory", str(directory)]
    process = spawn_detached(command, log)
    ref = ProcessRef.of(process.pid)
    try:
        _wait_serving(f"{url}/{ready}", log)
        yield url
    finally:
        ref.terminate(grace=5)
        process.wait()


@contextmanager
def chart_repository(directory: Path, helm: Path) -> Iterator[str]:
    """``helm repo index`` of *directory* (its ``*.tgz`` charts), served over HTTP; yields the URL."""
    port = free_port()
    subprocess.run(
        [str(helm), "repo", "index", str(directory), "--url", f"http://{HOST}:{port}"],
        check=True,
        capture_output=True,
    )
    with serving(directory, directory.parent / "chart-repository.log", "index.yaml", port) as url:
        yield url
