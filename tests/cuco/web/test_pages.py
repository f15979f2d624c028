"""The web leaderboard in process (FastAPI's TestClient) over real SQLite and PostgreSQL stores:
every page and its JSON twin, filters, sort and pages, live updates, 404s, escaping of hostile
text, and that the server never writes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from candidates_db import Store
from cuco.web.app import create_app, serve_plan
from cuco.web.lineage import FAILED_COLOR, SCORE_COLORS, UNEVALUATED_COLOR
from design_space.candidate import Candidate, Origin, OriginKind
from design_space.errors import ConfigError, StoreError
from design_space.evaluation import RankCheck, Status, Tier
from design_space.run import RunStatus
from tests.cuco.web.conftest import (
    LAYOUT, PROMPT, REPLY, RUN, XSS, XSS_TEXT, add_candidates, failed_evaluation, make_hostile_run, make_web_run,
)
from tests.cuco.web.html_dom import Node, Page


def page(client: TestClient, url: str, status: int = 200) -> Node:
    r = client.get(url)
    assert r.status_code == status, r.text[:500]
    assert r.headers["content-type"].startswith("text/html")
    return Page(r.text).root


def api(client: TestClient, url: str, status: int = 200) -> Any:
    r = client.get("/api" + url)
    assert r.status_code == status, r.text[:500]
    return r.json()


def kind(root: Node) -> str:
    return root.one("meta", name="cuco-page").attrs["content"]


def row_ids(root: Node) -> list[str]:
    return [tr.attrs["data-id"] for tr in root.one("tbody", id="rows").all("tr", cls="candidate-row")]


@pytest.fixture
def site(db_url: str):
    """A client over the run of tests/cuco/web/conftest.py (complete) in SQLite or PostgreSQL."""
    ids = make_web_run(db_url)
    app = create_app(db_url)
    with TestClient(app) as client:
        yield client, ids, db_url


# --- runs list --------------------------------------------------------------------------------

def test_runs_list_shows_best_speedup_sol_spend_and_links(site):
    client, ids, db = site
    make_web_run(db, "second run", status=RunStatus.RUNNING)
    root = page(client, "/")
    assert kind(root) == "runs"
    rows = {tr.attrs["data-run"]: tr for tr in root.one("table", id="runs").all("tr", cls="run-row")}
    assert set(rows) == {RUN, "second run"}
    row = rows[RUN]
    assert row.one("a", cls="run-link").attrs["href"] == f"/runs/{RUN}"
    assert rows["second run"].one("a", cls="run-link").attrs["href"] == "/runs/second%20run"
    assert row.one("td", cls="best-speedup").text() == "2.4x" and row.one("td", cls="best-sol").text() == "0.4"
    assert "$0.5125" in row.text() and "H100" in row.text() and "1h 00m" in row.text()
    data = api(client, "/runs")
    best = {r["name"]: r for r in data["runs"]}[RUN]
    assert best["best"]["id"] == ids["best"] and best["best"]["speedup"] == 2.4 and best["best"]["sol"] == 0.4
    assert best["candidates"] == len(LAYOUT) and best["status_counts"]["unevaluated"] == 1
    assert best["llm"]["cost_usd"] == pytest.approx(0.5125) and best["wall_s"] == 3600


# --- leaderboard ------------------------------------------------------------------------------

def test_leaderboard_page_and_its_json_twin_show_the_same_rows(site):
    client, ids, _ = site
    root = page(client, f"/runs/{RUN}")
    data = api(client, f"/runs/{RUN}")
    assert kind(root) == "leaderboard"
    assert row_ids(root) == [r["id"] for r in data["rows"]]
    assert row_ids(root)[0] == ids["best"] and set(row_ids(root)) == set(ids.values())
    assert root.one(id="total").text() == str(data["total"]) == str(len(LAYOUT))
    assert {k: data[k] for k in ("page", "per_page", "filters")} == {"page": 1, "per_page": 50, "filters": {}}
    assert data["facets"]["status"] == ["build_failed", "ok", "rejected", "unevaluated", "wrong_result"]
    assert data["run"]["name"] == RUN and data["run"]["best"]["id"] == ids["best"]
    best = root.one("tr", data_id=ids["best"])
    assert best.attrs["data-status"] == "ok" and best.attrs["data-speedup"] == "2.4"
    assert best.attrs["data-generation"] == "1"
    assert best.one("a", cls="candidate-link").attrs["href"] == f"/candidates/{ids['best']}"
    assert root.one("tr", data_id=ids["unevaluated"]).attrs["data-speedup"] == ""
    assert root.one("a", id="lineage-link").attrs["href"] == f"/runs/{RUN}/lineage"
    assert root.one("a", id="plots-link").attrs["href"] == f"/runs/{RUN}/plots"
    assert {a.attrs["data-sort"] for a in root.all("a", cls="sort")} == {
        "speedup", "sol", "generation", "status", "created", "island"}
    form = root.one("form", id="filters")
    for name in ("status", "backend", "placement", "origin", "timing"):
        form.one("select", name=name)
    form.one("input", name="generation"), form.one("input", name="island"), form.one("button", type="submit")


@pytest.mark.parametrize("query, expected", [
    ("status=ok", {"seed", "best", "second", "measured"}),
    ("status=unevaluated", {"unevaluated"}),
    ("status=wrong_result", {"wrong_result", "reevaluated"}),  # the latest evaluation counts
    ("backend=gin", {"build_failed", "measured"}),
    ("placement=fused_persistent", {"best", "measured", "unevaluated"}),
    ("backend=lsa&placement=sequential", {"seed", "wrong_result", "rejected", "reevaluated"}),
    ("island=1&generation=2", {"measured", "reevaluated"}),
    ("origin=llm", {"best"}),
    ("timing=measured", {"measured"}),
    ("timing=simulated&island=0", {"seed", "best", "second"}),
])
def test_filters_choose_the_rows(site, query, expected):
    client, ids, _ = site
    want = {ids[k] for k in expected}
    root = page(client, f"/runs/{RUN}?{query}")
    assert set(row_ids(root)) == want and root.one(id="total").text() == str(len(want))
    data = api(client, f"/runs/{RUN}?{query}")
    assert {r["id"] for r in data["rows"]} == want and data["total"] == len(want)
    for pair in query.split("&"):  # the form shows what is filtered
        name, value = pair.split("=")
        assert str(data["filters"][name]) == value


def test_sort_links_sort_and_a_second_click_reverses(site):
    client, ids, _ = site
    link = page(client, f"/runs/{RUN}").one("a", cls="sort", data_sort="generation").attrs["href"]
    root = page(client, link)
    gens = [int(tr.attrs["data-generation"]) for tr in root.all("tr", cls="candidate-row")]
    assert gens == sorted(gens) and gens[0] == 0 and gens[-1] == 3
    again = root.one("a", cls="sort", data_sort="generation").attrs["href"]
    gens = [int(tr.attrs["data-generation"]) for tr in page(client, again).all("tr", cls="candidate-row")]
    assert gens == sorted(gens, reverse=True)
    speed = api(client, f"/runs/{RUN}?sort=speedup&order=asc")["rows"]
    scored = [r["speedup"] for r in speed if r["speedup"] is not None]
    assert scored == [1.2, 1.5, 1.8, 2.4] and speed[0]["id"] == ids["seed"]


def test_pages_split_the_rows_and_link_to_each_other(site):
    client, ids, _ = site
    first = page(client, f"/runs/{RUN}?per_page=4")
    links = {a.text(): a.attrs["href"] for a in first.all("a", cls="page-link")}
    assert {"2", "3", "next ›"} <= set(links)
    seen = row_ids(first)
    for n in ("2", "3"):
        seen += row_ids(page(client, links[n]))
    assert len(seen) == len(LAYOUT) and set(seen) == set(ids.values())
    last = api(client, f"/runs/{RUN}?per_page=4&page=3")
    assert len(last["rows"]) == 1 and last["total"] == len(LAYOUT) and last["page"] == 3


@pytest.mark.parametrize("query, word", [("generation=x", "generation"), ("per_page=9999", "per_page"),
                                         ("sort=colour", "sort"), ("timing=guessed", "timing"), ("page=0", "page")])
def test_a_bad_query_answers_400_saying_what_to_change(site, query, word):
    client, _, _ = site
    root = page(client, f"/runs/{RUN}?{query}", 400)
    assert word in root.one(id="error").text()
    err = api(client, f"/runs/{RUN}?{query}", 400)
    assert word in err["error"] and err["fix"]


def test_unknown_run_or_candidate_answers_404_with_a_way_on(site):
    client, ids, _ = site
    for url, words in (("/runs/nope", "no run named 'nope'"), ("/runs/nope/lineage", "no run named 'nope"),
                       ("/candidates/ffffffffffff", "no candidate"), (f"/compare?a={ids['seed']}&b=ffffffff", "no candidate")):
        root = page(client, url, 404)
        assert kind(root) == "error" and words in root.one(id="error").text()
        assert root.one("p", cls="fix").text()
    err = api(client, "/runs/nope", 404)
    assert "no run named 'nope'" in err["error"] and RUN in err["fix"]
    assert "no candidate" in api(client, "/candidates/ffffffffffff", 404)["error"]
    assert "two candidates" in api(client, "/compare?a=x", 400)["error"]


# --- one candidate, two candidates, lineage, plots ----------------------------------------------

def test_candidate_page_shows_source_diff_points_stages_checks_features_llm_and_family(site):
    client, ids, _ = site
    root = page(client, f"/candidates/{ids['best']}")
    data = api(client, f"/candidates/{ids['best']}")
    assert kind(root) == "candidate"
    source = root.one("pre", id="source")
    assert source.text() == data["candidate"]["source"]  # highlighted, and the text exactly the source
    assert source.all("span") and "launch_best" in source.text()
    diff = root.one(id="diff")
    assert "+// candidate best " in diff.text() and "-// candidate seed " in diff.text()
    assert diff.one("a", cls="candidate-link").attrs["href"] == f"/candidates/{ids['seed']}"
    assert "lsa/fused_persistent/per_tile_signal/warp/64K/8" in root.one(id="declared-point").text()
    assert "lsa/fused_persistent/per_tile_signal/warp/64K/8" in root.one(id="observed-point").text()
    stages = {tr.attrs["data-stage"]: tr for tr in root.one(id="stages").all("tr", cls="stage")}
    assert list(stages) == ["guard", "build", "emulate", "simulate", "score"]  # score: reached, not timed
    assert "2.5" in stages["build"].text() and "last stage reached" in stages["score"].text()
    assert "emulate: 12 ranks passed" in root.one(id="stages").one("details").text()
    assert len(root.one(id="checks").all("tbody")[0].all("tr")) == len(data["evaluation"]["checks"]) == 12
    features = root.one(id="features").text()
    assert "96" in features and "75% of the FLOPs" in features and "fused" in features
    llm = root.one(id="llm")
    assert llm.one("pre", cls="prompt").text() == PROMPT and llm.one("pre", cls="reply").text() == REPLY
    assert data["llm_calls"][0]["prompt"] == PROMPT and data["llm_calls"][0]["response"] == REPLY
    assert [a.attrs["href"] for a in root.one(id="ancestors").all("a", cls="candidate-link")] == [
        f"/candidates/{ids['seed']}"]
    children = {a.text() for a in root.one(id="children").all("a", cls="candidate-link")}
    assert children == {ids["second"], ids["rejected"], ids["unevaluated"]}
    assert root.one("a", id="compare-link").attrs["href"] == f"/compare?a={ids['seed']}&b={ids['best']}"
    assert data["evaluation"]["speedup"] == 2.4 and data["evaluation"]["status"] == "ok"


def test_a_seed_has_no_diff_and_an_unevaluated_candidate_says_so(site):
    client, ids, _ = site
    seed = page(client, f"/candidates/{ids['seed']}")
    assert "no parent" in seed.one(id="diff").text() and not seed.all("a", id="compare-link")
    assert seed.one(id="ancestors").text().strip().endswith("none")
    pending = page(client, f"/candidates/{ids['unevaluated']}")
    assert "not evaluated yet" in pending.one(id="stages").text()
    assert api(client, f"/candidates/{ids['unevaluated']}")["evaluation"] is None
    failed = api(client, f"/candidates/{ids['build_failed']}")["evaluation"]
    assert failed["status"] == "build_failed" and failed["stages"][-1] == {"stage": "build", "seconds": 0.5, "last": True}


def test_compare_shows_two_sides_and_their_diff(site):
    client, ids, _ = site
    root = page(client, f"/compare?a={ids['seed']}&b={ids['second']}")
    assert kind(root) == "compare"
    sides = root.one(id="compare").all("div", cls="side")
    assert [s.attrs["data-id"] for s in sides] == [ids["seed"], ids["second"]]
    assert "1.2x" in sides[0].text() and "1.8x" in sides[1].text()
    assert "+// candidate second" in root.one(id="diff").text()
    data = api(client, f"/compare?a={ids['seed']}&b={ids['second']}")
    assert data["a"]["candidate"]["id"] == ids["seed"] and data["b"]["evaluation"]["speedup"] == 1.8
    assert any(line["kind"] == "add" for line in data["diff"]["lines"])


def test_lineage_is_an_svg_coloured_by_score_with_failures_visible(site):
    client, ids, _ = site
    root = page(client, f"/runs/{RUN}/lineage")
    assert kind(root) == "lineage"
    svg = root.one("svg", id="lineage")
    nodes = {g.attrs["data-id"]: g for g in svg.all("g", cls="node")}
    assert set(nodes) == set(ids.values())
    fill = {k: nodes[ids[k]].one("circle").attrs["fill"] for k in ("best", "seed", "build_failed", "unevaluated")}
    assert fill["best"] == SCORE_COLORS[-1] and fill["seed"] == SCORE_COLORS[0]
    assert fill["build_failed"] == FAILED_COLOR and fill["unevaluated"] == UNEVALUATED_COLOR
    assert nodes[ids["rejected"]].attrs["data-status"] == "rejected"
    assert nodes[ids["best"]].one("a").attrs["href"] == f"/candidates/{ids['best']}"
    parent_links = sum(len(parents) for *_, parents, _, _ in LAYOUT.values())
    edges = svg.one("g", cls="edges").all("path")
    assert len(edges) == parent_links == 7
    assert {(e.attrs["data-from"], e.attrs["data-to"]) for e in edges} >= {(ids["seed"], ids["best"]),
                                                                          (ids["second"], ids["reevaluated"])}
    data = api(client, f"/runs/{RUN}/lineage")
    assert len(data["nodes"]) == len(LAYOUT) and len(data["edges"]) == 7


def test_plots_page_shows_every_plot_and_serves_svg_png_and_data(site):
    from cuco import plots

    client, _, db = site
    root = page(client, f"/runs/{RUN}/plots")
    assert kind(root) == "plots"
    images = {img.attrs["data-name"]: img.attrs["src"] for img in root.all("img", cls="plot")}
    assert images == {name: f"/runs/{RUN}/plots/{name}.svg" for name in plots.PLOTS}
    svg = client.get(images["best_over_generations"])
    assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml" and b"<svg" in svg.content
    png = client.get(f"/runs/{RUN}/plots/coverage.png")
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    with Store.open(db, read_only=True) as store:
        assert api(client, f"/runs/{RUN}/plots") == json.loads(json.dumps(plots.plot_data(store, RUN)))
    assert client.get(f"/runs/{RUN}/plots/nothing.svg").status_code == 404


# --- live ---------------------------------------------------------------------------------------

def test_a_running_runs_rows_poll_and_pick_up_new_candidates(db_url):
    make_web_run(db_url, status=RunStatus.RUNNING)
    with TestClient(create_app(db_url, poll_s=0.5)) as client:
        root = page(client, f"/runs/{RUN}?status=ok")
        rows = root.one("tbody", id="rows")
        assert rows.attrs["hx-trigger"] == "every 0.5s"
        assert rows.attrs["hx-get"] == f"/runs/{RUN}/rows?status=ok"
        added = add_candidates(db_url, RUN, 3, speedup=5.0)  # better than everything: they top the page
        r = client.get(rows.attrs["hx-get"])
        assert r.status_code == 200  # 200 keeps htmx polling
        partial = Page(r.text).root
        got = [tr.attrs["data-id"] for tr in partial.all("tr", cls="candidate-row")]
        assert got[:3] == list(reversed(added)) and len(got) == 4 + 3
        assert partial.one(id="total").attrs["hx-swap-oob"] == "true" and partial.one(id="total").text() == "7"
        assert api(client, f"/runs/{RUN}/rows?status=ok")["total"] == 7
        # the header's figures follow too: the new best and the new candidate count
        figures = partial.one(id="run-figures")
        assert figures.attrs["hx-swap-oob"] == "true"
        best = figures.one("a", id="best-link")
        assert best.text().startswith("5") and best.attrs["href"].rsplit("/", 1)[-1] in added
        before = int(root.one(id="run-candidates").text())
        assert int(figures.one(id="run-candidates").text()) == before + 3


def test_a_finished_run_does_not_poll(site):
    client, _, _ = site
    rows = page(client, f"/runs/{RUN}").one("tbody", id="rows")
    assert "hx-get" not in rows.attrs and "hx-trigger" not in rows.attrs
    assert client.get(f"/runs/{RUN}/rows").status_code == 286  # htmx stops polling on 286


# --- hostile text -----------------------------------------------------------------------------

def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_hostile_text_is_escaped_on_every_page_and_exact_in_json(db_url):
    name, ids = make_hostile_run(db_url, status=RunStatus.RUNNING)
    run = quote(name, safe="")
    with TestClient(create_app(db_url)) as client:
        cand = [f"/candidates/{cid}" for cid in ids.values()]
        urls = ["/", f"/runs/{run}", f"/runs/{run}/rows", f"/runs/{run}/lineage", f"/runs/{run}/plots",
                f"/compare?a={ids['seed']}&b={ids['best']}", *cand]
        for url in urls:
            r = client.get(url)
            assert r.status_code in (200, 286), url
            for payload in XSS:
                assert payload not in r.text, url
            assert "<img src=x" not in r.text and "<script>alert" not in r.text
        # the text is shown as written: the browser's reading of the escaped HTML is the payload
        board = Page(client.get(f"/runs/{run}").text).root
        assert board.one("h1").text() == name
        best = Page(client.get(f"/candidates/{ids['best']}").text).root
        assert XSS_TEXT in best.one("pre", id="source").text()
        assert best.one("pre", cls="prompt").text().endswith(XSS_TEXT)
        assert XSS_TEXT in best.one(id="stages").one("details").text() and XSS_TEXT in best.one(id="features").text()
        failed = Page(client.get(f"/candidates/{ids['wrong_result']}").text).root
        assert XSS_TEXT in failed.one(id="checks").text() and XSS_TEXT in failed.one(id="evaluation").text()
        # an unknown run whose name is markup comes back escaped in the 404 page
        missing = client.get("/runs/" + quote(XSS[0], safe=""))
        assert missing.status_code == 404 and XSS[0] not in missing.text
        assert name in [r["name"] for r in api(client, "/runs")["runs"]]
        data = api(client, f"/candidates/{ids['best']}")
        assert data["candidate"]["source"].count(XSS_TEXT) == 1 and data["run"]["name"] == name
        assert data["llm_calls"][0]["prompt"] == PROMPT + XSS_TEXT and data["llm_calls"][0]["response"] == REPLY + XSS_TEXT
        assert XSS_TEXT in data["evaluation"]["reason"] and XSS_TEXT in data["evaluation"]["logs"]
        assert XSS_TEXT in data["evaluation"]["flags"]
        board_json = api(client, f"/runs/{run}")
        assert any(XSS_TEXT in s for s in _strings(board_json["rows"])) and board_json["run"]["note"] == XSS_TEXT
        svg = client.get(f"/runs/{run}/plots/best_over_generations.svg")
        assert svg.status_code == 200 and b"<script" not in svg.content


def test_pages_load_nothing_from_elsewhere_and_forbid_inline_script(site):
    client, ids, _ = site
    for url in ("/", f"/runs/{RUN}", f"/candidates/{ids['best']}", f"/runs/{RUN}/lineage", f"/runs/{RUN}/plots"):
        r = client.get(url)
        links = re.findall(r'(?:src|href|action|hx-get)="([^"]*)"', r.text)
        assert links and all(link.startswith("/") for link in links), url
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "<script>" not in r.text and "style=" not in r.text
    static = client.get("/static/style.css")
    assert static.status_code == 200 and "://" not in static.text


def test_a_foreign_host_name_is_refused(site):
    client, _, _ = site
    assert client.get("/", headers={"host": "attacker.example"}).status_code == 400  # DNS rebinding
    assert client.get("/", headers={"host": "127.0.0.1:8765"}).status_code == 200


# --- the server never writes ----------------------------------------------------------------------

def _visit_everything(client: TestClient, ids: dict[str, str]) -> None:
    for url in ("/", f"/runs/{RUN}", f"/runs/{RUN}?status=ok&sort=sol", f"/runs/{RUN}/rows", f"/runs/{RUN}/lineage",
                f"/candidates/{ids['best']}", f"/compare?a={ids['seed']}&b={ids['best']}", "/api/runs"):
        assert client.get(url).status_code in (200, 286)


def test_the_server_leaves_a_sqlite_file_unchanged(web_run):
    db, _, ids = web_run
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    app = create_app(str(db))
    with TestClient(app) as client:
        _visit_everything(client, ids)
        with pytest.raises(StoreError, match="read-only"):
            app.state.store.update_run(RUN, note="written by the web")
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before


def test_the_servers_store_cannot_write(site):
    client, ids, db = site
    _visit_everything(client, ids)
    store = client.app.state.store
    assert store.read_only
    with pytest.raises(StoreError, match="read-only"):
        store.update_run(RUN, status=RunStatus.RUNNING)
    with pytest.raises(StoreError, match="read-only"):
        store.add_evaluation(store.evaluation(ids["best"]))
    with Store.open(db) as s:
        assert s.get_run(RUN).status is RunStatus.COMPLETE and len(s.candidates(RUN)) == len(LAYOUT)


# --- cuco serve -------------------------------------------------------------------------------

def test_serve_refuses_a_public_address_unless_allowed(web_run):
    db, _, _ = web_run
    with pytest.raises(ConfigError, match="not a loopback address") as err:
        serve_plan(str(db.parent), db=None, host="0.0.0.0")
    assert "--allow-remote" in err.value.fix
    _, url, warnings = serve_plan(str(db.parent), db=None, host="0.0.0.0", port=9000, allow_remote=True)
    assert url == f"http://0.0.0.0:9000/runs/{RUN}" and len(warnings) == 1 and "--allow-remote" in warnings[0]
    _, url, warnings = serve_plan(None, db=str(db), host="::1", port=9001)
    assert url == f"http://[::1]:9001/runs/{RUN}" and warnings == []  # --db alone: its latest run
    make_web_run(db, "second run")
    _, url, _ = serve_plan("second run", db=str(db))  # --db and a run name: that run
    assert url == "http://127.0.0.1:8765/runs/second%20run"


def test_serve_opens_a_run_folder_on_its_latest_run(web_run):
    db, _, _ = web_run
    make_web_run(db, "newer run")
    with Store.open(db) as s:
        s.update_run("newer run", note="touched")  # updated now: the latest
    app, url, _ = serve_plan(str(db.parent), db=None, port=8800)
    assert url == "http://127.0.0.1:8800/runs/newer%20run"
    with TestClient(app, base_url="http://127.0.0.1:8800") as client:  # the Host a browser sends
        assert client.get("/").status_code == 200
        assert client.get("/", headers={"host": "example.org"}).status_code == 400


def test_serve_needs_a_run_folder_with_a_database(tmp_path: Path):
    with pytest.raises(StoreError, match="no run database") as err:
        serve_plan(str(tmp_path), db=None)
    assert "--db" in err.value.fix
    with pytest.raises(ConfigError, match="no run given"):
        serve_plan(None, db=None)
    assert not (tmp_path / "cuco.db").exists()


def test_control_characters_show_as_escapes_in_html_and_exactly_in_json(web_run):
    db, _, ids = web_run
    sneaky = "int ok = 1; /* \u202e } ;kcatta \u202c */ \x1b[31mred\x07"
    with Store.open(db) as s:
        cand = Candidate(origin=Origin(kind=OriginKind.MANUAL), source=sneaky, parent_ids=(ids["seed"],))
        s.add_candidate(RUN, cand)
        nan = RankCheck(tier=Tier.EMULATED, world=2, shape="emu-even", rank=0, ok=False, max_abs_err=float("nan"))
        s.add_evaluation(failed_evaluation(cand.id, Status.WRONG_RESULT).model_copy(update={"checks": (nan,)}))
    with TestClient(create_app(str(db))) as client:
        html = client.get(f"/candidates/{cand.id}").text
        shown = Page(html).root.one("pre", id="source").text()
        assert "\u202e" not in html and "\x1b" not in html and "\x07" not in html
        assert "\\u202e" in shown and "\\x1b[31mred\\x07" in shown
        data = api(client, f"/candidates/{cand.id}")
        assert data["candidate"]["source"] == sneaky
        assert data["evaluation"]["checks"][0]["max_abs_err"] == "NaN"  # JSON has no NaN: stored the same way
        assert "NaN" in Page(html).root.one(id="checks").text()
