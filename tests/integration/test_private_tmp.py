"""A host process with a /tmp of its own (the training operator's cert-controller fixes a folder there):
it sees the cluster's folder as /tmp, the harness's own paths under the host's /tmp still, and the host's
/tmp gets nothing; the mounts go with the process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kbc.cluster.providers.local._private_tmp import private_tmp_command


@pytest.mark.skipif(os.geteuid() != 0, reason="the local provider's real nodes and this test run as root")
def test_the_process_sees_its_folder_as_tmp_and_the_host_s_tmp_gets_nothing(tmp_path: Path) -> None:
    assert Path("/tmp") in tmp_path.parents, "pytest's tmp_path is under /tmp here, as a KBC_CACHE_DIR may be"
    folder = tmp_path / "private"
    (folder / "k8s-webhook-server" / "serving-certs").mkdir(parents=True)
    (folder / "k8s-webhook-server" / "serving-certs" / "tls.crt").write_text("the harness's certificate\n")
    outside = tmp_path / "kubeconfig"
    outside.write_text("the harness's own file under the host's /tmp\n")
    probe = (
        'cat /tmp/k8s-webhook-server/serving-certs/tls.crt && cat "$1" && '
        "echo written > /tmp/from-the-process && ls /tmp"
    )
    command = ["/bin/sh", "-c", probe, "sh", str(outside)]
    done = subprocess.run(private_tmp_command(folder, command), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["the harness's certificate", "the harness's own file under the host's /tmp"]
    assert "from-the-process" in lines[2:] and "k8s-webhook-server" in lines[2:]
    assert (folder / "from-the-process").read_text() == "written\n"
    assert not Path("/tmp/from-the-process").exists(), "the host's /tmp got the process's file"
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(folder) not in mounts, "a mount of the process's namespace is left on the host"


def test_the_paths_of_the_command_under_tmp_are_kept_by_their_top_folder(tmp_path: Path) -> None:
    command = private_tmp_command(
        tmp_path / "p", ["/bin/true", "--a=/tmp/x/y/z", "/tmp/w", "--b=127.0.0.1:80"]
    )
    script = command.index("-I") + 1
    kept = command[script + 2 : command.index("--", script)]
    assert kept == ["/tmp/w", "/tmp/x"]
