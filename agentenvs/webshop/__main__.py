"""``python -m agentenvs.webshop serve``: the Flask shop on 127.0.0.1 (see :mod:`agentenvs.webshop.app`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import tyro

PROG = "python -m agentenvs.webshop"


@dataclass
class ServeArgs:
    """Start the shop for people at http://HOST:PORT/."""

    host: str = "127.0.0.1"
    """Address to listen on (default: loopback only)."""
    port: int = 3000
    """Port to listen on."""
    num_products: int = 1000
    """Size of the generated shop."""
    seed: int = 0
    """Seed of the generated shop."""
    data_path: str | None = None
    """Folder with the official files (instead of the generated shop)."""
    human_goals: bool = False
    """With --data-path: use items_human_ins.json."""
    show_attrs: bool = False
    """Offer the Attributes sub-page."""
    max_sessions: int = 10_000
    """Most sessions held at once."""
    max_sessions_per_client: int | None = None
    """Most sessions one client address holds at once (None: half of --max-sessions for a remote
    address, all of them for a loopback one, which every local client shares)."""
    session_idle: float | None = None
    """Seconds after its last request that a session may give way to a new one (None: 30 minutes)."""
    request_timeout: float | None = None
    """Seconds a client may stay silent mid-request before it is disconnected (None: 10)."""


def parse(argv: Sequence[str]) -> ServeArgs:
    """Parses ``serve [flags]``; a bad flag or value exits with status 2 and the reason."""
    return tyro.extras.subcommand_cli_from_dict(
        {"serve": ServeArgs}, prog=PROG, description=__doc__.splitlines()[0], args=list(argv)
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)

    from agentenvs.webshop.app import SESSION_IDLE_S, create_app
    from agentenvs.webshop.engine import WebShopEngine
    from agentenvs.webshop.env import official_files
    from agentenvs.webshop.server import REQUEST_TIMEOUT_S, make_shop_server

    try:  # a bad argument is said as a bad flag is, not as a traceback
        if args.data_path is None:
            engine = WebShopEngine.generated(args.num_products, args.seed, show_attrs=args.show_attrs)
        else:
            products, attributes, human = official_files(
                args.data_path, None, None, "human" if args.human_goals else "synthetic"
            )
            engine = WebShopEngine.from_files(products, attributes, human, seed=args.seed, show_attrs=args.show_attrs)
        idle_s = SESSION_IDLE_S if args.session_idle is None else args.session_idle
        app = create_app(
            engine,
            seed=args.seed,
            max_sessions=args.max_sessions,
            session_idle_s=idle_s,
            max_sessions_per_client=args.max_sessions_per_client,
        )
        timeout = REQUEST_TIMEOUT_S if args.request_timeout is None else args.request_timeout
        server = make_shop_server(app, args.host, args.port, request_timeout_s=timeout)
    except (ValueError, OSError) as error:
        print(f"{PROG} serve: error: {error}", file=sys.stderr)
        return 2
    print(  # the port the server got (port 0 picks a free one)
        f"WebShop: {len(engine.products)} products, {len(engine.goals)} goals; "
        f"open http://{args.host}:{server.server_port}/",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
