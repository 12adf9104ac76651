"""`./lab ui`: the placement page, served by aiohttp on loopback. It only reads the cluster.

    GET  /                   the page (static/: inline-free HTML, JS and CSS served from this package)
    GET  /events             server-sent events: `snapshot` (every node and pod) then `delta` batches, as the
                             watches report changes (state.py; a node's DRA devices with the claims holding
                             them, when the API server serves resource.k8s.io/v1)
    GET  /api/explain        ?namespace=&name=: `./lab explain --json`'s answer, by the same code
    POST /api/whatif         a Pod manifest (YAML) in the body: the same, for the pod as if it were created
    GET  /api/held           the pending pods the scheduler's gates, PreEnqueue, Reserve or Permit plugins hold
                             (explain.held_pods: the Permit ones a what-if, as `./lab explain` says)
    GET  /api/scheduler      the scheduler's replicas, leader and /metrics headline (scheduler_view.py)

Explanations are computed per request from the API (explain_verb), in a worker thread, so they are exactly
what `./lab explain` prints at that moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from labdef.errors import UserError
from labdef.lab import Lab
from labkit import lab_plugins
from labkit.kube import Kube
from labkit.placement.explain import explain_in_cluster, held_pods, load_scheduler_config
from labkit.placement.explain_log import apply_log, last_words
from labkit.placement.explain_points import WOULD_WAIT
from labkit.placement.explain_verb import DEFAULT_NAMESPACE, explain_manifest, parse_what_if
from labkit.ui.scheduler_view import scheduler_state
from labkit.ui.state import DRA_PATH, Change, ClusterState

STATIC = Path(__file__).parent / "static"
BATCH_SECONDS = 0.05  # changes arriving together go out as one delta (a scheduler binds in bursts)
KEEPALIVE_SECONDS = 15.0
MAX_MANIFEST_BYTES = 1 << 20


@dataclass
class Source:
    """Where the page's data comes from: the lab, its cluster, and the scheduler config file if one is given."""
    lab: Lab
    kube: Kube
    scheduler_config: Path | None = None


class Hub:
    """Hands the informers' changes (from their threads) to every open event stream (on the loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queues: set[asyncio.Queue[list[Change]]] = set()

    def listener(self, changes: list[Change]) -> None:
        self.loop.call_soon_threadsafe(self._fan_out, changes)

    def _fan_out(self, changes: list[Change]) -> None:
        for queue in self.queues:
            queue.put_nowait(changes)


def _sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def make_app(source: Source, state: ClusterState) -> web.Application:
    plugins = lab_plugins.registry(source.lab)  # loaded once: the lab's plugins as the scheduler has them
    app = web.Application(client_max_size=MAX_MANIFEST_BYTES)

    async def page(_request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / "index.html")

    async def events(request: web.Request) -> web.StreamResponse:
        hub: Hub = request.app["hub"]
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        queue: asyncio.Queue[list[Change]] = asyncio.Queue()
        hub.queues.add(queue)  # before the snapshot: a change racing it is sent again, never lost
        try:
            await resp.write(_sse("snapshot", state.snapshot()))
            while True:
                try:
                    changes = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    await resp.write(b": keepalive\n\n")
                    continue
                await asyncio.sleep(BATCH_SECONDS)
                while not queue.empty():
                    changes = changes + queue.get_nowait()
                latest = {(kind, key): obj for kind, key, obj in changes}  # the last word on each object
                await resp.write(_sse("delta", [[kind, key, obj] for (kind, key), obj in latest.items()]))
        except ConnectionResetError:  # the page went away
            pass
        finally:
            hub.queues.discard(queue)
        return resp

    def config() -> Any:
        return load_scheduler_config(source.kube, source.lab, source.scheduler_config, plugins)

    def explain_existing(namespace: str, name: str) -> dict[str, Any]:
        explanation = explain_in_cluster(source.kube, namespace, name, config(), source.lab.scheduler.name)
        if explanation.outcome == WOULD_WAIT and explanation.likely_state:
            apply_log(explanation, *last_words(source.kube, source.lab))
        return explanation.as_json()

    def explain_text(text: str) -> dict[str, Any]:
        manifest = parse_what_if(text, "the manifest", None, None, "what-if")
        return explain_manifest(source.kube, manifest, "the manifest", config(),
                                source.lab.scheduler.name).as_json()

    async def answer(work: Callable[[], dict[str, Any]]) -> web.Response:
        try:
            return web.json_response(await asyncio.to_thread(work))
        except UserError as err:  # the message names the field and the fix
            return web.json_response({"error": str(err)}, status=422)

    async def explain(request: web.Request) -> web.Response:
        name = request.query.get("name", "")
        if not name:
            return web.json_response({"error": "name: required (the pod to explain)"}, status=400)
        namespace = request.query.get("namespace") or DEFAULT_NAMESPACE
        return await answer(lambda: explain_existing(namespace, name))

    async def what_if(request: web.Request) -> web.Response:
        text = await request.text()
        if not text.strip():
            return web.json_response({"error": "the manifest is empty: paste or upload a Pod manifest"},
                                     status=400)
        return await answer(lambda: explain_text(text))

    def held_now() -> dict[str, Any]:
        found = held_pods(source.kube, config(), source.lab.scheduler.name)
        waiting = {key: h for key, h in found["pods"].items() if h["outcome"] == WOULD_WAIT}
        if waiting:  # the scheduler's log, when readable, says which of them it holds now
            words, _problem = last_words(source.kube, source.lab)
            for key, h in waiting.items():
                word = words.get(key)
                if word is not None:
                    h["read"] = word.waiting is not None and not word.ended_by_lease
                    if h["read"]:
                        h["node"] = word.waiting[0]
        return found

    async def held(_request: web.Request) -> web.Response:
        return await answer(held_now)

    async def scheduler(_request: web.Request) -> web.Response:
        return web.json_response(await asyncio.to_thread(scheduler_state, source.kube, source.lab))

    app.router.add_get("/", page)
    app.router.add_get("/events", events)
    app.router.add_get("/api/explain", explain)
    app.router.add_post("/api/whatif", what_if)
    app.router.add_get("/api/held", held)
    app.router.add_get("/api/scheduler", scheduler)
    app.router.add_static("/static/", STATIC)

    async def watches(app: web.Application) -> Any:
        app["hub"] = hub = Hub(asyncio.get_running_loop())
        state.listeners.append(hub.listener)
        dra = await asyncio.to_thread(serves_dra, source.kube)
        informers = state.informers(source.kube.client, dra=dra)
        for informer in informers:
            informer.start()
        yield
        for informer in informers:
            await asyncio.to_thread(informer.stop)
        state.listeners.remove(hub.listener)

    app.cleanup_ctx.append(watches)
    return app


def serves_dra(kube: Kube) -> bool:
    """Whether the API server serves resource.k8s.io/v1 (DRA's ResourceSlices and ResourceClaims)."""
    try:
        return kube.get_or_none(DRA_PATH) is not None
    except UserError:
        return False


def serve(source: Source, host: str, port: int, open_browser: bool, echo: Callable[[str], None]) -> None:
    """Serve the page until interrupted; prints the URL once the socket listens. An API server that cannot
    be reached is a KubeError (a UserError) before anything is served."""
    source.kube.get("/version")
    app = make_app(source, ClusterState())

    async def main() -> None:
        # open event streams never end by themselves: give them a second at shutdown, not aiohttp's minute
        runner = web.AppRunner(app, handle_signals=True, shutdown_timeout=1.0)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as err:
            await runner.cleanup()
            raise UserError(f"--port {port}: cannot listen on {host}:{port}: {err.strerror}; pick another with "
                            "--port N (0: any free port)") from None
        bound = runner.addresses[0][1]  # --port 0: the port the system gave
        url = f"http://{'[' + host + ']' if ':' in host else host}:{bound}/"
        echo(f"placement page: {url} (read-only; Ctrl-C stops it)")
        if not ipaddress.ip_address(runner.addresses[0][0]).is_loopback:
            echo(f"warning: --host {host}: the page is reachable from other machines, and it shows the cluster")
        if open_browser:
            webbrowser.open(url)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
