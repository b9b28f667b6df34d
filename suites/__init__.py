"""Conformance suites: one module per capability (gang, quota, cohort, gpu_quota, fake_gpu, nvidia_gpu)."""
