"""CLI commands of the serve layer: ``simforge serve``."""

from __future__ import annotations

import socket
import sys

import typer


def register(app: typer.Typer) -> None:
    """Attach this layer's commands to the main CLI app."""

    @app.command()
    def serve(
        target: str = typer.Argument(
            ..., help="Scenario id (domain/name-vN), scenario YAML path, or pack folder/name."
        ),
        host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind."),
        port: int = typer.Option(8000, "--port", help="TCP port."),
        time_scale: float = typer.Option(
            1.0,
            "--time-scale",
            min=0.0,
            help="Wall seconds per simulated second (0: answer at once, 0.1: ten times faster).",
        ),
        token: str = typer.Option(
            None, "--token", envvar="SIMFORGE_TOKEN", help="Control-plane token (generated)."
        ),
        task: str = typer.Option(None, "--task", "-t", help="Task of the default session."),
        faults: str = typer.Option(
            None, "--faults", "-f", help="Fault profile of the default session."
        ),
        seed: int = typer.Option(None, "--seed", help="Seed of the default session."),
        max_sessions: int = typer.Option(1000, "--max-sessions", min=1),
        idle_ttl: float = typer.Option(900.0, "--idle-ttl", min=1.0, help="Seconds."),
        max_body: int = typer.Option(1 << 20, "--max-body", min=1024, help="Bytes."),
        header_timeout: float = typer.Option(
            10.0, "--header-timeout", min=0.1,
            help="Seconds a client has to send a request's headers; then 408, connection closed.",
        ),
        body_timeout: float = typer.Option(
            30.0, "--body-timeout", min=0.1,
            help="Seconds a client has to send a request's body once its headers are in.",
        ),
        keep_alive: float = typer.Option(
            75.0, "--keep-alive", min=1.0,
            help="Seconds an idle connection is kept (longer than clients' pools keep one).",
        ),
        ws_compression: bool = typer.Option(
            False, "--ws-compression/--no-ws-compression",
            help="Accept permessage-deflate on WebSockets (/ws): smaller frames, more CPU.",
        ),
        log_level: str = typer.Option("warning", "--log-level"),
        user: str = typer.Option(
            None, "--user", help="Simulated user: scripted or llm:MODEL ($SIMFORGE_USER)."
        ),
    ) -> None:
        """Serve a scenario's tools over HTTP (REST + OpenAPI, MCP, OpenEnv), with sessions."""
        import uvicorn

        from simforge.cli_support import err_console, user_errors
        from simforge.serve.app import create_app
        from simforge.serve.server import server_config
        from simforge.serve.sessions import Limits

        with user_errors():
            limits = Limits(
                max_sessions=max_sessions,
                idle_ttl=idle_ttl,
                max_body_bytes=max_body,
                header_timeout=header_timeout,
                body_timeout=body_timeout,
                keep_alive=keep_alive,
            )
            app = create_app(
                target,
                time_scale=time_scale,
                token=token,
                limits=limits,
                task=task,
                faults=faults,
                seed=seed,
                user=user,
            )
        listener = listen(host, port)
        base = f"http://{host}:{port}"
        err_console.print(
            f"simforge serving [bold]{app.state.manager.loaded.scenario.id}[/] at {base} "
            f"(docs: {base}/docs, MCP: {base}/mcp, OpenEnv: {base}/ws)",
            highlight=False,
        )
        if token is None:
            err_console.print("control-plane token (generated):", highlight=False)
            sys.stdout.write(app.state.token + "\n")
            sys.stdout.flush()
        tune_gc()
        config = server_config(app, host, port, limits, ws_compression=ws_compression,
                               log_level=log_level)
        uvicorn.Server(config).run(sockets=[listener])


def listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound before anything is announced: a port in use is one line and
    exit code 2, not a banner, a token and then uvicorn's error."""
    from simforge.cli_support import err_console

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = exc.strerror or str(exc)
        err_console.print(f"[bold red]error:[/] cannot listen on {host}:{port}: {reason}",
                          highlight=False)
        raise typer.Exit(2) from None
    sock.set_inheritable(True)
    return sock


def tune_gc() -> None:
    """A long-running server keeps every session's recorded calls and world versions: with the
    default thresholds, full collections rescan them all and stall requests (measured with wrk
    on a write tool: p99 137 ms default, 19 ms tuned). Freeze what exists at start (packs, seed
    tables) and make full collections rare.

    Thresholds (700, 4, 35,000). A pause is as long as what the collection walks, and what
    it walks is what survived into its generation: under a write load that is the sandbox's
    record of its last 10,000 calls (three tracked objects a call: the outcome, its result,
    the recorder's turn; rows of plain values are not tracked), which every call passes
    through young and middle collections on its way out. Smaller young and middle generations
    walk the same objects in more, shorter pauses, for about the same total: measured in
    process over 200,000 ``apply_account_credit`` writes, median pauses 0.3 ms (young) and
    2.5-2.7 ms (middle), at most 5 and 7-13, where (10,000, 10, 1000) paused 5.9 and 30 ms
    (32 at most); collector time 390-650 ms against 320 (machine busy: 2-3 us a write). The
    third threshold keeps full collections as rare as before in allocations (one every
    ~100 million net allocations: 700 x 4 x 35,000), since each walks every session's
    tracked objects. (Earlier: (50,000, 50, 1000), then (10,000, 10, 1000) when every
    ``create_ticket`` row carried a tracked list.)
    Then (700, 1, 87,500) (2026-12-07): the middle generation collected after every second
    young collection rather than every fifth. Nothing a write leaves dies there (the record
    keeps it for 10,000 calls), so each object is walked once in a young and once in a middle
    collection whatever the thresholds, and the middle pauses, which every request in flight
    waits through (the p99 of 32 connections), walk 2 young batches instead of 5: in process
    over 60,000 ``apply_account_credit`` writes (a loaded machine), middle pauses median 0.73
    ms against 1.84, collector time 205 ms against 212. The third threshold keeps full
    collections as rare in allocations as before (700 x 2 x 87,500). A write also leaves one
    tracked object fewer: the versions of a seeded row are plain untracked dicts
    (:func:`simforge.world.store._plain`).
    (``gc.freeze()`` every N writes would remove the pauses but is not sound: a session that is
    frozen while alive and deleted later, from the control plane or an OpenEnv connection, is a
    cycle that would never be freed.)
    """
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(700, 1, 87_500)
