"""Run the Kubernetes API test server by hand:

    python -m kubeapi_testserver --port 8001 --kubeconfig /tmp/kubeapi.conf --nodes 3
    python -m scheduler --config ... --kubeconfig /tmp/kubeapi.conf
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from kubeapi_testserver.server import KubeApiServer


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m kubeapi_testserver", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--kubeconfig", help="write a kubeconfig for this server to this path")
    parser.add_argument("--nodes", type=int, default=0, help="create this many fake Ready nodes node-0..N-1")
    parser.add_argument("--node-cpu", default="4", help="allocatable cpu of each fake node (default 4)")
    parser.add_argument("--node-memory", default="32Gi", help="allocatable memory of each node (default 32Gi)")
    parser.add_argument("--token", help="require this bearer token (default: no auth)")
    parser.add_argument("--history-limit", type=int, default=200_000,
                        help="changes kept for watches before older resourceVersions get 410 (default 200000)")
    parser.add_argument("--bookmark-interval", type=float, default=5.0,
                        help="seconds without events before a BOOKMARK is sent to watches that allow them")
    parser.add_argument("--graceful-pod-deletion", action="store_true",
                        help="mark bound pods Terminating on DELETE instead of removing them at once")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Before anything is announced: a SIGTERM sent as soon as the banner or the kubeconfig appears must stop the
    # server cleanly (exit 0), not kill it.
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = KubeApiServer(args.host, args.port, token=args.token, history_limit=args.history_limit,
                           bookmark_interval=args.bookmark_interval,
                           graceful_pod_deletion=args.graceful_pod_deletion)
    try:
        server.start()
    except OSError as exc:
        print(f"cannot listen on {args.host}:{args.port}: {exc}; pick another --port", file=sys.stderr)
        return 2
    if args.nodes:
        server.add_nodes(args.nodes, cpu=args.node_cpu, memory=args.node_memory)
    print(f"Kubernetes API test server on {server.url} ({args.nodes} nodes)", flush=True)
    if args.kubeconfig:
        print(f"kubeconfig written to {server.write_kubeconfig(args.kubeconfig)}", flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
