// Placement views as plain functions of data, no DOM and nothing fetched: the live page (app.js) and static
// reports (labkit/ui/overview.py inlines this file) draw the same pieces with them.
//
//   naturalCompare(a, b)          node-2 before node-10 (labkit/natural.py natural_key: the same rule)
//   gridHtml(nodes, options)      every node as one cell coloured by its requested share of a resource
//                                 (or, "devices", its DRA devices held by claims),
//                                 grouped by a label's value (default topology.kubernetes.io/zone);
//                                 gridLayout and cellLook: its groups and a cell's look, to update in place
//   legendHtml(resource)          what the colours mean
//   pendingGroups(pods)           pending pods grouped by their `reason`, the biggest group first
//   pendingHtml(groups, options)  one line per reason with its count, its pods in an expandable list
//
// A node: {name, labels: {key: value}, allocatable: {cpu, memory, pods[, devices]}, requested: {...},
// unschedulable, ready, taints} (cpu in millicores, memory in bytes, pods a count; ready true/false/null;
// taints as "key=value:Effect" strings; the last three optional; devices: published and held by claims).
// Up to 60 nodes, cells carry their names.
//   devicesHtml(devices)          a node's DRA devices as a table: driver, pool, device, attributes, claim, pods
// A pending pod: {key: "namespace/name", reason: "why it waits"} (other fields are passed to podHtml).
"use strict";

var KubelabViews = (() => {  // var: a report that inlines this file twice stays valid
  const ZONE_LABEL = "topology.kubernetes.io/zone";
  const RESOURCES = ["cpu", "memory", "pods"];
  const NO_REASON = "no scheduling attempt reported yet";
  const NAMED_UP_TO = 60;  // a grid of this many nodes or fewer writes each node's name in its cell
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));

  function compareDigits(x, y) {
    const a = x.replace(/^0+(?=.)/, ""), b = y.replace(/^0+(?=.)/, "");
    if (a.length !== b.length) return a.length - b.length;
    return a < b ? -1 : a > b ? 1 : 0;
  }

  // Runs of digits compare as numbers, other runs as text, a number before text; equal names as numbers
  // (node-1, node-01) by their text.
  function naturalCompare(a, b) {
    const ra = String(a).match(/[0-9]+|[^0-9]+/g) || [], rb = String(b).match(/[0-9]+|[^0-9]+/g) || [];
    for (let i = 0; i < Math.min(ra.length, rb.length); i++) {
      const x = ra[i], y = rb[i], dx = /^[0-9]/.test(x), dy = /^[0-9]/.test(y);
      if (dx && dy) {
        const d = compareDigits(x, y);
        if (d) return d;
      } else if (dx !== dy) {
        return dx ? -1 : 1;
      } else if (x !== y) {
        return x < y ? -1 : 1;
      }
    }
    if (ra.length !== rb.length) return ra.length - rb.length;
    return a < b ? -1 : a > b ? 1 : 0;
  }

  function amount(resource, value) {
    if (resource === "cpu") return `${+(value / 1000).toFixed(3)}`;
    if (resource === "memory") {
      for (const [unit, size] of [["Ti", 2 ** 40], ["Gi", 2 ** 30], ["Mi", 2 ** 20], ["Ki", 2 ** 10]]) {
        if (Math.abs(value) >= size) return `${+(value / size).toFixed(1)}${unit}`;
      }
    }
    return String(value);
  }

  function share(node, resource) {
    const total = node.allocatable[resource] || 0, used = node.requested[resource] || 0;
    if (total <= 0) return used > 0 ? 1 : 0;
    return used / total;
  }

  function colour(s) {  // light blue (empty) to dark blue; red when nothing is left
    if (s >= 1) return "#c62828";
    return `hsl(212, 70%, ${Math.round(94 - 56 * Math.max(0, s))}%)`;
  }

  // A cell's class, colour, tooltip and share: cellHtml's, and what a page updating cells in place sets.
  function cellLook(n, resource, options) {
    const s = share(n, resource);
    const cls = ["kv-cell"];
    if (n.unschedulable) cls.push("cordoned");
    if (n.ready === false) cls.push("notready");
    if (n.taints && n.taints.some((t) => !t.endsWith(":PreferNoSchedule"))) cls.push("tainted");
    if (options.selected === n.name) cls.push("selected");
    if (options.hits && options.hits.has(n.name)) cls.push("hit");
    const title = `${n.name}: ${resource} ${amount(resource, n.requested[resource] || 0)} of ` +
      `${amount(resource, n.allocatable[resource] || 0)} ${resource === "devices" ? "in use" : "requested"} ` +
      `(${Math.round(100 * s)}%)` +
      (n.unschedulable ? ", cordoned" : "") + (n.ready === false ? ", NotReady" : "") +
      (n.taints && n.taints.length ? `, taints ${n.taints.join(", ")}` : "");
    return {className: cls.join(" "), background: colour(s), color: s >= 0.6 ? "#fff" : "#111", title,
            share: s.toFixed(3)};
  }

  function cellHtml(n, resource, options, named) {
    const look = cellLook(n, resource, options);
    return `<button type="button" class="${look.className}" data-cell="${esc(n.name)}" data-share="${look.share}" ` +
      `style="background:${look.background};color:${look.color}" title="${esc(look.title)}">` +
      `${named ? esc(n.name) : ""}</button>`;
  }

  // The cells gridHtml draws, group by group: [[group value, [node, ...]], ...].
  function gridLayout(nodes, groupBy) {
    const groups = new Map();
    for (const n of [...nodes].sort((a, b) => naturalCompare(a.name, b.name))) {
      const value = groupBy ? ((n.labels || {})[groupBy] ?? "") : "";
      if (!groups.has(value)) groups.set(value, []);
      groups.get(value).push(n);
    }
    return [...groups.keys()].sort((a, b) => (a === "") - (b === "") || naturalCompare(a, b))
      .map((v) => [v, groups.get(v)]);
  }

  function groupTitle(groupBy, value) {
    if (!groupBy) return "all nodes";
    return value === "" ? `no ${esc(groupBy)} label` : `${esc(groupBy)}=${esc(value)}`;
  }

  // options: resource ("cpu" | "memory" | "pods"), groupBy (a label key; "" for one group), selected (a node
  // name), hits (a Set of node names to mark).
  function gridHtml(nodes, options = {}) {
    const resource = options.resource || "cpu";
    const groupBy = options.groupBy === undefined ? ZONE_LABEL : options.groupBy;
    const named = nodes.length <= NAMED_UP_TO;
    return gridLayout(nodes, groupBy).map(([v, members]) =>
      `<section class="kv-group" data-group="${esc(v)}"><h4>${groupTitle(groupBy, v)} ` +
      `<small>${members.length} node${members.length === 1 ? "" : "s"}</small></h4>` +
      `<div class="kv-cells${named ? " named" : ""}">` +
      members.map((n) => cellHtml(n, resource, options, named)).join("") + "</div></section>").join("");
  }

  function legendHtml(resource) {
    const steps = [0, 0.25, 0.5, 0.75, 1].map((s) =>
      `<span class="kv-cell" style="background:${colour(s)}"></span>${s === 1 ? "full" : `${100 * s}%`}`).join(" ");
    const what = resource === "devices" ? "DRA devices held by claims, of those published" :
      `${esc(resource)} requested of allocatable`;
    return `<span class="kv-legend">${what}: ${steps} ` +
      `<span class="kv-cell cordoned"></span>cordoned <span class="kv-cell tainted"></span>tainted ` +
      `<span class="kv-cell notready"></span>NotReady</span>`;
  }

  function pendingGroups(pods) {
    const groups = new Map();
    for (const p of pods) {
      const reason = p.reason || NO_REASON;
      if (!groups.has(reason)) groups.set(reason, []);
      groups.get(reason).push(p);
    }
    return [...groups.entries()].map(([reason, members]) => ({
      reason, pods: members.sort((a, b) => naturalCompare(a.key, b.key)),
    })).sort((a, b) => b.pods.length - a.pods.length || naturalCompare(a.reason, b.reason));
  }

  // options: podHtml (a pod -> its HTML; default its key), open (a Set of reasons shown expanded).
  function pendingHtml(groups, options = {}) {
    const podHtml = options.podHtml || ((p) => `<div class="kv-pod" data-pod="${esc(p.key)}">${esc(p.key)}</div>`);
    const open = options.open || new Set();
    if (!groups.length) return `<p class="kv-none">no pending pods</p>`;
    return groups.map((g) => `<details class="kv-reason" data-reason="${esc(g.reason)}" data-count="${g.pods.length}"` +
      `${open.has(g.reason) ? " open" : ""}><summary><b class="kv-count">${g.pods.length}</b> ` +
      `<span class="kv-why" title="${esc(g.reason)}">${esc(g.reason)}</span></summary>` +
      `<div class="kv-pods">${g.pods.map(podHtml).join("")}</div></details>`).join("");
  }

  // devices: [{driver, pool, name, attributes: {name: value}, claim: "ns/name" | "", pods: ["ns/name"]}]
  function devicesHtml(devices) {
    if (!devices || !devices.length) return "";
    const held = devices.filter((d) => d.claim).length;
    return `<div class="kv-devices"><h4>devices <small>${held} of ${devices.length} held by claims</small></h4>` +
      `<table><thead><tr><th>driver</th><th>pool</th><th>device</th><th>attributes</th><th>claim</th><th>pods</th>` +
      `</tr></thead><tbody>` + devices.map((d) =>
        `<tr data-device="${esc(`${d.driver}/${d.pool}/${d.name}`)}" data-claim="${esc(d.claim)}">` +
        `<td>${esc(d.driver)}</td><td>${esc(d.pool)}</td><td>${esc(d.name)}</td>` +
        `<td>${Object.entries(d.attributes).map(([k, v]) => `${esc(k)}=${esc(v)}`).join(", ")}</td>` +
        `<td>${d.claim ? esc(d.claim) : "<i>free</i>"}</td><td>${d.pods.map(esc).join(", ")}</td></tr>`).join("") +
      `</tbody></table></div>`;
  }

  return {ZONE_LABEL, RESOURCES, NO_REASON, esc, naturalCompare, amount, share, gridLayout, cellLook, gridHtml,
          legendHtml, pendingGroups, pendingHtml, devicesHtml};
})();
