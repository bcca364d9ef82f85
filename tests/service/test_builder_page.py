"""The audience builder page in a real browser (Debian's chromium, driven by Playwright), served
by ``profiles serve`` as a user starts it, over the builder data set in an embedded gateway."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx
import pytest
from known_audience import BUILDER_TENANTS, RIVAL_KEY, SHOP_KEY
from playwright.sync_api import expect, sync_playwright
from system_requirements import chromium

# A and B and not C: installers of the last 2 days (u0..u99) who bought red (20 users: even
# u0..u18, u20..u29), without those with 3+ purchases (u0..u4, of whom u0, u2, u4 bought red).
EXPECTED_TREE = {
    "difference": [
        {
            "intersection": [
                {"app_id": "com.shop", "event_type": "install", "last_days": 2},
                {
                    "app_id": "com.shop",
                    "event_type": "purchase",
                    "last_days": 2,
                    "attributes": {"color": "red"},
                },
            ]
        },
        {"app_id": "com.shop", "event_type": "purchase", "last_days": 2, "min_count": 3},
    ]
}


@pytest.fixture
def service(builder_pool, builder_gateway, serve_process, tmp_path) -> str:
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(BUILDER_TENANTS))
    url, _ = serve_process(
        [
            sys.executable,
            "-m",
            "profile_store.cli",
            "serve",
            "--port",
            "0",
            "--tenants",
            str(tenants),
            "--hbase-host",
            builder_gateway.host,
            "--hbase-port",
            str(builder_gateway.port),
        ]
    )
    return url


@pytest.fixture
def page():
    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=chromium(), args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        page = browser.new_page(viewport={"width": 1200, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page
        browser.close()
        assert errors == [], errors


def connect(page, url: str, key: str) -> None:
    page.goto(url)
    page.fill("#api-key", key)
    page.click("#connect")
    page.wait_for_selector("#builder:not([hidden])")


def criterion(page, index: int):
    return page.locator("#criteria > li").nth(index)


def wait_for_estimate(page, expected: str) -> None:
    page.wait_for_function(
        "expected => document.querySelector('#estimate').textContent === expected", arg=expected
    )


def build_three_criteria(page) -> None:
    first = criterion(page, 0)
    first.locator(".event-type").select_option("install")
    page.click("#add-criterion")
    second = criterion(page, 1)
    second.locator(".event-type").select_option("purchase")
    second.locator(".add-filter").click()
    second.locator(".attribute-name").wait_for()
    second.locator(".attribute-value").select_option("red")
    page.click("#add-criterion")
    third = criterion(page, 2)
    third.locator(".connector").select_option("difference")
    third.locator(".event-type").select_option("purchase")
    third.locator(".min-count").fill("3")


def test_the_shown_count_of_a_three_criteria_audience_is_the_apis_answer(service, page):
    connect(page, service, SHOP_KEY)
    build_three_criteria(page)
    answer = httpx.post(
        f"{service}/v1/audiences/estimate", json=EXPECTED_TREE, headers={"X-API-Key": SHOP_KEY}
    ).json()
    assert answer["estimate"] == 17
    wait_for_estimate(page, "17")
    assert page.text_content("#expression") == "(A AND B) AND NOT C"
    assert page.text_content("#range") == "exact count"
    page.wait_for_selector("#chart rect.bar")
    bars = page.locator("#chart rect.bar")
    assert bars.count() == 2
    daily = httpx.post(
        f"{service}/v1/audiences/daily", json=EXPECTED_TREE, headers={"X-API-Key": SHOP_KEY}
    ).json()["days"]
    shown = [bars.nth(i).get_attribute("data-estimate") for i in range(2)]
    assert shown == [str(day["estimate"]) for day in daily]
    screenshot(page, "audience-builder.png")


def test_an_error_appears_beside_the_criterion_that_caused_it(service, page):
    connect(page, service, SHOP_KEY)
    page.click("#add-criterion")
    second = criterion(page, 1)
    second.locator(".mode-range").check()
    second.locator(".date-from").fill("2026-10-30")
    second.locator(".criterion-error").filter(has_text="no sketches").wait_for()
    assert "2026-10-30" in second.locator(".criterion-error").text_content()
    assert criterion(page, 0).locator(".criterion-error").text_content() == ""
    assert page.text_content("#estimate") == "–"


def test_saved_audiences_open_in_the_overlap_view(service, page):
    connect(page, service, SHOP_KEY)
    build_three_criteria(page)
    wait_for_estimate(page, "17")
    page.fill("#save-name", "Red buyers, not heavy")
    page.click("#save")
    page.locator("#saved-list tbody tr").first.wait_for()
    criterion(page, 2).locator(".remove").click()
    wait_for_estimate(page, "20")
    page.fill("#save-name", "Red buyers")
    page.click("#save")
    page.locator("#saved-list tbody tr").nth(1).wait_for()
    for box in page.locator("#saved-list .compare").all():
        box.check()
    page.click("#show-overlap")
    page.wait_for_selector("#overlap:not([hidden]) svg.venn circle")
    assert page.locator("#venn circle").count() == 2
    rows = page.locator("#overlap-table tbody tr")
    cells = [rows.nth(i).locator("td").all_text_contents() for i in range(rows.count())]
    assert cells == [
        ["Red buyers", "20", "20 – 20"],
        ["Red buyers, not heavy", "17", "17 – 17"],
        ["Red buyers ∩ Red buyers, not heavy", "17", "17 – 17"],
    ]
    screenshot(page, "audience-overlap.png")


def test_another_tenant_sees_only_its_own_apps_and_audiences(service, page):
    httpx.post(
        f"{service}/v1/audiences/saved",
        json={"name": "Shop secret", "query": EXPECTED_TREE},
        headers={"X-API-Key": SHOP_KEY},
    ).raise_for_status()
    connect(page, service, RIVAL_KEY)
    options = page.locator("#app option").all_text_contents()
    assert options == ["com.rival"]
    assert page.locator("#saved-list tbody tr").count() == 0
    assert "com.shop" not in page.content()


MARKUP_NAME = '<img src=x onerror="window.injected=1"><b>Shoes</b> & "co"'
MARKUP_ATTRIBUTE = "<i>size</i>"


def test_an_audience_whose_names_hold_markup_opens_with_them_as_text(service, page):
    """Saved through the API, its name and its filter's attribute hold markup; the attribute
    was never kept, so the builder offers nothing for it: it keeps the filter as saved."""
    query = {
        "intersection": [
            {"app_id": "com.shop", "event_type": "install", "last_days": 2},
            {
                "app_id": "com.shop",
                "event_type": "purchase",
                "last_days": 2,
                "attributes": {MARKUP_ATTRIBUTE: "<b>42</b>"},
            },
        ]
    }
    httpx.post(
        f"{service}/v1/audiences/saved",
        json={"name": MARKUP_NAME, "query": query},
        headers={"X-API-Key": SHOP_KEY},
    ).raise_for_status()
    connect(page, service, SHOP_KEY)
    row = page.locator("#saved-list tbody tr").first
    assert row.locator("td.name").text_content() == MARKUP_NAME
    row.locator("button.open").click()
    second = criterion(page, 1)
    # The filter's selects exist at once and are filled when discovery answers.
    expect(second.locator(".attribute-name")).to_have_value(MARKUP_ATTRIBUTE)
    expect(second.locator(".attribute-value")).to_have_value("<b>42</b>")
    second.locator(".criterion-error").filter(has_text="cannot be filtered on").wait_for()
    assert MARKUP_ATTRIBUTE in second.locator(".criterion-error").text_content()
    assert page.evaluate("window.injected") is None


def test_an_unknown_key_is_told_and_shows_nothing(service, page):
    page.goto(service)
    page.fill("#api-key", "not-a-key-0123456789")
    page.click("#connect")
    page.locator("#key-status").filter(has_text="unknown API key").wait_for()
    assert page.locator("#builder").is_hidden()


def screenshot(page, name: str) -> None:
    """The README's pictures, when ``BUILDER_SCREENSHOTS`` names where to keep them."""
    target = os.environ.get("BUILDER_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(target) / name), full_page=True)
