"""Every namespace GPU cap the suites set is 100 times what they ask for.

The "a pod over the cap is refused" scenario then sees its over-cap pod accepted
and must fail saying so, with the quota as it really stands.
"""

from __future__ import annotations

from typing import Any

import pytest

import kbc.quota


def pytest_configure(config: pytest.Config) -> None:
    original = kbc.quota.cap_gpus

    def generous(client: Any, namespace: str, cap: int, *args: Any, **kwargs: Any) -> Any:
        return original(client, namespace, cap * 100, *args, **kwargs)

    kbc.quota.cap_gpus = generous
