"""The audience builder page in a real browser (Debian's chromium, driven by Playwright), served
by ``profiles serve`` as a user starts it, over the builder data set in an embedded gateway."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import httpx
import pytest
from known_audience import (
    BUILDER_TENANTS,
    BUILT_PAIRS,
    DAY_1,
    DAY_2,
    RIVAL_KEY,
    SHOP_KEY,
    day_rows,
    write_builder_tables,
)
from playwright.sync_api import expect, sync_playwright
from system_requirements import chromium

from profile_store.audiences.answerable import TOO_MANY_VALUES
from profile_store.audiences.built_days import built_day_cells
from profile_store.audiences.sketch_table import SKETCH_TABLE, write_rows

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


def serve(serve_process, tmp_path: Path, gateway, tenants_file: dict = BUILDER_TENANTS) -> str:
    """``profiles serve`` over ``gateway``'s sketches, as a user starts it; its URL."""
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(tenants_file))
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
            gateway.host,
            "--hbase-port",
            str(gateway.port),
        ]
    )
    return url


@pytest.fixture
def service(builder_pool, builder_gateway, serve_process, tmp_path) -> str:
    return serve(serve_process, tmp_path, builder_gateway)


DAY_3 = date(2026, 11, 3)
WEB_APP = "com.shop.web"
BOTH_APPS_KEY = "both-apps-key-0123456789abcdef"
BOTH_APPS_TENANTS = {
    "tenants": [
        {"name": "shop group", "api_keys": [BOTH_APPS_KEY], "app_ids": ["com.shop", WEB_APP]},
    ]
}
MANY_QUERIES = {
    "reason": TOO_MANY_VALUES, "distinct_values": 5000, "appearances": 5200, "window_days": 7,
    "max_distinct": 100, "max_distinct_ratio": 0.1, "few_values": 20,
}  # fmt: skip


def users(first: int, stop: int) -> dict[str, int]:
    return {f"u{i}": 1 for i in range(first, stop)}


def write_refusal_tables(connection) -> None:
    """The builder's data set with a third built day (2026-11-03, views only) and two event
    types of com.shop whose attribute cannot be filtered on on 2026-11-01: ``search``'s
    ``query``, trimmed for its many values (kept on the 2nd: u50..u59 searched shoes), and
    ``view``'s ``screen``, never seen (kept on the 2nd: u40..u49 viewed home; the 3rd: u40..u44);
    and a second app, com.shop.web, whose installers of the 1st and 2nd are u90..u119."""
    write_builder_tables(connection)
    table = connection.table(SKETCH_TABLE)
    anyone = {"": users(0, 10)}
    write_rows(
        table,
        [
            *day_rows("com.shop", "search", DAY_1, anyone, [], {"query": MANY_QUERIES}),
            *day_rows("com.shop", "search", DAY_2, {"query=shoes": users(50, 60)}, ["query"]),
            *day_rows("com.shop", "view", DAY_1, anyone, []),
            *day_rows("com.shop", "view", DAY_2, {"screen=home": users(40, 50)}, ["screen"]),
            *day_rows("com.shop", "view", DAY_3, {"screen=home": users(40, 45)}, ["screen"]),
            *day_rows(WEB_APP, "install", DAY_1, {"": users(90, 110)}, []),
            *day_rows(WEB_APP, "install", DAY_2, {"": users(100, 120)}, []),
        ],
    )
    added = {DAY_1: ["search", "view"], DAY_2: ["search", "view"], DAY_3: ["view"]}
    for day, events in added.items():
        pairs = BUILT_PAIRS.get(day, []) + [("com.shop", event) for event in events]
        if day != DAY_3:
            pairs.append((WEB_APP, "install"))
        table.put(*built_day_cells(day, pairs))


@pytest.fixture(scope="module")
def refusal_gateway(preloaded_gateway):
    with preloaded_gateway("builder-refusals-hbase", write_refusal_tables) as gateway:
        yield gateway


@pytest.fixture
def refusal_service(refusal_gateway, serve_process, tmp_path) -> str:
    """The service over the refusal data set (``write_refusal_tables``)."""
    return serve(serve_process, tmp_path, refusal_gateway)


@pytest.fixture
def two_apps_service(refusal_gateway, serve_process, tmp_path) -> str:
    """The service over the refusal data set for a tenant of both com.shop and com.shop.web."""
    return serve(serve_process, tmp_path, refusal_gateway, BOTH_APPS_TENANTS)


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


def add_filter(box, value: str) -> None:
    """A filter on the criterion's first kept attribute, set to ``value``."""
    box.locator(".add-filter").click()
    box.locator(".attribute-name").wait_for()
    box.locator(".attribute-value").select_option(value)


def choose_days(box, first: str, last: str) -> None:
    box.locator(".mode-range").check()
    box.locator(".date-from").select_option(first)
    box.locator(".date-to").select_option(last)


def build_three_criteria(page) -> None:
    first = criterion(page, 0)
    first.locator(".event-type").select_option("install")
    page.click("#add-criterion")
    second = criterion(page, 1)
    second.locator(".event-type").select_option("purchase")
    add_filter(second, "red")
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


# Installs from 2026-10-29, before the first day with data (saved through the API: the page
# offers only days with data).
EARLY_INSTALLS = {
    "app_id": "com.shop", "event_type": "install", "date_from": "2026-10-29",
    "date_to": "2026-11-02",
}  # fmt: skip


def open_first_saved(page, service: str, query: dict) -> None:
    """``query`` saved through the API, then opened in the builder."""
    save_through_api(service, "Saved", query)
    connect(page, service, SHOP_KEY)
    page.locator("#saved-list button.open").click()


def test_an_error_appears_beside_the_criterion_that_caused_it(service, page):
    open_first_saved(page, service, {"intersection": [INSTALLS, EARLY_INSTALLS]})
    second = criterion(page, 1)
    second.locator(".criterion-error").filter(has_text="No data yet").wait_for()
    assert criterion(page, 0).locator(".criterion-error").text_content() == ""
    assert page.text_content("#estimate") == "–"


def causes_of(page, index: int):
    """The plain causes shown beside criterion ``index``."""
    return criterion(page, index).locator(".criterion-error .cause")


def proposal(page):
    return page.locator("#answer-error .proposal")


def refuse_trimmed_search(page) -> None:
    """Installers AND searchers of shoes over the last 3 days: ``query`` was trimmed on the 1st."""
    criterion(page, 0).locator(".event-type").select_option("install")
    page.click("#add-criterion")
    second = criterion(page, 1)
    second.locator(".event-type").select_option("search")
    add_filter(second, "shoes")


def test_a_range_without_data_proposes_the_days_with_data(service, page):
    open_first_saved(page, service, EARLY_INSTALLS)
    expect(causes_of(page, 0)).to_have_text(["No data yet for 2026-10-29 to 2026-10-31."])
    expect(proposal(page)).to_have_text("These days can be counted: 2026-11-01 to 2026-11-02.")


def test_a_trimmed_attribute_is_explained_beside_the_criterion_that_filters_on_it(
    refusal_service, page
):
    connect(page, refusal_service, SHOP_KEY)
    refuse_trimmed_search(page)
    expect(causes_of(page, 1)).to_have_text(
        [
            "query has too many different values to filter on (5,000 different values in 7 days,"
            " more than the 100 that can be filtered on) on 2026-11-01."
        ]
    )
    assert criterion(page, 0).locator(".criterion-error").text_content() == ""
    summary = page.locator("#answer-error .summary")
    expect(summary).to_have_text("Criterion B cannot be counted on all of these days.")
    screenshot(page, "audience-refusal.png")


def test_an_attribute_never_seen_on_some_days_says_so(refusal_service, page):
    connect(page, refusal_service, SHOP_KEY)
    first = criterion(page, 0)
    first.locator(".event-type").select_option("view")
    add_filter(first, "home")
    expect(causes_of(page, 0)).to_have_text(["No event of view carried screen on 2026-11-01."])


def test_use_these_days_sets_the_proposed_dates_and_the_audience_is_counted(refusal_service, page):
    connect(page, refusal_service, SHOP_KEY)
    refuse_trimmed_search(page)
    expect(proposal(page)).to_have_text("These days can be counted: 2026-11-02 to 2026-11-03.")
    page.click("#answer-error button.use-days")
    wait_for_estimate(page, "10")
    for index in (0, 1):
        box = criterion(page, index)
        expect(box.locator(".mode-range")).to_be_checked()
        expect(box.locator(".date-from")).to_have_value("2026-11-02")
        expect(box.locator(".date-to")).to_have_value("2026-11-03")


def test_a_proposal_moving_the_whole_audience_moves_every_criterion_by_as_much(
    refusal_service, page
):
    """Views of home on the 1st (never seen then) and installs on the 1st and 2nd: the nearest
    answerable audience is the same one day later, each criterion keeping its own days."""
    connect(page, refusal_service, SHOP_KEY)
    first = criterion(page, 0)
    first.locator(".event-type").select_option("view")
    add_filter(first, "home")
    choose_days(first, "2026-11-01", "2026-11-01")
    page.click("#add-criterion")
    second = criterion(page, 1)
    second.locator(".event-type").select_option("install")
    choose_days(second, "2026-11-01", "2026-11-02")
    expect(proposal(page)).to_have_text(
        "These days can be counted: 2026-11-02 to 2026-11-03: the whole audience moves 1 day"
        " later, every criterion by as much."
    )
    page.click("#answer-error button.use-days")
    wait_for_estimate(page, "10")
    assert dates_of(first) == ("2026-11-02", "2026-11-02")
    assert dates_of(second) == ("2026-11-02", "2026-11-03")


def dates_of(box) -> tuple[str, str]:
    return box.locator(".date-from").input_value(), box.locator(".date-to").input_value()


SIZE_42 = {
    "app_id": "com.shop", "event_type": "purchase", "last_days": 2, "attributes": {"size": "42"},
}  # fmt: skip


def test_without_a_nearby_range_the_filter_is_named_for_removal(service, page):
    save_through_api(service, "Size 42", SIZE_42)
    connect(page, service, SHOP_KEY)
    page.locator("#saved-list button.open").click()
    expect(proposal(page)).to_have_text(
        "No nearby range of days can be counted. Remove the filter on size to count this audience."
    )
    assert page.locator("#answer-error button.use-days").count() == 0


def test_use_these_days_is_reached_and_pressed_from_the_keyboard(refusal_service, page):
    connect(page, refusal_service, SHOP_KEY)
    first = criterion(page, 0)
    first.locator(".event-type").select_option("view")
    add_filter(first, "home")
    proposal(page).wait_for()
    page.focus("#add-criterion")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Use these days"
    page.keyboard.press("Enter")
    wait_for_estimate(page, "10")


def test_use_these_days_does_nothing_for_criteria_changed_since(refusal_service, page):
    """Between a change and its answer the proposal still shows; it was for other criteria.
    The page's clock is paused so that the change's estimate waits until the click is done."""
    page.clock.install()
    connect(page, refusal_service, SHOP_KEY)
    first = criterion(page, 0)
    first.locator(".event-type").select_option("view")
    add_filter(first, "home")
    proposal(page).wait_for()
    page.clock.pause_at(page.evaluate("Date.now()") + 1000)
    first.locator(".last-days").fill("2")
    page.click("#answer-error button.use-days")
    assert first.locator(".mode-last").is_checked()
    assert first.locator(".last-days").input_value() == "2"


def test_a_refusal_is_cleared_by_the_next_action(refusal_service, page):
    connect(page, refusal_service, SHOP_KEY)
    refuse_trimmed_search(page)
    proposal(page).wait_for()
    criterion(page, 1).locator(".remove-filter").click()
    wait_for_estimate(page, "20")
    expect(page.locator("#answer-error")).to_have_text("")
    expect(criterion(page, 1).locator(".criterion-error")).to_have_text("")


def test_the_apis_own_words_are_behind_a_technical_details_disclosure(service, page):
    open_first_saved(page, service, EARLY_INSTALLS)
    details = page.locator("#answer-error details")
    details.wait_for()
    technical = details.locator("code")
    assert not technical.is_visible()
    details.locator("summary").click()
    assert technical.is_visible()
    assert technical.text_content().startswith("unanswerable_query: no sketches for com.shop/")


def test_committing_a_field_keeps_the_technical_details_the_user_opened(service, page):
    """A number field commits (a change event) when it loses focus, here to the click that
    opens the details: it asks nothing new, so the answer is not drawn again (which would
    close them). The page's clock is run past the estimate's delay so that any redraw is due."""
    page.clock.install()
    open_first_saved(page, service, EARLY_INSTALLS)
    criterion(page, 0).locator(".min-count").fill("1")
    page.locator("#answer-error details summary").click()
    page.clock.run_for(1000)
    expect(page.locator("#answer-error details[open]")).to_have_count(1)


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
        ["Red buyers", "20", "exact"],
        ["Red buyers, not heavy", "17", "exact"],
        ["Red buyers ∩ Red buyers, not heavy", "17", "exact"],
    ]
    screenshot(page, "audience-overlap.png")


def show_overlap_of_every_saved_audience(page, service) -> None:
    """Connect as the shop, tick every saved audience (two here) and ask for their overlap."""
    connect(page, service, SHOP_KEY)
    page.locator("#saved-list tbody tr").nth(1).wait_for()
    for box in page.locator("#saved-list .compare").all():
        box.check()
    page.click("#show-overlap")


def test_an_audience_the_overlap_cannot_count_is_named_with_its_causes(service, page):
    save_through_api(service, "Installers", INSTALLS)
    save_through_api(service, "Size 42", SIZE_42)
    show_overlap_of_every_saved_audience(page, service)
    expect(page.locator("#save-status > span")).to_have_text(
        '"Size 42" cannot be counted. No event of purchase carried size on 2026-11-01 to'
        " 2026-11-02. Open it to change its days or filters."
    )


def test_another_tenant_sees_only_its_own_apps_and_audiences(service, page):
    save_through_api(service, "Shop secret", EXPECTED_TREE)
    connect(page, service, RIVAL_KEY)
    options = criterion(page, 0).locator(".app option").all_text_contents()
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
    cause = second.locator(".criterion-error .cause")
    expect(cause).to_have_text(
        f"No event of purchase carried {MARKUP_ATTRIBUTE} on 2026-11-01 to 2026-11-02."
    )
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


def test_the_page_before_connecting_has_no_accessibility_violations(service, page, axe_script):
    page.add_init_script(path=str(axe_script))
    page.goto(service)
    assert violations(page) == []


def test_the_page_has_no_accessibility_violations(service, page, axe_script):
    save_through_api(service, "Installers", INSTALLS, {"segment": "installers", "ttl_days": 30})
    page.add_init_script(path=str(axe_script))
    connect(page, service, SHOP_KEY)
    build_three_criteria(page)
    wait_for_estimate(page, "17")
    page.wait_for_selector("#chart svg rect.bar")
    assert violations(page) == []


def test_a_refusal_has_no_accessibility_violations(refusal_service, page, axe_script):
    page.add_init_script(path=str(axe_script))
    connect(page, refusal_service, SHOP_KEY)
    refuse_trimmed_search(page)
    causes_of(page, 1).wait_for()
    page.locator("#answer-error details summary").click()
    assert violations(page) == []


def test_an_invalid_criterion_has_no_accessibility_violations(service, page, axe_script):
    page.add_init_script(path=str(axe_script))
    connect(page, service, SHOP_KEY)
    criterion(page, 0).locator(".min-count").fill("0")
    criterion(page, 0).locator(".criterion-error").filter(has_text="at least").wait_for()
    assert violations(page) == []


def violations(page) -> list:
    """axe-core's violations of the page as it is, of any impact, with their elements."""
    results = page.evaluate("() => axe.run(document)")
    found = results["violations"]
    return [(v["id"], v["impact"], [node["target"] for node in v["nodes"]]) for v in found]


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


def test_each_criterion_offers_the_tenants_apps(two_apps_service, page):
    connect(page, two_apps_service, BOTH_APPS_KEY)
    page.click("#add-criterion")
    for index in (0, 1):
        apps = criterion(page, index).locator(".app option").all_text_contents()
        assert apps == ["com.shop", WEB_APP]


def test_criteria_of_two_apps_count_the_users_of_both(two_apps_service, page):
    """Installers of com.shop (u0..u99) and of com.shop.web (u90..u119) over the last 3 days
    with data: u90..u99."""
    connect(page, two_apps_service, BOTH_APPS_KEY)
    page.click("#add-criterion")
    second = criterion(page, 1)
    second.locator(".app").select_option(WEB_APP)
    second.locator(".event-type").select_option("install")
    both = {
        "intersection": [
            {"app_id": "com.shop", "event_type": "install", "last_days": 3},
            {"app_id": WEB_APP, "event_type": "install", "last_days": 3},
        ]
    }
    answer = httpx.post(
        f"{two_apps_service}/v1/audiences/estimate", json=both, headers={"X-API-Key": BOTH_APPS_KEY}
    ).json()
    assert answer["estimate"] == 10
    wait_for_estimate(page, "10")
    expect(criterion(page, 0).locator(".app")).to_have_value("com.shop")


def test_last_n_days_with_data_is_at_most_the_days_with_data(service, page):
    connect(page, service, SHOP_KEY)
    first = criterion(page, 0)
    first.locator(".last-days").fill("7")
    expect(first.locator(".criterion-error")).to_have_text(
        "Criterion A, the last … days with data: at most 2; only 2 days have data so far"
        " (2026-11-01 to 2026-11-02)."
    )
    expect(first.locator(".last-days")).to_have_attribute("aria-invalid", "true")
    assert page.text_content("#estimate") == "–"


def test_at_least_zero_times_is_refused_naming_the_field(service, page):
    connect(page, service, SHOP_KEY)
    wait_for_estimate(page, "100")
    first = criterion(page, 0)
    first.locator(".min-count").fill("0")
    expect(first.locator(".criterion-error")).to_have_text(
        "Criterion A, at least … times: enter a whole number, 1 or more."
    )
    expect(first.locator(".min-count")).to_have_attribute("aria-invalid", "true")
    expect(first).to_have_class("criterion invalid")
    expect(page.locator("#estimate")).to_have_text("–")


def test_a_field_the_api_refuses_is_named_and_its_criterion_highlighted(service, page):
    connect(page, service, SHOP_KEY)
    page.click("#add-criterion")
    second = criterion(page, 1)
    choose_days(second, "2026-11-02", "2026-11-01")
    expect(second.locator(".criterion-error > div > span")).to_have_text(
        "Criterion B, from (first day): the first day is after the last day."
    )
    expect(second).to_have_class("criterion invalid")
    expect(second.locator(".date-from")).to_have_attribute("aria-invalid", "true")
    expect(criterion(page, 0)).to_have_class("criterion")


def test_an_empty_segment_id_is_refused_naming_the_field(service, page):
    save_through_api(service, "Installers", INSTALLS)
    connect(page, service, SHOP_KEY)
    page.locator("#saved-list button.activate").click()
    status = page.locator("#saved-list .activation .message > span")
    expect(status).to_have_text("Segment id: enter 1-64 letters, digits, _ . or -.")
    expect(page.locator("#saved-list input.segment")).to_have_attribute("aria-invalid", "true")


def test_an_overlap_refusal_says_each_cause_once(service, page):
    early_purchases = {**EARLY_INSTALLS, "event_type": "purchase"}
    save_through_api(service, "Installers", INSTALLS)
    save_through_api(service, "Early", {"intersection": [EARLY_INSTALLS, early_purchases]})
    show_overlap_of_every_saved_audience(page, service)
    expect(page.locator("#save-status > span")).to_have_text(
        '"Early" cannot be counted. No data yet for 2026-10-29 to 2026-10-31. Open it to change'
        " its days or filters."
    )


def test_exact_days_are_shown_as_exact_in_the_chart(service, page):
    connect(page, service, SHOP_KEY)
    page.wait_for_selector("#chart svg rect.bar")
    titles = page.locator("#chart rect.bar title").all_text_contents()
    assert titles == ["2026-11-01: 60 users (exact)", "2026-11-02: 60 users (exact)"]
    assert page.locator("#chart line.whisker").count() == 0


def test_the_chart_has_a_labelled_y_axis(service, page):
    connect(page, service, SHOP_KEY)
    page.wait_for_selector("#chart svg rect.bar")
    assert page.text_content("#chart .axis-label") == "users"
    ticks = page.locator("#chart .y-tick").all_text_contents()
    assert ticks[0] == "0" and int(ticks[-1]) >= 60


def test_the_favicon_is_served(service):
    response = httpx.get(f"{service}/favicon.ico")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"


def test_loading_and_connecting_logs_no_console_errors(service, page):
    logged: list[str] = []
    page.on("console", lambda message: message.type == "error" and logged.append(message.text))
    connect(page, service, SHOP_KEY)
    wait_for_estimate(page, "100")
    page.wait_for_selector("#chart svg rect.bar")
    assert logged == []
