"""The audience builder page in a real browser (Debian's chromium, driven by Playwright), served
by ``profiles serve`` as a user starts it, over the builder data set in an embedded gateway."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
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


AXE_CORE_VERSION = "4.10.3"


@pytest.fixture(scope="session")
def axe_script() -> Path:
    """axe-core's browser script, installed once by npm into the project's cache (no CDN)."""
    prefix = Path.home() / ".cache" / "adtech-profiles" / "npm" / f"axe-core-{AXE_CORE_VERSION}"
    script = prefix / "node_modules" / "axe-core" / "axe.min.js"
    if not script.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("the accessibility test installs axe-core with npm: install Node.js's npm")
        prefix.mkdir(parents=True, exist_ok=True)
        command = [npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(prefix)]
        subprocess.run([*command, f"axe-core@{AXE_CORE_VERSION}"], check=True)
    return script


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


def save_through_api(service: str, name: str, query: dict, activation: dict | None = None) -> dict:
    body = {"name": name, "query": query}
    if activation:
        body["activation"] = activation
    response = httpx.post(
        f"{service}/v1/audiences/saved", json=body, headers={"X-API-Key": SHOP_KEY}
    )
    response.raise_for_status()
    return response.json()


def saved_through_api(service: str, audience_id: str) -> httpx.Response:
    return httpx.get(f"{service}/v1/audiences/saved/{audience_id}", headers={"X-API-Key": SHOP_KEY})


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
    second.locator(".last-days").fill("5")
    second.locator(".criterion-error").filter(has_text="no data yet").wait_for()
    assert criterion(page, 0).locator(".criterion-error").text_content() == ""
    assert page.text_content("#estimate") == "–"


def test_a_range_without_data_is_said_plainly_with_the_days_to_choose(service, page):
    connect(page, service, SHOP_KEY)
    first = criterion(page, 0)
    first.locator(".last-days").fill("5")
    error = first.locator(".criterion-error")
    error.filter(has_text="no data yet").wait_for()
    plain = error.locator(":scope > span").text_content()
    choose = "Choose days from 2026-11-01 to 2026-11-02."
    assert plain == f"Some of these days have no data yet. {choose}"
    assert "materialize" not in plain and "sketches" not in plain


def test_the_apis_own_words_are_behind_a_technical_details_disclosure(service, page):
    connect(page, service, SHOP_KEY)
    first = criterion(page, 0)
    first.locator(".last-days").fill("5")
    details = first.locator(".criterion-error details")
    details.wait_for()
    technical = details.locator("code")
    assert not technical.is_visible()
    details.locator("summary").click()
    assert technical.is_visible()
    assert technical.text_content().startswith("unanswerable_query: no sketches for com.shop/")


def test_the_date_pickers_offer_the_days_with_data(service, page):
    connect(page, service, SHOP_KEY)
    picker = criterion(page, 0).locator(".date-from")
    days = picker.locator("option:not([disabled])").all_text_contents()
    assert days == ["2026-11-01", "2026-11-02"]
    assert page.text_content("#data-days").startswith("Data ready for 2026-11-01 to 2026-11-02;")


def test_a_saved_day_without_data_is_marked_and_cannot_be_picked_again(service, page):
    leaf = {"app_id": "com.shop", "event_type": "install"}
    query = {**leaf, "date_from": "2026-10-30", "date_to": "2026-11-02"}
    save_through_api(service, "Old installs", query)
    connect(page, service, SHOP_KEY)
    page.locator("#saved-list button.open").click()
    picker = criterion(page, 0).locator(".date-from")
    expect(picker).to_have_value("2026-10-30")
    assert picker.locator("option:checked").text_content() == "2026-10-30 (no data)"
    picker.select_option("2026-11-01")
    assert picker.locator("option[value='2026-10-30']").count() == 0


def test_last_n_days_shows_the_dates_it_covers(service, page):
    connect(page, service, SHOP_KEY)
    first = criterion(page, 0)
    first.locator(".last-days").fill("2")
    expect(first.locator(".last-span")).to_have_text("= 2026-11-01 to 2026-11-02")
    first.locator(".last-days").fill("1")
    expect(first.locator(".last-span")).to_have_text("= 2026-11-02")


def test_only_the_chosen_date_mode_can_be_edited(service, page):
    connect(page, service, SHOP_KEY)
    first = criterion(page, 0)
    assert first.locator(".last-days").is_enabled()
    assert first.locator(".date-from").is_disabled() and first.locator(".date-to").is_disabled()
    first.locator(".mode-range").check()
    assert first.locator(".last-days").is_disabled()
    assert first.locator(".date-from").is_enabled() and first.locator(".date-to").is_enabled()
    assert first.locator(".last-span").text_content() == ""


def test_the_daily_chart_says_each_bar_is_the_rule_on_one_day_alone(service, page):
    connect(page, service, SHOP_KEY)
    page.wait_for_selector("#chart svg rect.bar")
    chart = page.locator("#chart svg")
    assert chart.get_attribute("aria-labelledby") == "chart-title"
    assert page.text_content("#chart-title") == "Users on each single day"
    caption = " ".join(page.text_content("#chart-caption").split())
    assert "applies the audience's rule to that day alone" in caption
    assert "the bars add up to more than the total" in caption


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
    save_through_api(service, "Shop secret", EXPECTED_TREE)
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
    save_through_api(service, MARKUP_NAME, query)
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


INSTALLS = {"app_id": "com.shop", "event_type": "install", "last_days": 2}
LONG_SEGMENT = "shop_installers_last_two_days_retarget_q4"


def test_a_message_is_cleared_by_the_next_action(service, page):
    save_through_api(service, "Installers", INSTALLS)
    connect(page, service, SHOP_KEY)
    page.fill("#save-name", "installers")
    page.click("#save")
    page.locator("#save-status").filter(has_text="exists already").wait_for()
    page.locator("#saved-list button.open").click()
    expect(page.locator("#save-status")).to_have_text("")


def test_deactivate_asks_first_and_changes_nothing_when_declined(service, page):
    activation = {"segment": "installers", "ttl_days": 30}
    audience = save_through_api(service, "Installers", INSTALLS, activation)
    connect(page, service, SHOP_KEY)
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.locator("#saved-list button.activate").click()
    assert asked and asked[0].startswith('Deactivate "Installers"?')
    assert saved_through_api(service, audience["id"]).json()["activation"]["active"] is True
    expect(page.locator("#saved-list button.activate")).to_have_text("Deactivate")


def test_deactivate_takes_effect_once_confirmed(service, page):
    activation = {"segment": "installers", "ttl_days": 30}
    audience = save_through_api(service, "Installers", INSTALLS, activation)
    connect(page, service, SHOP_KEY)
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#saved-list button.activate").click()
    expect(page.locator("#saved-list button.activate")).to_have_text("Activate")
    assert saved_through_api(service, audience["id"]).json()["activation"]["active"] is False


def test_delete_asks_first_and_keeps_the_audience_when_declined(service, page):
    audience = save_through_api(service, "Installers", INSTALLS)
    connect(page, service, SHOP_KEY)
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.locator("#saved-list button.delete").click()
    assert asked and asked[0].startswith('Delete "Installers"? This cannot be undone.')
    assert saved_through_api(service, audience["id"]).status_code == 200
    assert page.locator("#saved-list tbody tr").count() == 1


def test_a_long_segment_id_fits_its_box(service, page):
    save_through_api(service, "Installers", INSTALLS, {"segment": LONG_SEGMENT, "ttl_days": 30})
    connect(page, service, SHOP_KEY)
    box = page.locator("#saved-list input.segment")
    expect(box).to_have_value(LONG_SEGMENT)
    assert box.evaluate("input => input.scrollWidth <= input.clientWidth")


def test_the_page_has_no_critical_accessibility_violations(service, page, axe_script):
    save_through_api(service, "Installers", INSTALLS, {"segment": "installers", "ttl_days": 30})
    page.add_init_script(path=str(axe_script))
    connect(page, service, SHOP_KEY)
    build_three_criteria(page)
    wait_for_estimate(page, "17")
    page.wait_for_selector("#chart svg rect.bar")
    results = page.evaluate("() => axe.run(document)")
    critical = [
        (v["id"], [node["target"] for node in v["nodes"]])
        for v in results["violations"]
        if v["impact"] in ("critical", "serious")
    ]
    assert critical == []


def test_the_builder_is_usable_from_the_keyboard(service, page):
    """Connect, then reach and change the first criterion's day count with keys only."""
    page.goto(service)
    page.focus("#api-key")
    page.keyboard.type(SHOP_KEY)
    page.keyboard.press("Enter")
    page.wait_for_selector("#builder:not([hidden])")
    page.focus("#criteria > li .mode-last")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "last-days"
    page.keyboard.press("Control+A")
    page.keyboard.type("1")
    expect(criterion(page, 0).locator(".last-span")).to_have_text("= 2026-11-02")


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
