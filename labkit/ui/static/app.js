// The placement page: every node as a cell of the overview grid (views.js), coloured by the share of a
// resource its pods request (or of its DRA devices held by claims), grouped by a label; the selected node's pods and details; the pending pods
// grouped by why they wait; search over nodes and pods. Kept current by the server's event stream (/events:
// a snapshot, then deltas); a selected pod or a what-if manifest explained by /api/*.
"use strict";

const V = KubelabViews;
const nodes = new Map();  // name -> node summary (labkit/ui/state.py node_summary)
const pods = new Map();   // "ns/name" -> pod summary (pod_summary)
const view = {resource: "cpu", groupBy: V.ZONE_LABEL, nodeFilter: "", podFilter: ""};
const openReasons = new Set();  // the pending groups the user expanded
const MAX_RESULTS = 100;  // pods listed for a search
// Labels every kubeadm node carries, left out of a node's details (its role and zone have their own places).
const ROUTINE_LABELS = ["kubernetes.io/", "beta.kubernetes.io/", "node.kubernetes.io/", "topology.kubernetes.io/",
  "node-role.kubernetes.io"];
let selected = null;      // the selected pod's key
let selectedNode = null;  // the node whose details are shown
let held = {};            // "ns/name" -> what holds a pending pod (/api/held: gates, PreEnqueue, Permit what-if)
let drawQueued = false;
let labelKeys = "";       // the group-by choices last offered
let shown = null;         // the explanation on screen and its title, drawn again when everyNode changes
let everyNode = false;    // the explain table lists every node, not one row per set of identical reasons

const esc = V.esc;
const $ = (id) => document.getElementById(id);

function mib(bytes) { return `${Math.round(bytes / 1048576)}Mi`; }

function bar(label, used, total, fmt) {
  const pct = total > 0 ? Math.min(100, (100 * used) / total) : 0;
  return `<div class="bar${pct >= 100 ? " full" : ""}" title="${label}: requested ${fmt(used)} of ${fmt(total)} allocatable">` +
    `<i style="width:${pct}%"></i><span>${label} ${fmt(used)} / ${fmt(total)}</span></div>`;
}

// How the pending list marks a pod its gates or plugins hold (the Permit ones are explain's what-if).
function heldText(h) {
  if (h.outcome === "gated") return `gated: ${h.plugin}`;
  if (h.outcome === "would_wait") {
    if (h.read === true) return `waiting at Permit: ${h.plugin} (from its log)`;
    if (h.read === false) return `would wait at Permit: ${h.plugin} (what-if; not held now, says its log)`;
    return `waiting at Permit: ${h.plugin} (inferred)`;
  }
  return `rejected at ${h.point}: ${h.plugin}`;
}

// Why a pending pod waits, one line: what holds it, else the scheduler's last FailedScheduling message.
function reasonOf(p) {
  const h = held[p.key];
  if (h) return heldText(h);
  return p.failed || V.NO_REASON;
}

function podButton(p, extra) {
  const cls = ["pod"];
  const h = !p.node && extra !== "nominee" ? held[p.key] : undefined;
  if (h) cls.push(h.outcome === "would_wait" ? "waiting" : h.outcome);
  if (p.preempted) cls.push("preempted");
  if (p.key === selected) cls.push("selected");
  if (extra === "nominee") cls.push("nominee");
  let text = `${esc(p.namespace)}/<b>${esc(p.name)}</b> <small>${esc(p.scheduler)} · prio ${p.priority}`;
  if (p.preempted) text += " · preempted";
  if (extra === "nominee") text += " · nominated here";
  if (extra === "result") text += p.node ? ` · on ${esc(p.node)}` : " · pending";
  text += "</small>";
  if (!p.node && extra !== "nominee") {  // on its nominated node it is only named
    if (p.nominated) text += `<small> → nominated ${esc(p.nominated)}</small>`;
    if (h) text += `<span class="held" title="${esc(h.reason)}">${esc(heldText(h))}</span>`;
  }
  const mark = (h ? ` data-held="${esc(h.outcome)}"` : "") + ` data-on="${esc(p.node)}"`;
  return `<button type="button" class="${cls.join(" ")}" data-pod="${esc(p.key)}"${mark}>${text}</button>`;
}

function nodeMatches(n, text) {
  if (!text) return true;
  if (n.name.toLowerCase().includes(text)) return true;
  return Object.entries(n.labels).some(([k, v]) => `${k}=${v}`.toLowerCase().includes(text));
}

function podMatches(p, text) {
  return !text || p.key.toLowerCase().includes(text);
}

function drawDetail(n, onNode, nominees) {
  const el = $("node-detail");
  if (!n) {
    el.removeAttribute("data-node");
    el.className = "";
    setHtml(el, `<p class="hint">Click a node in the grid for its pods and details.</p>`);
    return;
  }
  const cpu = onNode.reduce((s, p) => s + p.cpu, 0), mem = onNode.reduce((s, p) => s + p.memory, 0);
  const labels = Object.entries(n.labels).filter(([k]) => !ROUTINE_LABELS.some((r) => k.startsWith(r)))
    .map(([k, v]) => `${esc(k)}=${esc(v)}`).join(", ");
  el.dataset.node = n.name;
  el.className = n.unschedulable ? "node cordoned" : "node";
  setHtml(el, `<h3>${esc(n.name)}</h3><div class="meta">${esc(n.role)}` +
    (n.zone ? ` · zone ${esc(n.zone)}` : "") + (n.unschedulable ? " · <b>cordoned</b>" : "") +
    (n.ready === false ? " · <b>NotReady</b>" : "") + `</div>` +
    (labels ? `<div class="meta">${labels}</div>` : "") +
    n.taints.map((t) => `<div class="meta taint">taint ${esc(t)}</div>`).join("") +
    bar("cpu", cpu, n.allocatable.cpu, (m) => `${m}m`) + bar("mem", mem, n.allocatable.memory, mib) +
    bar("pods", onNode.length, n.allocatable.pods, String) +
    ((n.devices || []).length ? bar("devices", n.requested.devices, n.allocatable.devices, String) : "") +
    V.devicesHtml(n.devices) +
    `<div class="pods">` + onNode.map((p) => podButton(p)).join("") +
    nominees.map((p) => podButton(p, "nominee")).join("") + `</div>`);
}

// "devices in use" is offered once some node has DRA devices (the cluster has ResourceSlices).
function drawResourceChoices(shown) {
  const option = $("resource").querySelector('option[value="devices"]');
  const any = shown.some((n) => n.allocatable.devices > 0) || [...nodes.values()].some((n) => (n.devices || []).length);
  if (any && !option) {
    $("resource").insertAdjacentHTML("beforeend", `<option value="devices">devices in use</option>`);
  } else if (!any && option) {
    option.remove();
    if (view.resource === "devices") { view.resource = "cpu"; $("resource").value = "cpu"; }
  }
}

function drawGroupChoices() {
  const keys = [...new Set([...nodes.values()].flatMap((n) => Object.keys(n.labels)))].sort(V.naturalCompare);
  const joined = keys.join("\n");
  if (joined === labelKeys) return;
  labelKeys = joined;
  const choices = [[V.ZONE_LABEL, "zone"], ["", "nothing (one grid)"],
    ...keys.filter((k) => k !== V.ZONE_LABEL).map((k) => [k, k])];
  $("group-by").innerHTML = choices.map(([k, label]) =>
    `<option value="${esc(k)}"${k === view.groupBy ? " selected" : ""}>${esc(label)}</option>`).join("");
}

// Elements are replaced only when what they show changed, and the grid's cells are updated in place while the
// same nodes are shown in the same groups: a click is never lost to a redraw between press and release.
const drawnHtml = new WeakMap();  // element -> the HTML last put in it
function setHtml(el, html) {
  if (drawnHtml.get(el) !== html) { el.innerHTML = html; drawnHtml.set(el, html); }
}

let gridShape = "";
function drawGrid(shown, options) {
  const layout = V.gridLayout(shown, options.groupBy);
  const shape = JSON.stringify([options.groupBy, layout.map(([v, members]) => [v, members.map((n) => n.name)])]);
  if (shape !== gridShape) {
    $("grid").innerHTML = V.gridHtml(shown, options);
    gridShape = shape;
    return;
  }
  const cells = new Map([...$("grid").querySelectorAll("button.kv-cell")].map((c) => [c.dataset.cell, c]));
  for (const n of shown) {
    const cell = cells.get(n.name), look = V.cellLook(n, options.resource, options);
    if (cell.className !== look.className) cell.className = look.className;
    if (cell.dataset.share !== look.share) cell.dataset.share = look.share;
    if (cell.title !== look.title) cell.title = look.title;
    if (cell.dataset.bg !== look.background) {
      cell.style.background = look.background;
      cell.style.color = look.color;
      cell.dataset.bg = look.background;
    }
  }
}

function draw() {
  drawQueued = false;
  const byNode = new Map(), nominated = new Map(), pending = [];
  const podText = view.podFilter.toLowerCase(), nodeText = view.nodeFilter.toLowerCase();
  const results = [], hits = new Set();
  for (const p of pods.values()) {
    if (podText && podMatches(p, podText)) {
      if (results.length < MAX_RESULTS) results.push(p);
      if (p.node) hits.add(p.node);
    }
    if (p.node) { if (!byNode.has(p.node)) byNode.set(p.node, []); byNode.get(p.node).push(p); continue; }
    pending.push(p);
    if (p.nominated) { if (!nominated.has(p.nominated)) nominated.set(p.nominated, []); nominated.get(p.nominated).push(p); }
  }
  const shown = [];
  for (const n of nodes.values()) {
    if (!nodeMatches(n, nodeText)) continue;
    const on = byNode.get(n.name) || [];
    let cpu = 0, memory = 0;
    for (const p of on) { cpu += p.cpu; memory += p.memory; }
    const devices = n.devices || [];
    shown.push({...n, requested: {cpu, memory, pods: on.length, devices: devices.filter((d) => d.claim).length},
                allocatable: {...n.allocatable, devices: devices.length}});
  }
  drawGroupChoices();
  drawResourceChoices(shown);
  drawGrid(shown, {resource: view.resource, groupBy: view.groupBy, selected: selectedNode,
                   hits: podText ? hits : undefined});
  $("grid-count").textContent = nodeText ? `${shown.length} of ${nodes.size} nodes` : `${nodes.size} nodes`;
  setHtml($("legend"), V.legendHtml(view.resource));
  const waiting = pending.filter((p) => podMatches(p, podText)).map((p) => ({...p, reason: reasonOf(p)}));
  setHtml($("pending"), `<h3>Pending (${waiting.length}${podText ? ` of ${pending.length}` : ""})</h3>` +
    V.pendingHtml(V.pendingGroups(waiting), {podHtml: (p) => podButton(p), open: openReasons}));
  setHtml($("pod-results"), !podText ? "" : `<h3>Pods matching “${esc(view.podFilter)}”` +
    ` (${results.length}${results.length === MAX_RESULTS ? "+" : ""})</h3>` +
    (results.sort((a, b) => V.naturalCompare(a.key, b.key)).map((p) => podButton(p, "result")).join("") || "none"));
  const byName = (a, b) => V.naturalCompare(a.key, b.key);
  drawDetail(shown.find((n) => n.name === selectedNode) || nodes.get(selectedNode),
             (byNode.get(selectedNode) || []).sort(byName), nominated.get(selectedNode) || []);
  $("counts").textContent = `${nodes.size} nodes · ${pods.size} pods · ${pending.length} pending`;
  // when the first snapshot was on screen, in ms from navigation start (the benchmark reads it)
  if (document.body.dataset.loaded && !document.body.dataset.drawnAt) document.body.dataset.drawnAt = performance.now();
}

function queueDraw() {
  if (!drawQueued) { drawQueued = true; setTimeout(draw, 0); }
}

function apply(kind, key, obj) {
  const store = kind === "node" ? nodes : pods;
  if (obj) store.set(key, obj); else store.delete(key);
}

function connect() {
  const stream = new EventSource("/events");
  stream.addEventListener("open", () => { $("live").textContent = "live"; $("live").className = "live on"; });
  stream.addEventListener("error", () => { $("live").textContent = "reconnecting"; $("live").className = "live off"; });
  stream.addEventListener("snapshot", (e) => {
    const data = JSON.parse(e.data);
    nodes.clear(); pods.clear();
    for (const n of data.nodes) nodes.set(n.name, n);
    for (const p of data.pods) pods.set(p.key, p);
    document.body.dataset.loaded = "true";
    queueDraw();
  });
  stream.addEventListener("delta", (e) => {
    for (const [kind, key, obj] of JSON.parse(e.data)) apply(kind, key, obj);
    queueDraw();
  });
}

// Short column names as `./lab explain` makes them (explain_view.abbreviations): a plugin's capitals, or,
// where two plugins share them, the first two letters of each word.
function abbreviations(plugins) {
  const caps = new Map(plugins.map((p) => [p, (p.match(/[A-Z]/g) || [p]).join("")]));
  const seen = [...caps.values()];
  return new Map(plugins.map((p) => [p, seen.filter((c) => c === caps.get(p)).length > 1
    ? (p.match(/[A-Z][a-z]*/g) || [p]).map((w) => w.slice(0, 2)).join("") : caps.get(p)]));
}

// -- explain -------------------------------------------------------------------------------------------
function scoreCell(n, plugin) {
  if (!(plugin in n.scores)) return `<td class="score">-</td>`;
  const norm = n.normalized_scores[plugin];
  const light = 95 - Math.round(norm * 0.35);
  return `<td class="score" style="background:hsl(120,45%,${light}%)" data-plugin="${esc(plugin)}">${n.scores[plugin]}` +
    `<small>${n.raw_scores[plugin]}→${norm}</small></td>`;
}

// The table's rows, as `./lab explain` makes them (explain_view.verdict_rows): each feasible node its own,
// failing nodes with identical reasons together at the place of the first of them (everyNode: one per node).
function verdictRows(list, everyNode) {
  const rows = [], same = new Map();
  for (const n of list) {
    if (n.fits || everyNode) { rows.push([n]); continue; }
    const key = JSON.stringify(n.reasons);
    if (!same.has(key)) { same.set(key, []); rows.push(same.get(key)); }
    same.get(key).push(n);
  }
  return rows;
}

function showExplanation(x, title) {
  shown = [x, title];
  const plugins = Object.keys(x.weights).filter((p) => x.nodes.some((n) => n.raw_scores[p] || n.normalized_scores[p]));
  const zero = Object.keys(x.weights).filter((p) => !plugins.includes(p));
  const names = abbreviations(Object.keys(x.weights)), short = (p) => names.get(p);
  let html = `<h2>${esc(title)}</h2><div>scheduler ${esc(x.scheduler)} · config: ${esc(x.config_source)}</div>` +
    `<div id="verdict"><b>verdict now:</b> ${esc(x.message)}</div>`;
  if (x.bound_to) html += `<div>bound to ${esc(x.bound_to)}; explained as if it were not</div>`;
  html += pointsHtml(x) + missesHtml(x) + devicesExplainHtml(x);
  html += `<table class="explain" id="explain-table"><thead><tr><th>node</th><th>pods</th><th>filters</th>` +
    plugins.map((p) => `<th title="${esc(p)} ×${x.weights[p]}">${esc(short(p))}</th>`).join("") +
    `<th>total</th></tr></thead><tbody>`;
  for (const group of verdictRows(x.nodes, everyNode)) {
    const n = group[0], names = group.map((g) => g.node).sort(V.naturalCompare);
    const tags = (n.node === x.chosen ? `<span class="tag">chosen</span>` : "") +
      (x.would_choose.includes(n.node) && x.would_choose.length > 1 ? `<span class="tag tied">tied best</span>` : "");
    const name = group.length === 1 ? esc(n.node)
      : `${group.length} nodes: ${names.slice(0, 3).map(esc).join(", ")}${group.length > 3 ? ", …" : ""}`;
    const counts = group.map((g) => g.pods), low = Math.min(...counts), high = Math.max(...counts);
    html += `<tr class="${n.node === x.chosen ? "chosen" : ""}" data-node="${esc(n.node)}" data-fits="${n.fits}" ` +
      `data-count="${group.length}" data-nodes="${esc(JSON.stringify(names))}" ` +
      `data-total="${n.total === null ? "" : n.total}" data-reasons="${esc(JSON.stringify(n.reasons))}">` +
      `<td>${name}${tags}</td><td>${low === high ? low : `${low}-${high}`}</td>` +
      (n.fits ? `<td class="pass">fits</td>` : `<td class="fail">${n.reasons.map(esc).join("<br>")}</td>`) +
      plugins.map((p) => scoreCell(n, p)).join("") + `<td>${n.total === null ? "-" : n.total}</td></tr>`;
  }
  const together = x.nodes.length - verdictRows(x.nodes, false).length;
  if (together > 0 || everyNode) {
    html += `<tr><td colspan="${4 + plugins.length}"><button type="button" id="explain-every" class="link">` +
      (everyNode ? "put nodes failing for the same reasons in one row" : "list every node") + `</button></td></tr>`;
  }
  html += `</tbody></table><div class="notes">score cells: weighted score, under it raw→normalised (0..100); ` +
    plugins.map((p) => `${esc(short(p))} = ${esc(p)} ×${x.weights[p]}`).join(", ") +
    (zero.length ? `; 0 on every node: ${zero.map(esc).join(", ")}` : "") + `</div>` +
    x.notes.map((n) => `<div class="notes">note: ${esc(n)}</div>`).join("");
  $("explain").innerHTML = html;
  $("explain").dataset.pod = x.pod;
}

// For each resource no node has enough of: what the pod asks and the most any node has free (explain_misses).
function missesHtml(x) {
  if (!x.misses || !x.misses.length) return "";
  return `<div id="misses">` + x.misses.map((m) => `<div class="miss" data-resource="${esc(m.resource)}" ` +
    `data-asked="${esc(m.asked_text)}" data-most-free="${esc(m.most_free_text)}" data-node="${esc(m.most_free_node)}">` +
    `<b>${esc(m.resource)}:</b> the pod asks ${esc(m.asked_text)}; ${esc(m.summary)}</div>`).join("") + `</div>`;
}

// A pod with DRA claims (explain's `devices`): what its allocated claims hold, and each node's devices with
// kubelab's own detail line (kube-scheduler says only "cannot allocate all claims").
function devicesExplainHtml(x) {
  const d = x.devices;
  if (!d) return "";
  let html = `<div id="explain-devices">` + d.claims.map((c) => `<div class="claim" data-claim="${esc(c.claim)}" ` +
    `data-allocated="${c.allocated}"><b>claim ${esc(c.claim)}</b> ` + (c.allocated
      ? `holds ${c.holds.map((h) => esc(`${h.driver}/${h.pool}/${h.device}`)).join(", ") || "no devices"}`
      : "is not allocated yet") + `</div>`).join("");
  if (d.problem) html += `<div class="fail">${esc(d.problem)}</div>`;
  if (d.nodes.length) {
    html += `<details><summary>devices per node <small>(${esc(d.source)})</small></summary>` +
      d.nodes.map((n) => `<div class="device-node" data-node="${esc(n.node)}">${esc(n.node)}: ${esc(n.detail)}</div>`)
        .join("") + `</details>`;
  }
  return html + `</div>`;
}

// What the points around the filters decided (explain's `outcome`, `points`, `likely_state`, `inferred`).
function pointsHtml(x) {
  const pt = x.points;
  if (!pt || pt.outcome === "would_bind") return "";
  let html = `<div id="points" data-outcome="${esc(pt.outcome)}" data-plugin="${esc(pt.plugin)}">`;
  if (pt.outcome === "gated") {
    html += `<b>gated at ${esc(pt.point)}</b> by ${esc(pt.plugin)}: ${esc(pt.reason)}`;
  } else if (pt.outcome === "would_wait") {
    html += `<b>would wait at Permit</b> on ${esc(pt.node)}:<ul>` + pt.waits.map((w) =>
      `<li data-plugin="${esc(w.plugin)}">${esc(w.plugin)}, up to ${w.timeout}s${w.reason ? ": " + esc(w.reason) : ""}</li>`).join("") + "</ul>";
  } else {
    html += `<b>would be rejected at ${esc(pt.point)}</b> by ${esc(pt.plugin)} on ${esc(pt.node)}: ${esc(pt.reason)}`;
  }
  if (pt.refused_calls.length) html += `<div class="notes">API calls refused (explain changes nothing): ${pt.refused_calls.map(esc).join(", ")}</div>`;
  html += "</div>";
  if (x.likely_state) {
    html += `<div id="likely"><b>likely now:</b> ${esc(x.likely_state)}` +
      (x.inferred ? `<div class="inferred">${esc(x.inferred)}</div>` : "") +
      (x.read_from ? `<div class="inferred">read from ${esc(x.read_from)}</div>` : "") + "</div>";
  }
  return html;
}

function showError(message, where) {
  $("explain").innerHTML = `<h2>${esc(where)}</h2><div class="error" id="explain-error">${esc(message)}</div>`;
}

async function fetchJson(url, options) {
  try {
    const resp = await fetch(url, options);
    const body = await resp.json();
    return resp.ok ? [body, null] : [null, body.error || `HTTP ${resp.status}`];
  } catch (err) {
    return [null, `the ui server did not answer: ${err}`];
  }
}

async function explainPod(key) {
  selected = key;
  queueDraw();
  $("explain").innerHTML = `<h2>why ${esc(key)}</h2><p class="hint">computing…</p>`;
  const [ns, name] = key.split("/");
  const [x, err] = await fetchJson(`/api/explain?namespace=${encodeURIComponent(ns)}&name=${encodeURIComponent(name)}`);
  if (selected !== key) return;
  if (err) showError(err, `why ${key}`); else showExplanation(x, `why ${x.pod}`);
}

async function whatIf() {
  const text = $("whatif-text").value;
  $("explain").innerHTML = `<h2>what if</h2><p class="hint">computing…</p>`;
  const [x, err] = await fetchJson("/api/whatif", {method: "POST", body: text, headers: {"Content-Type": "application/yaml"}});
  if (err) showError(err, "what if: refused"); else showExplanation(x, `what if ${x.pod} were created`);
}

// -- pending pods held by gates, PreEnqueue or Permit ---------------------------------------------------
async function heldPods() {
  const [h, err] = await fetchJson("/api/held");
  if (err) return;  // the selected pod's explanation says why
  const before = held;
  held = h.pods;
  const changed = new Set([...Object.keys(before), ...Object.keys(held)].filter(
    (k) => JSON.stringify(before[k]) !== JSON.stringify(held[k])));
  if (changed.size) queueDraw();
}

// -- the scheduler -------------------------------------------------------------------------------------
async function schedulerState() {
  const [s, err] = await fetchJson("/api/scheduler");
  const el = $("scheduler");
  if (err) { el.textContent = err; return; }
  let html = `scheduler ${esc(s.namespace)}/${esc(s.name)}: `;
  html += s.replicas.length ? s.replicas.map((r) => r === s.leader ? `<b>${esc(r)} (leader)</b>` : esc(r)).join(", ") : "no replica";
  if (s.problem) html += ` · <span title="${esc(s.problem)}">${esc(s.problem)}</span>`;
  if (s.metrics) html += " · " + Object.entries(s.metrics).map(([k, v]) => `<span class="fig">${esc(k)} ${v}</span>`).join("");
  else if (s.metrics_problem) html += ` · <span title="${esc(s.metrics_problem)}">metrics not reachable</span>`;
  html += ` · logs: <code>${esc(s.logs)}</code>`;
  el.innerHTML = html;
}

document.addEventListener("DOMContentLoaded", () => {
  document.body.addEventListener("click", (e) => {
    const button = e.target.closest("button.pod");
    if (button) { explainPod(button.dataset.pod); return; }
    if (e.target.id === "explain-every" && shown) { everyNode = !everyNode; showExplanation(...shown); return; }
    const cell = e.target.closest("#grid button.kv-cell");
    if (cell) { selectedNode = cell.dataset.cell; queueDraw(); }
  });
  // a pending group's open state survives the redraws
  $("pending").addEventListener("toggle", (e) => {
    const reason = e.target.dataset.reason;
    if (reason === undefined) return;
    if (e.target.open) openReasons.add(reason); else openReasons.delete(reason);
  }, true);
  $("resource").addEventListener("change", (e) => { view.resource = e.target.value; queueDraw(); });
  $("group-by").addEventListener("change", (e) => { view.groupBy = e.target.value; queueDraw(); });
  $("node-filter").addEventListener("input", (e) => { view.nodeFilter = e.target.value.trim(); queueDraw(); });
  $("pod-filter").addEventListener("input", (e) => { view.podFilter = e.target.value.trim(); queueDraw(); });
  $("whatif-go").addEventListener("click", whatIf);
  $("whatif-file").addEventListener("change", async (e) => {
    const file = e.target.files[0];
    if (file) { $("whatif-text").value = await file.text(); whatIf(); }
  });
  connect();
  schedulerState();
  heldPods();
  setInterval(schedulerState, 5000);
  setInterval(heldPods, 3000);
});
