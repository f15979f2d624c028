"""The web leaderboard's FastAPI app (``create_app``) and ``cuco serve`` (``run_serve``).

Read-only by construction: the app opens the database with ``Store.open(..., read_only=True)``
(SQLite ``mode=ro``, PostgreSQL read-only transactions) and has only GET routes. Every page is a
view dict rendered by a Jinja2 template with autoescape on, and the same dict is the page's JSON
twin under ``/api``. Defence in depth for text written by candidates and LLMs: a Content Security
Policy that allows only this server's own scripts and styles (no inline script), and a Host check
against DNS rebinding (a web page the user visits must not read a loopback-bound leaderboard).
"""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Callable, Optional, Sequence
from urllib.parse import unquote

import jinja2
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from markupsafe import Markup
from starlette.middleware.trustedhost import TrustedHostMiddleware

from candidates_db import Store
from cuco.shown_text import visible
from cuco.web.candidate_view import candidate_view, compare_view
from cuco.web.data import NotFound, run_url
from cuco.web.lineage import lineage_view
from cuco.web.params import board_query
from cuco.web.views import RunCache, leaderboard_view, need_run, rows_view, runs_view
from design_space.errors import ConfigError, CucoError, StoreError

HERE = Path(__file__).resolve().parent
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]", "testserver")  # testserver: Starlette's TestClient
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                    "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY", "Cache-Control": "no-store"}
# A plot is an image: no script runs in it even when opened on its own.
IMAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'"
RUN_PAGES = ("rows", "lineage", "plots")


def _shown(value: Any) -> Any:
    """Jinja2 ``finalize``: every printed string with control and invisible characters (bidi
    overrides, zero-width, escapes) made visible, as the CLI shows them; autoescape then escapes it."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def _highlight(source: str) -> Markup:
    """The source as Pygments HTML: Pygments escapes every token, so the markup is only its own spans."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import CudaLexer

    return Markup(highlight(visible(source), CudaLexer(), HtmlFormatter(nowrap=True)))


def _number(x: Any, suffix: str = "", digits: int = 3) -> str:
    if x is None or isinstance(x, str):
        return "-" if x is None else x
    return f"{x:.{digits}g}{suffix}"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             finalize=_shown, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters |= {"highlight": _highlight, "num": _number}
    return env


def _raw_segments(request: Request, prefix: str) -> list[str]:
    """The path after ``prefix`` split on the *encoded* slashes, each segment decoded: a run named
    ``a/b`` arrives as one segment ``a%2Fb`` (the decoded path could not tell it from a sub-page)."""
    raw = (request.scope.get("raw_path") or request.url.path.encode()).decode("latin-1")
    rest = raw[len(prefix):] if raw.startswith(prefix) else raw
    return [unquote(p) for p in rest.split("/") if p != ""]


def _run_route(store: Store, segments: list[str]) -> tuple[str, str, str]:
    """(run name, sub-page, file) from the segments after /runs/; an unencoded name with slashes
    (typed by hand) is tried whole when its parts are not a page of an existing run."""
    if not segments:
        raise NotFound("no run given in the URL", "open the runs list (/) and pick a run")
    run, sub, file = segments[0], "", ""
    if len(segments) >= 2 and segments[1] in RUN_PAGES and len(segments) <= 2 + (segments[1] == "plots"):
        sub, file = segments[1], (segments[2] if len(segments) == 3 else "")
        if store.get_run(run) is not None:
            return run, sub, file
    if len(segments) == 1:
        return run, "", ""
    return "/".join(segments), "", ""


class Pages:
    """The route handlers: each builds its view dict, then renders it or returns it as JSON."""

    def __init__(self, store: Store, poll_s: float) -> None:
        self.store, self.poll_s, self.cache = store, poll_s, RunCache()
        self.templates = _environment()

    def html(self, template: str, view: dict[str, Any], status: int = 200) -> Response:
        return HTMLResponse(self.templates.get_template(template).render(v=view), status_code=status)

    def run_page(self, request: Request, api: bool) -> Response:
        segments = _raw_segments(request, "/api/runs/" if api else "/runs/")
        run, sub, file = _run_route(self.store, segments)
        if sub == "plots" and file:
            return self.plot_image(run, file)
        if sub == "plots":
            return self.plots(run, api)
        if sub == "lineage":
            view = lineage_view(self.store, run)
            return JSONResponse(view) if api else self.html("lineage.html", view)
        query = board_query(request.query_params)
        if sub == "rows":
            view = rows_view(self.store, run, query, self.cache)
            # 286 tells htmx to stop polling: the run is no longer running.
            return JSONResponse(view) if api else self.html("rows.html", view, 200 if view["run"]["running"] else 286)
        view = leaderboard_view(self.store, run, query, self.cache, self.poll_s)
        return JSONResponse(view) if api else self.html("leaderboard.html", view)

    def plots(self, run: str, api: bool) -> Response:
        from cuco import plots  # written alongside; imported when a plots page is asked for

        info = need_run(self.store, run)
        if api:
            return JSONResponse(plots.plot_data(self.store, run))
        view = {"view": "plots", "run": {"name": info.name, "url": run_url(info.name), "status": info.status.value,
                                         "lineage": run_url(info.name, "lineage")},
                "plots": [{"name": name, "title": title, "svg": run_url(info.name, f"plots/{name}.svg"),
                           "png": run_url(info.name, f"plots/{name}.png")} for name, title in plots.PLOTS.items()]}
        return self.html("plots.html", view)

    def plot_image(self, run: str, file: str) -> Response:
        from cuco import plots

        name, _, fmt = file.rpartition(".")
        if fmt not in ("svg", "png") or name not in plots.PLOTS:
            raise NotFound(f"no plot {file!r}", f"ask for <name>.svg or <name>.png, name one of {', '.join(plots.PLOTS)}")
        need_run(self.store, run)
        media = "image/svg+xml" if fmt == "svg" else "image/png"
        return Response(plots.render(self.store, run, name, fmt), media_type=media,
                        headers={"Content-Security-Policy": IMAGE_CSP})


def _error_handler(pages: Pages) -> Callable[[Request, Exception], Response]:
    def handle(request: Request, exc: Exception) -> Response:
        err = exc if isinstance(exc, CucoError) else CucoError(str(exc))
        status = 404 if isinstance(err, NotFound) else 400 if isinstance(err, ConfigError) else 500
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": err.problem, "fix": err.fix}, status_code=status)
        return pages.html("error.html", {"view": "error", "status": status, "problem": err.problem, "fix": err.fix},
                          status)
    return handle


def create_app(db_url: str, *, poll_s: float = 2.0, allowed_hosts: Optional[Sequence[str]] = None) -> FastAPI:
    """The read-only app over the database at ``db_url`` (a SQLite file path or a database URL).
    ``allowed_hosts``: the Host names it answers (default: loopback names only; ``["*"]`` for any)."""
    store = Store.open(db_url, read_only=True)
    pages = Pages(store, poll_s)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()

    app = FastAPI(title="cuco leaderboard", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.store = store
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts or LOOPBACK_NAMES))

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Any) -> Response:
        response = await call_next(request)
        for key, value in SECURITY_HEADERS.items():
            if key != "Cache-Control" or not request.url.path.startswith("/static/"):  # pages change; files don't
                response.headers.setdefault(key, value)
        return response

    handler = _error_handler(pages)
    app.add_exception_handler(CucoError, handler)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    _routes(app, pages)
    return app


def _routes(app: FastAPI, pages: Pages) -> None:
    @app.get("/", response_class=HTMLResponse)
    def runs_page() -> Response:
        return pages.html("runs.html", runs_view(pages.store, pages.cache))

    @app.get("/api/runs")
    def runs_json() -> Response:
        return JSONResponse(runs_view(pages.store, pages.cache))

    @app.get("/runs/{rest:path}")
    def run_page(request: Request, rest: str) -> Response:
        return pages.run_page(request, api=False)

    @app.get("/api/runs/{rest:path}")
    def run_json(request: Request, rest: str) -> Response:
        return pages.run_page(request, api=True)

    @app.get("/candidates/{cid:path}")
    def candidate_page(cid: str) -> Response:
        return pages.html("candidate.html", candidate_view(pages.store, cid))

    @app.get("/api/candidates/{cid:path}")
    def candidate_json(cid: str) -> Response:
        return JSONResponse(candidate_view(pages.store, cid))

    @app.get("/compare")
    def compare_page(a: str = "", b: str = "") -> Response:
        return pages.html("compare.html", compare_view(pages.store, *_pair(a, b)))

    @app.get("/api/compare")
    def compare_json(a: str = "", b: str = "") -> Response:
        return JSONResponse(compare_view(pages.store, *_pair(a, b)))


def _pair(a: str, b: str) -> tuple[str, str]:
    if not a or not b:
        raise ConfigError("compare needs two candidates", "open /compare?a=<id>&b=<id>")
    return a, b


def _is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def _database(run: Optional[str], db: Optional[str]) -> tuple[str, Optional[str]]:
    """(database, run name to open first) from a run folder, a database URL, or both."""
    if db:
        return db, run
    if run is None:
        raise ConfigError("no run given", "pass a run folder (cuco serve runs/<spec>) or --db URL")
    path = Path(run) if Path(run).is_file() else Path(run) / "cuco.db"  # the folder, or its cuco.db
    if not path.is_file():
        raise StoreError(f"no run database at {path}",
                         "pass the folder `cuco evolve` printed (default runs/<spec name>) or --db URL")
    return str(path), None


def serve_plan(run: Optional[str], *, db: Optional[str], host: str = "127.0.0.1", port: int = 8765,
               allow_remote: bool = False, poll_s: float = 2.0) -> tuple[FastAPI, str, list[str]]:
    """What ``run_serve`` will serve: (the app, its URL, warnings to print), or the error that stops it."""
    if not _is_loopback(host) and not allow_remote:
        raise ConfigError(f"{host} is not a loopback address: anyone who can reach it could read every "
                          "candidate, log, prompt and reply", f"pass --allow-remote to serve on {host} anyway, "
                          "or leave --host at 127.0.0.1")
    database, name = _database(run, db)
    # Any Host when remote access is allowed; else the loopback names and the address served on.
    app = create_app(database, poll_s=poll_s, allowed_hosts=["*"] if allow_remote else [*LOOPBACK_NAMES, host])
    if name is None:  # a run folder: open on its latest run, as `cuco leaderboard` shows it
        runs = app.state.store.list_runs()
        name = max(runs, key=lambda r: r.updated_at).name if runs else None
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{port}" + (run_url(name) if name else "/")
    warnings = [f"warning: serving on {host} (--allow-remote): anyone who can reach port {port} can read every "
                "candidate, log, prompt and reply of this database"] if not _is_loopback(host) else []
    return app, url, warnings


def run_serve(run: Optional[str], *, db: Optional[str], host: str = "127.0.0.1", port: int = 8765,
              allow_remote: bool = False, console: Any, poll_s: float = 2.0) -> None:
    """``cuco serve``: serve the leaderboard of a run folder (or ``--db URL``) until Ctrl-C."""
    import uvicorn

    app, url, warnings = serve_plan(run, db=db, host=host, port=port, allow_remote=allow_remote, poll_s=poll_s)
    for line in warnings:
        console.print(line, markup=False, highlight=False)
    console.print(f"cuco leaderboard (read-only) at {url} -- Ctrl-C stops", markup=False, highlight=False)
    uvicorn.run(app, host=host, port=port, log_level="warning")
