"""Upstream's later fixes to a pinned chart (a declaration's ``chart_fixes``): the named top-level block of a
template goes, everything else stays, and a template without it is left as it is."""

from __future__ import annotations

from pathlib import Path

from kbc import components
from kbc.cluster.charts.source import _drop_block, _has_block

SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "trainer.webhook.secret.name" . }}
  labels:
    {{- include "trainer.webhook.labels" . | nindent 4 }}
data:
  ca.crt: ""

  tls.key: ""
"""


def test_the_block_goes_with_every_indented_line_and_the_rest_stays(tmp_path: Path) -> None:
    template = tmp_path / "secret.yaml"
    template.write_text(SECRET)
    assert _has_block(template, "data")
    _drop_block(template, "data")
    assert template.read_text() == SECRET[: SECRET.index("\ndata:") + 1]
    assert not _has_block(template, "data")


def test_a_block_nested_deeper_or_a_missing_template_is_not_the_fix_s(tmp_path: Path) -> None:
    template = tmp_path / "secret.yaml"
    template.write_text("metadata:\n  data: 1\n")
    assert not _has_block(template, "data")
    assert not _has_block(tmp_path / "absent.yaml", "data")


def test_trainer_s_pinned_chart_gets_upstream_s_fix_of_its_webhook_secret() -> None:
    (fix,) = components.registry()["trainer"].chart_fixes
    assert (fix.template, fix.block) == ("templates/webhook/secret.yaml", "data")
    assert "kubeflow/trainer#3627" in fix.upstream
