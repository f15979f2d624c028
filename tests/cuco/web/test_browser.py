"""The web leaderboard end to end in a real headless Chromium (Debian's ``chromium``, driven by
playwright-python against the system browser; no browser download).

The real app is served by uvicorn on a free 127.0.0.1 port over a SQLite run database written
through the real ``Store`` (browser_run.py). The test clicks through the pages a user would,
saves a screenshot of each (``$CUCO_SCREENSHOTS``, default ``<tmp>/screens``), checks that no
request leaves 127.0.0.1 and that no markup payload from a candidate or an LLM ever runs.
Run with ``pytest -m browser tests/cuco/web``; skipped when chromium or playwright is missing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from tests.cuco.web import browser_run as br
from tests.cuco.web.conftest import XSS as XSS_H1

pytestmark = pytest.mark.browser

POLL_S = 0.5  # the live page's polling period here (the app's default is 2 s)
LIVE_WAIT_MS = 10_000
XSS_SIGNAL = "XSS-EXECUTED"
CSP_SIGNAL = "CSP-VIOLATION"
# Runs before any page script: a payload that sets window.__xss reports itself on the console, and
# so does anything the Content Security Policy blocked (markup that reached the page as markup and
# was stopped only by the CSP, or a page of ours that breaks its own policy).
XSS_DETECTOR = """Object.defineProperty(window, '__xss', {configurable: false,
  get() { return undefined; }, set(v) { console.error('%s ' + v); }});
document.addEventListener('securitypolicyviolation',
  e => console.error('%s ' + e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sample || '')));
""" % (XSS_SIGNAL, CSP_SIGNAL)


def _chromium_or_skip() -> str:
    if importlib.util.find_spec("playwright") is None:
        pytest.skip("playwright-python is not installed: pip install 'cuco-kernels[dev]' (no browser download needed)")
    named = os.environ.get("CUCO_CHROMIUM")
    if named and not Path(named).is_file():
        pytest.skip(f"CUCO_CHROMIUM names {named}, which is not a file: point it at a Chromium binary")
    exe = named or shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("Debian's chromium is not installed "
                    "(apt install chromium, or set CUCO_CHROMIUM to a Chromium binary)")
    return exe


class LiveServer:
    """uvicorn serving ``app`` from a thread, on a socket bound before the thread starts (no port race)."""

    def __init__(self, app) -> None:
        import uvicorn
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> "LiveServer":
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start serving the web app within 15 s")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()


@pytest.fixture(scope="module")
def chromium_exe() -> str:
    return _chromium_or_skip()


@pytest.fixture(scope="module")
def site(chromium_exe, tmp_path_factory, example_spec):
    """The served database: ``url``, the writable ``store`` the live test writes through, the
    ``runs`` of browser_run.py, and conftest's ``hostile`` run (name, key -> id)."""
    from candidates_db import Store
    from cuco.web.app import create_app
    from tests.cuco.web.conftest import make_hostile_run

    db = tmp_path_factory.mktemp("web-e2e") / "cuco.db"
    with Store.open(db) as store:  # stays open: the live test writes like a running search
        runs = br.build_database(store, example_spec)
        hostile = make_hostile_run(db)
        with LiveServer(create_app(str(db), poll_s=POLL_S)) as server:
            yield SimpleNamespace(url=server.url, store=store, runs=runs, hostile=hostile)


@pytest.fixture(scope="module")
def browser(chromium_exe):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_exe, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def screens(tmp_path_factory) -> Path:
    path = Path(os.environ.get("CUCO_SCREENSHOTS") or tmp_path_factory.mktemp("screens"))
    path.mkdir(parents=True, exist_ok=True)
    return path


class Watched:
    """A page whose requests and console are recorded: what left 127.0.0.1, what payload ran."""

    def __init__(self, page, screens: Path) -> None:
        self.page, self.screens = page, screens
        self.requests: list[str] = []
        self.outside: list[str] = []
        self.console: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("console", lambda m: self.console.append(m.text))
        page.on("dialog", lambda d: (self.console.append(f"{XSS_SIGNAL} dialog {d.message}"), d.dismiss()))
        page.route("**/*", self._route)

    def _route(self, route) -> None:
        url = route.request.url
        if urlsplit(url).scheme in ("data", "blob", "about") or urlsplit(url).hostname == "127.0.0.1":
            route.continue_()
        else:  # never let it out; the assertion below names it
            self.outside.append(url)
            route.abort()

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.screens / f"{name}.png"), full_page=True)

    def assert_clean(self) -> None:
        assert self.requests, "the page made no requests at all"
        assert not self.outside, f"requests left 127.0.0.1: {self.outside}"
        hosts = {urlsplit(u).hostname for u in self.requests if urlsplit(u).scheme in ("http", "https", "ws", "wss")}
        assert hosts == {"127.0.0.1"}, hosts
        ran = [m for m in self.console if XSS_SIGNAL in m]
        assert not ran, f"markup from candidates or LLMs ran as code: {ran}"
        blocked = [m for m in self.console if CSP_SIGNAL in m]
        assert not blocked, f"the Content Security Policy blocked something on our pages: {blocked}"


@pytest.fixture
def watched(browser, screens):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_init_script(XSS_DETECTOR)
    w = Watched(context.new_page(), screens)
    w.page.set_default_timeout(15_000)
    yield w
    context.close()


# --- helpers that read the DOM contract ------------------------------------------------------

def _page_kind(page) -> str:
    return page.locator('meta[name="cuco-page"]').get_attribute("content")


def _rows(page) -> list[dict]:
    return page.locator("tr.candidate-row").evaluate_all(
        "rows => rows.map(r => ({id: r.dataset.id, status: r.dataset.status, speedup: r.dataset.speedup,"
        " generation: r.dataset.generation}))")


def _act_and_wait_rows(page, *actions) -> list[dict]:
    """Do ``actions``, then wait until every leaderboard row is new (a navigation or an htmx swap)."""
    page.locator("tr.candidate-row").evaluate_all("rows => rows.forEach(r => r.dataset.e2eStale = '1')")
    for act in actions:
        act()
    page.wait_for_function("() => document.querySelectorAll('tr.candidate-row').length > 0 &&"
                           " !document.querySelector('tr.candidate-row[data-e2e-stale]')")
    page.wait_for_load_state()
    return _rows(page)


def _direction(values: list[float]) -> str:
    if values == sorted(values, reverse=True):
        return "desc"
    assert values == sorted(values), f"rows are in neither speedup order: {values}"
    return "asc"


def _open_leaderboard(w: Watched, site) -> None:
    w.page.goto(site.url + "/")
    assert _page_kind(w.page) == "runs"
    assert w.page.locator("table#runs tr.run-row").count() == len(site.runs) + 1
    w.shot("01-runs")
    w.page.locator("tr.run-row a.run-link", has_text=br.MAIN_RUN).click()
    w.page.wait_for_load_state()
    assert _page_kind(w.page) == "leaderboard"
    assert {r["id"] for r in _rows(w.page)} == br.matching(site.runs[br.MAIN_RUN])


def _total(page) -> int:
    text = page.locator("#total").inner_text()
    digits = "".join(ch if ch.isdigit() else " " for ch in text).split()
    assert digits, f"#total holds no number: {text!r}"
    return int(digits[0])


def _filter(page, **choices: str) -> list[dict]:
    form = page.locator("form#filters")
    actions = [lambda k=k, v=v: form.locator(f"select[name={k}]").select_option(v) for k, v in choices.items()]
    return _act_and_wait_rows(page, *actions, lambda: form.locator("button[type=submit]").click())


# --- the tests -------------------------------------------------------------------------------

def test_leaderboard_filters_and_sorts_in_the_browser(watched, site):
    planned, page = site.runs[br.MAIN_RUN], watched.page
    _open_leaderboard(watched, site)
    assert "every" not in (page.locator("tbody#rows").get_attribute("hx-trigger") or ""), "a finished run polls"

    rows = _filter(page, status="ok")
    assert {r["id"] for r in rows} == br.matching(planned, status="ok")
    assert {r["status"] for r in rows} == {"ok"} and _total(page) == len(rows)
    rows = _filter(page, backend="gin")
    expected = br.matching(planned, status="ok", backend="gin")
    assert {r["id"] for r in rows} == expected and _total(page) == len(expected) > 2
    watched.shot("02-leaderboard-filtered")

    directions = []
    for _ in range(2):
        rows = _act_and_wait_rows(page, lambda: page.locator("th a.sort[data-sort=speedup]").click())
        assert {r["id"] for r in rows} == expected, "sorting dropped the filters"
        assert all(r["speedup"] for r in rows), rows
        directions.append(_direction([float(r["speedup"]) for r in rows]))
        watched.shot(f"03-leaderboard-sorted-{directions[-1]}")
    assert sorted(directions) == ["asc", "desc"], f"two clicks on the speedup header gave {directions}"
    watched.assert_clean()


def test_candidate_page_shows_source_diff_and_ancestors(watched, site):
    page, target = watched.page, "e2e00017"  # generation 2: parent e2e00009, grandparent e2e00001
    _open_leaderboard(watched, site)
    page.locator(f'tr.candidate-row[data-id="{target}"] a.candidate-link').click()
    page.wait_for_load_state()
    assert _page_kind(page) == "candidate"
    source = page.locator("pre#source")
    assert "// e2e00017: unroll" in source.inner_text() and br.XSS["source"] in source.inner_text()
    assert source.locator("span").count() > 5, "the source is not syntax-highlighted"
    added = [ln for ln in page.locator("#diff").inner_text().splitlines() if "e2e00017: unroll" in ln]
    assert added and added[0].lstrip().startswith("+"), f"the diff does not add this candidate's line: {added}"
    hrefs = page.locator("#ancestors a.candidate-link").evaluate_all("links => links.map(a => a.href)")
    assert any("e2e00009" in h for h in hrefs) and any("e2e00001" in h for h in hrefs), hrefs
    for section in ("#declared-point", "#observed-point", "#stages", "#checks", "#features", "#llm", "#children"):
        assert page.locator(section).count() == 1, f"the candidate page has no {section}"
    llm = page.locator("#llm").text_content()
    assert br.XSS["prompt"] in llm and br.XSS["reply"] in llm, llm
    watched.shot("04-candidate")

    page.locator("a#compare-link").click()
    page.wait_for_load_state()
    assert _page_kind(page) == "compare" and page.locator("#compare .side").count() == 2
    assert page.locator("#diff").count() == 1
    watched.shot("05-compare")
    page.go_back()
    page.locator("#ancestors a.candidate-link", has_text="e2e00009").first.click()
    page.wait_for_load_state()
    kids = page.locator("#children a.candidate-link").evaluate_all("links => links.map(a => a.href)")
    assert any(target in h for h in kids), f"the parent's page does not list {target} among its children: {kids}"
    watched.assert_clean()


def test_lineage_and_plots_pages_load(watched, site):
    from cuco.plots import PLOTS
    page, planned = watched.page, site.runs[br.MAIN_RUN]
    _open_leaderboard(watched, site)
    page.locator("a#lineage-link").click()
    page.wait_for_load_state()
    assert _page_kind(page) == "lineage"
    nodes = page.locator("svg#lineage g.node").evaluate_all(
        "ns => ns.map(n => { const a = n.closest('a') || n.querySelector('a');"
        " return {id: n.dataset.id, status: n.dataset.status,"
        " href: a ? (a.getAttribute('href') || a.getAttribute('xlink:href') || '') : ''}; })")
    assert {n["id"] for n in nodes} == {p.id for p in planned}
    assert {n["status"] for n in nodes} == {p.status.value for p in planned}, "failures are not drawn"
    assert all(n["id"] in n["href"] for n in nodes), f"lineage nodes without a link to their candidate: {nodes}"
    watched.shot("06-lineage")

    page.go_back()
    page.locator("a#plots-link").click()
    page.wait_for_load_state()
    assert _page_kind(page) == "plots"
    assert page.locator("img.plot").count() == len(PLOTS)
    page.wait_for_function("() => [...document.querySelectorAll('img.plot')].every(i => i.complete)")
    widths = page.locator("img.plot").evaluate_all("imgs => imgs.map(i => [i.getAttribute('src'), i.naturalWidth])")
    assert all(w > 0 for _, w in widths), f"plots that did not load: {widths}"
    watched.shot("07-plots")
    watched.assert_clean()


def test_hostile_names_and_texts_are_shown_as_text(watched, site):
    page, (name, ids) = watched.page, site.hostile
    page.goto(site.url + "/")
    assert br.HOSTILE_RUN in page.locator("table#runs").inner_text() and name in page.locator("table#runs").inner_text()
    page.locator("tr.run-row a.run-link", has_text="onerror=\"window").click()
    page.wait_for_load_state()
    assert {r["id"] for r in _rows(page)} == br.matching(site.runs[br.HOSTILE_RUN])
    assert br.HOSTILE_RUN in page.inner_text("body"), "the run's name is not shown as text on its leaderboard"
    page.goto(site.url + "/")
    page.locator("tr.run-row a.run-link", has_text="evil/").click()
    page.wait_for_load_state()
    assert _page_kind(page) == "leaderboard" and {r["id"] for r in _rows(page)} == set(ids.values())
    watched.shot("10-hostile-leaderboard")
    page.locator(f'tr.candidate-row[data-id="{ids["best"]}"] a.candidate-link').click()
    page.wait_for_load_state()
    assert _page_kind(page) == "candidate"
    for section in ("pre#source", "#llm", "#stages"):
        shown = page.locator(section).text_content()
        assert all(x in shown for x in XSS_H1), f"{section} does not show the payloads as text"
    watched.shot("11-hostile-candidate")
    watched.assert_clean()


def test_reasons_logs_and_notes_are_shown_as_text(watched, site):
    page = watched.page
    _open_leaderboard(watched, site)
    body = page.locator("body").text_content()
    assert br.XSS["note"] in body and br.XSS["reason"] in body, "the run note or a reason is not shown as text"
    page.locator('tr.candidate-row[data-id="e2e00011"] a.candidate-link').click()
    page.wait_for_load_state()
    assert br.XSS["log"] in page.locator("#stages").text_content(), "the log is not shown as text"
    watched.assert_clean()


def test_live_run_gains_rows_without_reload(watched, site):
    store, runs, page = site.store, site.runs, watched.page
    page.goto(site.url + "/")
    page.locator("tr.run-row a.run-link", has_text=br.LIVE_RUN).click()
    page.wait_for_load_state()
    assert {r["id"] for r in _rows(page)} == br.matching(runs[br.LIVE_RUN])
    assert "every" in (page.locator("tbody#rows").get_attribute("hx-trigger") or ""), "a running run does not poll"
    page.evaluate("() => { window.__e2eSameDocument = true; }")
    watched.shot("08-live-before")

    new = br.plan("live", 3, first=len(runs[br.LIVE_RUN]))
    br.add_planned(store, br.LIVE_RUN, new)
    want = sorted(p.id for p in runs[br.LIVE_RUN] + new)
    page.wait_for_function(
        "want => JSON.stringify([...document.querySelectorAll('tr.candidate-row')].map(r => r.dataset.id).sort())"
        " === JSON.stringify(want)", arg=want, timeout=LIVE_WAIT_MS)
    assert page.evaluate("() => window.__e2eSameDocument === true"), "the page reloaded instead of updating"
    page.wait_for_function("n => (document.querySelector('#total').textContent.match(/\\d+/) || [])[0] == n",
                           arg=len(want), timeout=LIVE_WAIT_MS)
    # the header's candidate count follows without a reload too
    page.wait_for_function("n => document.querySelector('#run-candidates').textContent.trim() == String(n)",
                           arg=len(want), timeout=LIVE_WAIT_MS)
    watched.shot("09-live-after")
    watched.assert_clean()
