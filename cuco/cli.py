"""The ``cuco`` command. Heavy libraries are imported inside commands so ``cuco --help`` is instant.
Every ``CucoError`` becomes one line on stderr (``error: ... -- fix: ...``), never a traceback."""

from __future__ import annotations

import functools
import os
import signal
import sys
from pathlib import Path
from typing import List, Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="cuco: search fused computation+communication CUDA kernels for multi-GPU workloads.")


def _guarded(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from design_space.errors import CucoError
        _arm_interrupts()
        try:
            return fn(*args, **kwargs)
        except CucoError as e:
            from cuco.errors import one_line
            typer.echo(one_line(e), err=True)
            raise typer.Exit(2)
        except KeyboardInterrupt:
            _exit_interrupted()
    return wrapper


def _second_interrupt(*_) -> None:
    os._exit(130)


def _first_interrupt(*_) -> None:
    # swapped before Python sees the first: a second Ctrl-C, wherever it lands, leaves at once
    signal.signal(signal.SIGINT, _second_interrupt)
    raise KeyboardInterrupt


def _arm_interrupts() -> None:
    """Ctrl-C once: a clean stop (KeyboardInterrupt); twice: out at once, no traceback. Only where
    Ctrl-C is Python's default (a shell's background job ignores it; tests may install their own)."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _first_interrupt)


def _exit_interrupted() -> None:
    """After Ctrl-C: stop the sandboxed stages still running and wait briefly for their threads,
    so the interpreter's exit has nothing left to join. A second Ctrl-C leaves at once, quietly."""
    import threading
    import time

    signal.signal(signal.SIGINT, _second_interrupt)
    typer.echo("interrupted: run the same command again to resume", err=True)
    if "evaluator.sandbox" in sys.modules:
        sys.modules["evaluator.sandbox"].stop_all()
    deadline = time.monotonic() + 10
    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon:
            t.join(max(0.0, deadline - time.monotonic()))
    # Leave without the interpreter's finalisation: it joins threads (one may not end) and resets
    # Ctrl-C to the default, so a second Ctrl-C there would kill the process with a signal.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)


def _console(wide: bool = False):
    # Tables fit 100 columns (a narrower terminal's width, 80 at least); a pipe gets plain text
    # (no escape sequences, ASCII boxes); --wide prints everything at its natural width.
    from cuco.terminal import make_console
    return make_console(wide=wide)


_WIDE_HELP = "show every column at its natural width (default: tables fit 100 columns)"


@app.command()
@_guarded
def evolve(
    ctx: typer.Context,
    spec: Path = typer.Argument(..., help="spec folder (with spec.py) or spec .py file"),
    config: Optional[Path] = typer.Option(None, help="a TOML run config (keys: these options' long names); "
                                                     "options given here override it"),
    run_dir: Optional[Path] = typer.Option(None, help="where the run lives (default: runs/<spec name>)"),
    run_name: Optional[str] = typer.Option(None, help="run name inside the database (default: the spec name)"),
    db: Optional[str] = typer.Option(None, help="database URL (default: SQLite file <run-dir>/cuco.db)"),
    generations: int = typer.Option(5, min=1, help="generations to run (a resumed run extends to this many)"),
    population: int = typer.Option(8, min=1, help="candidates per generation"),
    workers: Optional[int] = typer.Option(None, min=1, help="parallel evaluations (default: CPU count)"),
    seed: int = typer.Option(0, help="seed of the proposer"),
    point: List[str] = typer.Option([], help="design point to put in generation 0, e.g. "
                                              "lsa/fused_persistent/per_tile_signal/warp/64K/8 (repeatable)"),
    max_wall: Optional[float] = typer.Option(None, help="end the run after this many seconds: no new work starts and a stage still running is killed (stored as timeout)"),
    top: int = typer.Option(15, help="rows of the final leaderboard"),
    json_out: bool = typer.Option(False, "--json", help="print the final leaderboard as JSON"),
    keep_work: bool = typer.Option(False, help="keep per-candidate scratch folders"),
    gpu: str = typer.Option("auto", help="GPU stages (verify, bench): auto = when a GPU is present, off, "
                                         "require = refuse to run without one"),
    llm: List[str] = typer.Option([], help="LLM proposer, repeatable: openai:<model>, anthropic:<model>, "
                                           "openai-compatible:<model>@<base_url> (default: the `llm` entry of "
                                           "./cuco.toml or ~/.config/cuco/config.toml, else CUCO_LLM)"),
    llm_budget: Optional[float] = typer.Option(None, help="dollars the run may spend on LLM calls (across resumes)"),
    llm_share: float = typer.Option(0.75, help="share of each later generation proposed by the LLMs"),
    fast_path: bool = typer.Option(True, help="with --llm: the fast-path agent writes generation 0"),
    llm_timeout: Optional[float] = typer.Option(None, help="seconds one LLM call may take (default: 900 for "
                                                           "openai-compatible local servers, 120 for cloud APIs)"),
    llm_context: Optional[int] = typer.Option(None, help="the model's context window in tokens, for servers that "
                                                         "do not publish it (llama.cpp, vLLM and Ollama do)"),
    launcher: str = typer.Option("local", help="where evaluations run: local (a pool in this process), ray "
                                               "(extra `ray`), slurm (extra `slurm`, submitit)"),
    launcher_address: Optional[str] = typer.Option(None, help="ray: the cluster's address (default: start a local "
                                                              "one); slurm: `local` runs jobs on this machine"),
    gpus: str = typer.Option("", help="local launcher: GPU ids evaluations may take, e.g. 0-7 (each gets a "
                                      "disjoint set)"),
    ahead: int = typer.Option(0, help="propose generations this many early, from the history complete by then, "
                                      "so evaluation slots never wait on a generation's last candidate"),
    wide: bool = typer.Option(False, "--wide", help=_WIDE_HELP),
) -> None:
    """Search the design space for SPEC (resumes when the run already exists)."""
    from cuco.agent_wiring import LLMSettings
    from cuco.evolve_command import run_evolve
    v = dict(ctx.params)
    if config is not None:
        from cuco.run_config import merged
        # (typer may bring its own click: compare the source's name, not the enum)
        given = {k: getattr(ctx.get_parameter_source(k), "name", "") == "COMMANDLINE" for k in v}
        v = merged(v, given, config)
    code = run_evolve(spec, run_dir=_path(v["run_dir"]), run_name=v["run_name"], db=v["db"],
                      generations=v["generations"], population=v["population"], workers=v["workers"], seed=v["seed"],
                      points=v["point"], max_wall=v["max_wall"], top=top, json_out=json_out, keep_work=v["keep_work"],
                      console=_console(wide), gpu=v["gpu"], launcher=v["launcher"],
                      launcher_address=v["launcher_address"], gpus=v["gpus"], config_file=config, ahead=v["ahead"],
                      llm=LLMSettings(names=tuple(v["llm"]), budget_usd=v["llm_budget"], share=v["llm_share"],
                                      fast_path=v["fast_path"], timeout_s=v["llm_timeout"],
                                      context_tokens=v["llm_context"]))
    if code:
        raise typer.Exit(code)


def _path(value):
    return Path(value) if value is not None else None


@app.command()
@_guarded
def leaderboard(
    run: str = typer.Argument(..., help="run folder (holding cuco.db) or run name with --db"),
    db: Optional[str] = typer.Option(None, help="database URL, when the run is not a folder"),
    limit: int = typer.Option(20, help="rows to show"),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
    wide: bool = typer.Option(False, "--wide", help=_WIDE_HELP),
) -> None:
    """Show a run's candidates, best first."""
    from cuco.browse import leaderboard_command
    leaderboard_command(run, db=db, limit=limit, json_out=json_out, console=_console(wide))


@app.command()
@_guarded
def show(
    candidate: str = typer.Argument(..., help="candidate id (or a unique prefix)"),
    run: Optional[str] = typer.Option(None, help="run folder (default: search ./runs/*)"),
    db: Optional[str] = typer.Option(None, help="database URL"),
    source: bool = typer.Option(False, help="print only the CUDA source, exactly as stored (control characters "
                                              "made visible), e.g. > kernel.cu"),
    prompts: bool = typer.Option(False, help="print the prompt and response of each LLM call too"),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
    wide: bool = typer.Option(False, "--wide", help=_WIDE_HELP),
) -> None:
    """Show one candidate: design point, evaluation, build stats, timings, log, the LLM calls that made it."""
    from cuco.browse import show_command
    show_command(candidate, run=run, db=db, with_source=source, json_out=json_out, console=_console(wide),
                 with_prompts=prompts)


@app.command()
@_guarded
def llm(
    run: str = typer.Argument(..., help="run folder (holding cuco.db) or run name with --db"),
    db: Optional[str] = typer.Option(None, help="database URL, when the run is not a folder"),
    candidate: Optional[str] = typer.Option(None, help="only the calls that served this candidate (id or prefix)"),
    prompts: bool = typer.Option(False, help="print the prompt and response of each call too"),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
    wide: bool = typer.Option(False, "--wide", help=_WIDE_HELP),
) -> None:
    """Show a run's LLM usage (calls, failures, tokens, cost, by model) and its calls."""
    from cuco.browse import llm_command
    llm_command(run, db=db, candidate=candidate, json_out=json_out, with_prompts=prompts, console=_console(wide))


@app.command()
@_guarded
def serve(
    run: Optional[str] = typer.Argument(None, help="run folder holding cuco.db (e.g. runs/allgather_gemm), or with "
                                                   "--db the run name to open first"),
    db: Optional[str] = typer.Option(None, help="database URL (SQLite path or postgresql+psycopg://...)"),
    host: str = typer.Option("127.0.0.1", help="address to bind (anything but loopback needs --allow-remote)"),
    port: int = typer.Option(8765, min=1, max=65535, help="port to listen on"),
    allow_remote: bool = typer.Option(False, "--allow-remote", help="allow a non-loopback --host (the pages show "
                                                                    "candidate code and LLM prompts)"),
    poll: float = typer.Option(2.0, min=0.5, help="seconds between live updates of a running run's leaderboard"),
) -> None:
    """Serve the read-only web leaderboard of a run's database (runs, leaderboard, candidates, lineage, plots)."""
    from cuco.web.app import run_serve
    run_serve(run, db=db, host=host, port=port, allow_remote=allow_remote, console=_console(), poll_s=poll)


@app.command()
@_guarded
def plot(
    run: Optional[str] = typer.Argument(None, help="run folder holding cuco.db, or a run name with --db"),
    db: Optional[str] = typer.Option(None, help="database URL, when the run is not a folder"),
    out: Optional[Path] = typer.Option(None, help="folder for the SVG and PNG files (default: <run folder>/plots)"),
) -> None:
    """Write a run's plots (best over generations and evaluations, all candidates, coverage, LLM spend) as SVG and PNG."""
    from cuco.plots import run_plot
    run_plot(run, db=db, out=out, console=_console())


@app.command()
@_guarded
def export(
    candidate: str = typer.Argument(..., help="candidate id (or a unique prefix)"),
    run: Optional[str] = typer.Option(None, help="run folder (default: search ./runs/*)"),
    db: Optional[str] = typer.Option(None, help="database URL"),
    out: Optional[Path] = typer.Option(None, help="folder to write (default: ./cuco-export-<id>)"),
    force: bool = typer.Option(False, help="export a candidate that is not `ok` (its README says why it failed)"),
) -> None:
    """Write a standalone package of a kernel: its .cu, the comm runtime, build.sh and a PyTorch custom op."""
    from cuco.export_command import run_export
    run_export(candidate, run=run, db=db, out=out, console=_console(), force=force)


@app.command()
@_guarded
def check(
    spec: Path = typer.Argument(..., help="spec folder (with spec.py) or spec .py file"),
    file: Path = typer.Argument(..., help="CUDA source to check (a hand-written kernel or an edited render)"),
    point: Optional[str] = typer.Option(None, help="design point the source implements (needed for a score), "
                                                   "e.g. lsa/fused_persistent/per_tile_signal/cta/16K/2"),
    json_out: bool = typer.Option(False, "--json", help="print the evaluation as JSON"),
    run: Optional[str] = typer.Option(None, help="store the candidate and its evaluation in this run (created "
                                                 "when missing), e.g. the spec name `cuco evolve` uses"),
    db: Optional[str] = typer.Option(None, help="database URL for --run (default: runs/<spec name>/cuco.db)"),
    hardware: Optional[str] = typer.Option(None, help="hardware profile to build and score for (default: the spec's)"),
    wide: bool = typer.Option(False, "--wide", help=_WIDE_HELP),
) -> None:
    """Run one source through the evaluator cascade: verdict, build features, checks, score (exit 0 ok, 1 failed)."""
    from cuco.check_command import run_check
    code = run_check(spec, file, point=point, json_out=json_out, run=run, db=db, hardware=hardware,
                     console=_console(wide))
    if code:
        raise typer.Exit(code)


@app.command()
@_guarded
def render(
    spec: Path = typer.Argument(..., help="spec folder or file"),
    point: str = typer.Option(..., help="design point, e.g. lsa/stream_overlap/per_peer_signal/cta/256K/8"),
) -> None:
    """Print the CUDA source the templates render for one design point."""
    import kernels  # noqa: F401  (registers the built-in renderers)
    from cuco.spec_loader import load_spec
    from design_space import DesignPoint, DesignPointError, get_pattern, get_profile
    from design_space.space import why_not_rendered
    s = load_spec(spec)
    p = DesignPoint.parse_key(point)
    p.check_hardware(get_profile(s.hardware))
    pattern = get_pattern(s.pattern)
    why = why_not_rendered(p, pattern, get_profile(s.hardware))
    if why:
        raise DesignPointError(f"cannot render {p.key()}: {why}", f"`cuco space {spec}` lists the valid points")
    sys.stdout.write(pattern.render(p))


@app.command()
@_guarded
def space(
    spec: Path = typer.Argument(..., help="spec folder (with spec.py) or spec .py file"),
    hardware: Optional[str] = typer.Option(None, help="hardware profile BASE[:NODESxGPUS][:NETWORK] (default: the spec's), e.g. H100, A100, B200, H100:2x8:ib400"),
    world: Optional[int] = typer.Option(None, min=1, help="world size to model (default: the spec's largest)"),
    shape: Optional[str] = typer.Option(None, help="shape ranking the best points (default: the headline shape)"),
    top: int = typer.Option(10, min=0, help="best points to list"),
    point: Optional[str] = typer.Option(None, help="check one design point, e.g. "
                                                   "lsa/fused_persistent/per_tile_signal/warp/64K/8"),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
    wide: bool = typer.Option(False, "--wide", help=_WIDE_HELP),
) -> None:
    """Show SPEC's design space: dimensions, rules, valid points, bounds and the best points (simulated)."""
    from cuco.space_command import run_space
    run_space(spec, hardware=hardware, world=world, shape=shape, top=top, point=point, json_out=json_out,
              console=_console(wide))


@app.command()
@_guarded
def init(
    out: Path = typer.Option(..., help="spec folder to create"),
    from_reference: Optional[Path] = typer.Option(None, help="your .py with a torch reference and an input builder"),
    from_seed: Optional[Path] = typer.Option(None, help="a host-driven .cu (NCCL host collectives + cuBLAS/kernels)"),
    reference: str = typer.Option("reference", help="reference function in --from-reference"),
    inputs: str = typer.Option("make_inputs", help="input builder function in --from-reference"),
    pattern: Optional[str] = typer.Option(None, help="fusion pattern (default: detected from the collectives)"),
    name: Optional[str] = typer.Option(None, help="spec name (default: from the file name)"),
    force: bool = typer.Option(False, help="write into a non-empty --out"),
    traced: bool = typer.Option(False, "--traced", help="no family: a host-driven baseline generated from the "
                                                        "reference's trace (fixed shapes)"),
) -> None:
    """Scaffold a spec folder (spec.py, reference.py, README.md) from a torch reference or a host-driven .cu."""
    from cuco.init_command import run_init
    run_init(out=out, from_reference=from_reference, from_seed=from_seed, reference=reference, inputs=inputs,
             pattern=pattern, name=name, force=force, console=_console(), traced=traced)


@app.command()
@_guarded
def doctor(
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
    wide: bool = typer.Option(False, "--wide", help=_WIDE_HELP),
) -> None:
    """What this machine can do: compilers, GPUs, CUDA, NCCL, torch, sandbox isolation, tiers, LLM keys (names only)."""
    from cuco.doctor_command import run_doctor
    code = run_doctor(json_out=json_out, console=_console(wide))
    if code:
        raise typer.Exit(code)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
