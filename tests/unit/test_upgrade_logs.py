"""The canary's log check: which lines count as an upgrade's trouble."""

from __future__ import annotations

from kbc.report.canary import trouble

APISERVER = (
    'E1123 12:57:06.123456   4242 dispatcher.go:214] "Unhandled Error" err="failed calling webhook '
    '\\"mworkload.kb.io\\": tls: failed to verify certificate: x509: certificate signed by unknown authority"'
)
KUEUE_CONVERSION = (
    '{"level":"error","ts":"2026-11-23T12:57:07Z","msg":"Reconciler error","error":"conversion webhook for '
    'kueue.x-k8s.io/v1beta1, Kind=Workload failed"}'
)
KUEUE_INFO = '{"level":"info","ts":"2026-11-23T12:57:07Z","msg":"certificates are ready"}'
UNRELATED_ERROR = (
    '{"level":"error","ts":"2026-11-23T12:57:08Z","msg":"Reconciler error","error":"quota exceeded"}'
)


def test_error_lines_about_certificates_and_conversion_count() -> None:
    log = "\n".join([APISERVER, KUEUE_INFO, KUEUE_CONVERSION, UNRELATED_ERROR])
    assert trouble(log) == [APISERVER, KUEUE_CONVERSION]


def test_info_lines_and_other_errors_do_not() -> None:
    assert trouble("\n".join([KUEUE_INFO, UNRELATED_ERROR, "I1123 12:00:00 conversion done"])) == []
