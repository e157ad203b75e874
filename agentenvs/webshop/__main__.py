"""``python -m agentenvs.webshop serve``: the Flask shop on 127.0.0.1 (see :mod:`agentenvs.webshop.app`)."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentenvs.webshop", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="start the shop for people at http://HOST:PORT/")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    serve.add_argument("--port", type=int, default=3000)
    serve.add_argument("--num-products", type=int, default=1000, help="size of the generated shop")
    serve.add_argument("--seed", type=int, default=0, help="seed of the generated shop")
    serve.add_argument(
        "--data-path", default=None, help="folder with the official files (instead of the generated shop)"
    )
    serve.add_argument("--human-goals", action="store_true", help="with --data-path: use items_human_ins.json")
    serve.add_argument("--show-attrs", action="store_true", help="offer the Attributes sub-page")
    serve.add_argument("--max-sessions", type=int, default=10_000, help="most sessions held at once")
    serve.add_argument(
        "--max-sessions-per-client",
        type=int,
        default=None,
        help="most sessions one client address holds at once (default: half of --max-sessions for a remote "
        "address, all of them for a loopback one, which every local client shares)",
    )
    serve.add_argument(
        "--session-idle",
        type=float,
        default=None,
        help="seconds after its last request that a session may give way to a new one (default: 30 minutes)",
    )
    serve.add_argument(
        "--request-timeout",
        type=float,
        default=None,
        help="seconds a client may stay silent mid-request before it is disconnected (default: 10)",
    )
    args = parser.parse_args(argv)

    from agentenvs.webshop.app import SESSION_IDLE_S, create_app
    from agentenvs.webshop.engine import WebShopEngine
    from agentenvs.webshop.env import official_files
    from agentenvs.webshop.server import REQUEST_TIMEOUT_S, make_shop_server

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
    print(
        f"WebShop: {len(engine.products)} products, {len(engine.goals)} goals; open http://{args.host}:{args.port}/",
        file=sys.stderr,
    )
    timeout = REQUEST_TIMEOUT_S if args.request_timeout is None else args.request_timeout
    server = make_shop_server(app, args.host, args.port, request_timeout_s=timeout)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
