"""What the simulated tenants look like: apps, their event mixes and their event attributes.

Attribute kinds follow the trimming rule (keep when at most 100 distinct values and
distinct / appearances < 0.1): ``low`` attributes are meant to be kept, ``noisy`` ones
trimmed, and ``borderline`` ones (about 150 values, frequent) trimmed only by the 100 cap.
"""

from __future__ import annotations

from dataclasses import dataclass

ID_TYPES = ("cookie", "idfa", "gaid")


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


COOKIE, IDFA, GAID = 0, 1, 2


@dataclass(frozen=True)
class AttributeSpec:
    """One schemaless attribute of an (app, event): how its values are drawn and how often."""

    name: str
    generator: str  # a VOCABULARIES name, or a generated (noisy) value kind in ``attributes``
    presence: float
    kind: str  # "low" | "noisy" | "borderline"


@dataclass(frozen=True)
class AppSpec:
    """A tenant app: its id, which device id types use it, and its event mix."""

    app_id: str
    kind: str
    popularity: float  # chance that a person uses the app
    id_types: tuple[int, ...]
    event_mix: dict[str, float]
    attributes: dict[str, tuple[AttributeSpec, ...]]


_CAMPAIGN_THEMES = ("summer_sale", "black_friday", "retargeting", "brand", "launch", "holiday")
_CAMPAIGN_CHANNELS = ("search", "social", "video", "display", "influencer")

VOCABULARIES: dict[str, tuple[str, ...]] = {
    "product_type": _words(
        "shoes shirts pants dresses jackets bags watches hats socks sunglasses jewelry accessories"
    ),
    "color": _words("black white blue red grey green beige pink"),
    "level": tuple(str(level) for level in range(1, 61)),
    "country": _words("US IN BR GB DE FR ID MX JP TR IT ES CA KR PL NL AU AR PH VN TH SA EG NG ZA"),
    "campaign": tuple(
        f"{theme}_{channel}" for theme in _CAMPAIGN_THEMES for channel in _CAMPAIGN_CHANNELS
    ),
    "media_source": (
        *_words("organic googleadwords_int tiktokglobal_int applovin_int unityads_int"),
        *_words("ironsource_int snapchat_int mintegral_int"),
        "Facebook Ads",
        "Apple Search Ads",
    ),
    "category": _words(
        "politics sports business technology science health entertainment travel food world "
        "local opinion culture weather autos"
    ),
    "sku": tuple(f"SKU-{10001 + index}" for index in range(150)),
    "payment_method": _words("card paypal apple_pay google_pay gift_card"),
    "quantity": tuple(str(quantity) for quantity in range(1, 11)),
    "character": _words("knight mage archer rogue cleric druid"),
    "pack": _words("gems_small gems_medium gems_large starter_bundle season_pass"),
    "placement": _words("rewarded_revive rewarded_chest interstitial_level_end banner"),
    "ad_network": _words("admob applovin unity ironsource mintegral vungle pangle chartboost"),
    "share_channel": _words("whatsapp facebook x email copy_link telegram"),
    "plan": _words("monthly yearly student"),
    "destination": (
        "New York",
        *_words("Paris London Barcelona Rome Tokyo Dubai Bangkok Istanbul Lisbon Amsterdam"),
        *_words("Cancun Bali Prague Berlin Miami Athens Vienna Singapore Marrakesh"),
    ),
    "trip_type": _words("round_trip one_way multi_city"),
    "cabin": _words("economy premium_economy business first"),
}

BORDERLINE = ("sku",)  # about 150 values: frequent enough for the ratio, above the 100 cap

# Zipf-like skew per vocabulary: value i is drawn with weight 1 / (i + 1) ** s.
VOCABULARY_SKEW: dict[str, float] = {"sku": 0.5, "level": 0.6, "quantity": 1.6}
DEFAULT_SKEW = 1.0

# Free-text search words, including characters that JSON must escape and non-ASCII text.
SEARCH_WORDS = (
    *_words("red running shoes cheap flights to paris hotel near me best deal summer dress"),
    *_words("men's women's kids size 42 leather jacket waterproof sale 50% off & new york"),
    *_words("weekend last-minute all-inclusive gift for dad wireless earbuds vintage watch"),
    *_words("organic cotton t-shirt yoga mat iphone case <b>bold</b>"),
    *_words("café crème brûlée naïve 東京 ホテル 🔥"),
    '"quoted"',
    "back\\slash",
    "tab\there",
)


def _attr(name: str, presence: float, generator: str | None = None) -> AttributeSpec:
    """Vocabulary attributes are low-cardinality (``sku`` borderline); generated ones noisy."""
    generator = generator or name
    if generator not in VOCABULARIES:
        kind = "noisy"
    elif generator in BORDERLINE:
        kind = "borderline"
    else:
        kind = "low"
    return AttributeSpec(name=name, generator=generator, presence=presence, kind=kind)


def _common(extra: dict[str, tuple[AttributeSpec, ...]]) -> dict[str, tuple[AttributeSpec, ...]]:
    base = {
        "install": (_attr("campaign", 0.85), _attr("media_source", 0.95), _attr("country", 0.9)),
        "session": (_attr("country", 0.85), _attr("session_id", 0.6), _attr("ts_ms", 0.3)),
        "impression": (_attr("campaign", 0.7), _attr("media_source", 0.8), _attr("ts_ms", 0.4)),
        "click": (_attr("campaign", 0.8), _attr("media_source", 0.8), _attr("ts_ms", 0.5)),
    }
    return {**base, **extra}


APPS: tuple[AppSpec, ...] = (
    AppSpec(
        app_id="com.shopfast.android",
        kind="ecommerce",
        popularity=0.55,
        id_types=(COOKIE, IDFA, GAID),
        event_mix={
            "impression": 30,
            "session": 18,
            "click": 10,
            "view_item": 20,
            "search": 8,
            "add_to_cart": 6,
            "purchase": 1.8,
            "install": 1.0,
        },
        attributes=_common(
            {
                "view_item": (
                    _attr("product_type", 0.92),
                    _attr("color", 0.75),
                    _attr("sku", 0.8),
                    _attr("price", 0.6),
                ),
                "search": (_attr("search_query", 0.95), _attr("product_type", 0.4)),
                "add_to_cart": (
                    _attr("product_type", 0.9),
                    _attr("color", 0.7),
                    _attr("sku", 0.8),
                    _attr("quantity", 0.6),
                    _attr("price", 0.8),
                ),
                "purchase": (
                    _attr("product_type", 0.9),
                    _attr("color", 0.6),
                    _attr("payment_method", 0.7),
                    _attr("country", 0.8),
                    _attr("order_id", 0.98),
                    _attr("price", 0.97),
                    _attr("ts_ms", 0.5),
                ),
            }
        ),
    ),
    AppSpec(
        app_id="com.pixelquest.dragons",
        kind="game",
        popularity=0.35,
        id_types=(IDFA, GAID),
        event_mix={
            "session": 25,
            "impression": 20,
            "click": 4,
            "level_start": 20,
            "level_complete": 14,
            "ad_watched": 10,
            "iap_purchase": 1.5,
            "install": 1.5,
        },
        attributes=_common(
            {
                "level_start": (_attr("level", 0.98), _attr("character", 0.7)),
                "level_complete": (
                    _attr("level", 0.98),
                    _attr("character", 0.7),
                    _attr("score", 0.8),
                ),
                "ad_watched": (
                    _attr("ad_network", 0.9),
                    _attr("placement", 0.8),
                    _attr("ts_ms", 0.5),
                ),
                "iap_purchase": (
                    _attr("pack", 0.95),
                    _attr("country", 0.7),
                    _attr("price", 0.95),
                    _attr("order_id", 0.95),
                ),
            }
        ),
    ),
    AppSpec(
        app_id="com.dailyherald.reader",
        kind="news",
        popularity=0.4,
        id_types=(COOKIE, IDFA, GAID),
        event_mix={
            "impression": 32,
            "session": 20,
            "click": 10,
            "article_view": 30,
            "share": 3,
            "subscribe": 1.0,
            "install": 1.3,
        },
        attributes=_common(
            {
                "article_view": (
                    _attr("category", 0.95),
                    _attr("article_id", 0.9, "content_id"),
                    _attr("ts_ms", 0.3),
                ),
                "share": (
                    _attr("category", 0.9),
                    _attr("share_channel", 0.9),
                    _attr("article_id", 0.9, "content_id"),
                ),
                "subscribe": (_attr("plan", 0.95), _attr("country", 0.8), _attr("price", 0.9)),
            }
        ),
    ),
    AppSpec(
        app_id="com.travelnow.web",
        kind="travel",
        popularity=0.3,
        id_types=(COOKIE, IDFA, GAID),
        event_mix={
            "impression": 30,
            "session": 22,
            "click": 10,
            "search": 18,
            "view_offer": 16,
            "book": 2.0,
            "install": 1.5,
        },
        attributes=_common(
            {
                "search": (
                    _attr("destination", 0.9),
                    _attr("trip_type", 0.8),
                    _attr("search_query", 0.5),
                ),
                "view_offer": (
                    _attr("destination", 0.9),
                    _attr("cabin", 0.6),
                    _attr("offer_id", 0.9, "content_id"),
                    _attr("price", 0.8),
                ),
                "book": (
                    _attr("destination", 0.9),
                    _attr("cabin", 0.6),
                    _attr("country", 0.8),
                    _attr("order_id", 0.97),
                    _attr("price", 0.97),
                ),
            }
        ),
    ),
)

# Apps compatible with every id type: where a device lands when none of its person's apps fit.
FALLBACK_APP = 2

# User agents by family. A person's devices usually stay in one ecosystem (household realism).
ANDROID_APP_UAS = tuple(
    f"Dalvik/2.1.0 (Linux; U; Android {version}; {model} Build/{build})"
    for version in (12, 13, 14, 15)
    for model, build in (
        ("SM-S918B", "UP1A.231005.007"),
        ("Pixel 8", "AP2A.240805.005"),
        ("M2101K6G", "TKQ1.221114.001"),
        ("CPH2451", "TP1A.220905.001"),
        ("moto g84 5G", "U1TDS34.94-12-7"),
    )
)
IOS_APP_UAS = tuple(
    f"Mozilla/5.0 ({device}; CPU {os_name} {version} like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Mobile/15E148"
    for device, os_name in (("iPhone", "iPhone OS"), ("iPad", "OS"))
    for version in ("16_7_10", "17_5_1", "17_6", "18_1", "18_3_2")
)
_CHROME = "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0"
ANDROID_WEB_UAS = tuple(
    f"Mozilla/5.0 ({platform}) " + _CHROME.format(v=version) + suffix
    for version in (128, 129, 130, 131)
    for platform, suffix in (
        ("Linux; Android 10; K", " Mobile Safari/537.36"),
        ("Windows NT 10.0; Win64; x64", " Safari/537.36"),
    )
)
APPLE_WEB_UAS = tuple(
    f"Mozilla/5.0 ({platform}) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/{version}"
    f"{suffix} Safari/605.1.15"
    for version in ("17.6", "18.0", "18.1", "18.2")
    for platform, suffix in (
        ("Macintosh; Intel Mac OS X 10_15_7", ""),
        ("iPhone; CPU iPhone OS 18_1 like Mac OS X", " Mobile/15E148"),
    )
)
OTHER_WEB_UAS = tuple(
    [
        f"Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:{v}.0) Gecko/20100101 Firefox/{v}.0"
        for v in (131, 132, 133)
    ]
    + [
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) "
        + _CHROME.format(v=v)
        + f" Safari/537.36 Edg/{v}.0.0.0"
        for v in (129, 130, 131)
    ]
    + [
        "Mozilla/5.0 (X11; Linux x86_64) " + _CHROME.format(v=v) + " Safari/537.36"
        for v in (130, 131)
    ]
)

# Public-looking first octets for household and carrier address space.
HOUSEHOLD_FIRST_OCTETS = (
    24,
    31,
    37,
    46,
    62,
    66,
    73,
    77,
    81,
    85,
    91,
    98,
    104,
    108,
    174,
    176,
    185,
    188,
    203,
    212,
)
CARRIER_FIRST_OCTETS = (80, 94, 109, 188, 213, 223)

# Super-node noise: shared/test logins and placeholder values the pipeline must drop.
SHARED_LOGINS = ("test", "guest", "demo_account")
BLOCKLIST_MEMBER_IDS = ("0", "unknown", "null", "")
