"""The Allure report people open: ``kbc report`` (what ``make report`` runs) turns a run's
``allure-results/`` into HTML with the previous report's history, and Debian's headless chromium
shows a reader the suites by epic, feature and story, a failed scenario with its evidence, and the
environment with every pin. A screenshot of the failed scenario is saved as
``reports/allure-report.png``."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from kbc.cluster.providers import Cluster
from kbc.supply.lock import load_lock
from tests.integration.commands import REPO, kbc
from tests.integration.registries import serving
from tests.integration.suite_runner import run_scenario

pytestmark = pytest.mark.cluster

FAILING = "suites/test_gang.py::test_two_job_gangs_one_runs_whole_the_other_waits_whole"
PASSING = "suites/test_gpu_quota.py::test_gpu_request_without_a_matching_limit_is_invalid"
CHROMIUM_HINT = (
    "install Debian's chromium and chromium-driver (make test does: apt-get install chromium chromium-driver)"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, CHROMIUM_HINT
    options = Options()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1600,1000")
    browser = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield browser
    finally:
        browser.quit()


def shown(browser: WebDriver, url: str, *texts: str) -> str:
    """Open *url* and wait until the page shows every one of *texts*; the page's text."""
    browser.get(url)
    WebDriverWait(browser, 30).until(
        lambda b: all(t in b.find_element(By.TAG_NAME, "body").text for t in texts),
        message=f"{url} did not show {texts}",
    )
    return str(browser.find_element(By.TAG_NAME, "body").text)


def click(browser: WebDriver, text: str) -> None:
    browser.find_element(By.XPATH, f"//*[normalize-space(text())='{text}']").click()


def wait_for(browser: WebDriver, text: str) -> None:
    WebDriverWait(browser, 10).until(
        lambda b: text in b.find_element(By.TAG_NAME, "body").text, message=f"the page never showed {text!r}"
    )


def test_the_report_shows_suites_a_failure_with_its_evidence_and_every_pin(
    cluster: Cluster, browser: WebDriver, tmp_path: Path
) -> None:
    results, output = tmp_path / "allure-results", tmp_path / "allure-report"
    failing = run_scenario(
        cluster, FAILING, sabotage="quota_far_too_high", extra=["--alluredir", str(results)]
    )
    assert failing.outcomes["failed"] == 1, failing.explain()
    passing = run_scenario(cluster, PASSING, sabotage=None, extra=["--alluredir", str(results)])
    assert passing.outcomes["passed"] == 1, passing.explain()
    for _ in range(2):  # the second report carries the first one's history
        made = kbc("report", "--results", str(results), "--output", str(output))
        assert made.returncode == 0, made.stderr
    assert "with the previous report's history" in made.stderr, made.stderr
    trend = json.loads((output / "widgets" / "history-trend.json").read_text())
    assert len(trend) == 2, trend

    with serving(output, tmp_path / "http.log") as url:
        shown(browser, f"{url}/index.html#behaviors", "Kueue", "Kubernetes")
        # The tree opens epic by epic, then feature by feature, down to the stories.
        for epic, feature, story in (
            ("Kueue", "gang", "of two 4-GPU Job gangs"),
            ("Kubernetes", "gpu_quota", "a GPU request without a matching limit"),
        ):
            click(browser, epic)
            wait_for(browser, feature)
            click(browser, feature)
            wait_for(browser, story)
        (failed,) = [
            case
            for case in map(json.loads, map(Path.read_text, (output / "data" / "test-cases").glob("*.json")))
            if case["status"] == "failed"
        ]
        page = shown(browser, f"{url}/index.html#testresult/{failed['uid']}", "condition timeline")
        for text in (
            "test_two_job_gangs_one_runs_whole_the_other_waits_whole",
            "gave up waiting for Workload",  # why it failed
            "Categories: Wait gave up (the opposite outcome appeared)",
            "gang B stays suspended with zero pods for the consistency window",  # the steps
            "objects",
            "events",
            "admission latency",
            "log: kueue-controller-manager (since the test began)",
        ):
            assert text in page, f"the failed scenario's page does not show {text!r}:\n{page}"
        click(browser, "condition timeline")  # open it, as a reader would, for the screenshot
        wait_for(browser, "condition QuotaReserved=True QuotaReserved")
        screenshot = REPO / "reports" / "allure-report.png"
        screenshot.parent.mkdir(exist_ok=True)
        browser.save_screenshot(str(screenshot))

        overview = shown(browser, f"{url}/index.html", "Environment")
        browser.find_element(By.CSS_SELECTOR, ".environment-widget__expand").click()
        WebDriverWait(browser, 10).until(
            lambda b: "kueue.appVersion" in b.find_element(By.TAG_NAME, "body").text
        )
        overview = str(browser.find_element(By.TAG_NAME, "body").text)
        for key, value in load_lock().environment().items():
            assert key in overview and value in overview, f"the environment does not show {key}={value}"
