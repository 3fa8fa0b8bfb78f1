// flow ui: the page. Plain JavaScript, no build step and no library: it reads the
// documents of ui/server.go and draws the graph, the timeline and the history as SVG.
"use strict";

const STATUSES = ["pending", "running", "succeeded", "failed", "skipped", "interrupted", "undone"];
const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));

const page = {
  runParam: Number(new URLSearchParams(location.search).get("run") || 0),
  view: new URLSearchParams(location.search).get("view") || "graph",
  detail: null, // the Detail shown
  byAddr: new Map(), // address -> instance
  nodes: new Map(), // address -> graph element
  selected: "",
  tail: 0,
  events: null, // the WebSocket the run comes in on
  retry: 0, // ms before connecting again
  dirty: { graph: true, timeline: true },
  zoom: 0, // the graph's scale; 0: fit to the window
};

// ---- addresses ----

// splitAddr splits an address at the dots outside brackets and quotes.
function splitAddr(a) {
  const parts = [];
  let cur = "", q = false, depth = 0;
  for (let i = 0; i < a.length; i++) {
    const c = a[i];
    if (q && c === "\\") { cur += c + (a[i + 1] || ""); i++; continue; }
    if (c === '"') q = !q;
    else if (!q && c === "[") depth++;
    else if (!q && c === "]") depth--;
    if (c === "." && !q && depth === 0) { parts.push(cur); cur = ""; continue; }
    cur += c;
  }
  parts.push(cur);
  return parts;
}

// parseAddr is an address's module path (one id per module instance, outermost
// first), its task group id and its instance key ("" without for_each).
function parseAddr(a) {
  const parts = splitAddr(a);
  const mods = [];
  let i = 0;
  while (parts[i] === "module" && i + 2 < parts.length) {
    mods.push((mods.length ? mods[mods.length - 1] + "." : "") + "module." + parts[i + 1]);
    i += 2;
  }
  let name = parts.slice(i + 1).join(".");
  let key = "";
  const b = name.indexOf("[");
  if (b >= 0) { key = name.slice(b); name = name.slice(0, b); }
  const task = parts[i] + "." + name;
  return { mods, group: (mods.length ? mods[mods.length - 1] + "." : "") + task, task, key };
}

function shownStatus(inst) {
  if (page.detail && page.detail.run.kind === "destroy" && inst.status === "succeeded") return "undone";
  return inst.status;
}

// ---- graph layout ----

const CELL = 12, GAP_X = 44, GAP_Y = 14, PAD = 10, HEAD = 20;
const textWidth = (s) => s.length * 6.4;

// buildTree groups the instances: containers (the root, one per module instance)
// hold task groups and containers; edges are recorded dependencies lifted to the
// children of the lowest container both ends are in.
function buildTree(insts) {
  const containers = new Map();
  const root = { id: "", label: "", kind: "container", kids: [], edges: new Map() };
  containers.set("", root);
  const groups = new Map();
  const chain = new Map(); // address -> ids from the root's child down to its group
  for (const inst of insts) {
    const p = parseAddr(inst.address);
    let parent = root;
    for (const m of p.mods) {
      let c = containers.get(m);
      if (!c) {
        c = { id: m, label: m.slice(parent.id ? parent.id.length + 1 : 0), kind: "container", kids: [], edges: new Map() };
        containers.set(m, c);
        parent.kids.push(c);
      }
      parent = c;
    }
    let g = groups.get(p.group);
    if (!g) {
      g = { id: p.group, label: p.task, kind: "group", insts: [], keyed: false };
      groups.set(p.group, g);
      parent.kids.push(g);
    }
    g.insts.push(inst);
    if (p.key) g.keyed = true;
    chain.set(inst.address, [...p.mods, p.group]);
  }
  let known = 0, recorded = 0;
  for (const inst of insts) {
    if (inst.deps_known) recorded++;
    const a = chain.get(inst.address);
    for (const dep of inst.deps || []) {
      const b = chain.get(dep);
      if (!b) continue;
      known++;
      let i = 0;
      while (i < a.length && i < b.length && a[i] === b[i]) i++;
      if (i >= a.length || i >= b.length) continue; // the same group
      const c = containers.get(i === 0 ? "" : a[i - 1]);
      const k = b[i] + "\u0000" + a[i];
      c.edges.set(k, [b[i], a[i]]);
    }
  }
  return { root, recorded, edgesKnown: known };
}

function sizeGroup(g) {
  const n = g.insts.length;
  g.solo = n === 1 && !g.keyed;
  if (g.solo) {
    g.w = Math.max(80, textWidth(g.label) + 16);
    g.h = 26;
    return;
  }
  const cols = Math.max(1, Math.min(n, Math.max(8, Math.ceil(Math.sqrt(n * 2.5)))));
  g.cols = cols;
  g.w = Math.max(textWidth(g.label + " ×" + n) + 12, cols * CELL + 8);
  g.h = HEAD + Math.ceil(n / cols) * CELL + 6;
}

// layout places c's kids in columns by dependency depth, left to right, and sizes c.
function layout(c) {
  for (const k of c.kids) k.kind === "group" ? sizeGroup(k) : layout(k);
  const byId = new Map(c.kids.map((k, i) => [k.id, { k, i, preds: [], depth: -1 }]));
  for (const [from, to] of c.edges.values()) {
    const t = byId.get(to);
    if (t && byId.has(from)) t.preds.push(byId.get(from));
  }
  const depth = (n, seen) => {
    if (n.depth >= 0) return n.depth;
    if (seen.has(n)) return 0; // a cycle through a module: cut it
    seen.add(n);
    let d = 0;
    for (const p of n.preds) d = Math.max(d, depth(p, seen) + 1);
    seen.delete(n);
    return (n.depth = d);
  };
  const cols = [];
  for (const n of byId.values()) {
    const d = depth(n, new Set());
    (cols[d] = cols[d] || []).push(n);
  }
  let x = PAD, h = 0;
  const top = c.id ? HEAD + 4 : PAD;
  cols.forEach((col, ci) => {
    if (!col) return;
    if (ci > 0) {
      for (const n of col) n.bary = n.preds.length ? n.preds.reduce((s, p) => s + p.y, 0) / n.preds.length : n.i * 1e-6;
      col.sort((a, b) => a.bary - b.bary || a.i - b.i);
    }
    let y = top, w = 0;
    for (const n of col) {
      n.k.x = x; n.k.y = y; n.y = y;
      y += n.k.h + GAP_Y;
      w = Math.max(w, n.k.w);
    }
    h = Math.max(h, y - GAP_Y);
    x += w + GAP_X;
  });
  c.w = Math.max(x - GAP_X + PAD, textWidth(c.label) + 2 * PAD, 60);
  c.h = h + PAD;
  c.byId = byId;
}

// drawContainer writes c's SVG at (ox, oy): its kids, then the edges between them.
function drawContainer(c, ox, oy, out) {
  if (c.id) {
    out.push(`<g class="cluster" data-module="${esc(c.id)}"><rect x="${ox}" y="${oy}" width="${c.w}" height="${c.h}" rx="6"/>` +
      `<text x="${ox + 8}" y="${oy + 15}">${esc(c.label)}</text></g>`);
  }
  for (const [from, to] of c.edges.values()) {
    const a = c.byId.get(from), b = c.byId.get(to);
    if (!a || !b) continue;
    const x1 = ox + a.k.x + a.k.w, y1 = oy + a.k.y + Math.min(a.k.h / 2, 13);
    const x2 = ox + b.k.x, y2 = oy + b.k.y + Math.min(b.k.h / 2, 13);
    const mx = (x1 + x2) / 2;
    out.push(`<path class="edge" data-from="${esc(from)}" data-to="${esc(to)}" d="M${x1},${y1}C${mx},${y1} ${mx},${y2} ${x2 - 4},${y2}" marker-end="url(#arrow)"/>`);
  }
  for (const k of c.kids) {
    const x = ox + k.x, y = oy + k.y;
    if (k.kind === "container") { drawContainer(k, x, y, out); continue; }
    if (k.solo) {
      const inst = k.insts[0];
      out.push(`<g class="group" data-task="${esc(k.id)}"><g class="inst solo" data-address="${esc(inst.address)}" data-status="${shownStatus(inst)}"${inst.removed ? " data-removed" : ""}>` +
        `<rect x="${x}" y="${y}" width="${k.w}" height="${k.h}" rx="4"/><text x="${x + 8}" y="${y + 17}">${esc(k.label)}</text></g></g>`);
      continue;
    }
    out.push(`<g class="group" data-task="${esc(k.id)}"><rect class="box" x="${x}" y="${y}" width="${k.w}" height="${k.h}" rx="4"/>` +
      `<text x="${x + 6}" y="${y + 14}">${esc(k.label)} ×${k.insts.length}</text>`);
    k.insts.forEach((inst, i) => {
      const cx = x + 4 + (i % k.cols) * CELL, cy = y + HEAD + Math.floor(i / k.cols) * CELL;
      // One element per instance, with no title: a 10,000-instance run stays quick to draw.
      out.push(`<rect class="inst" data-address="${esc(inst.address)}" data-status="${shownStatus(inst)}"${inst.removed ? " data-removed" : ""} x="${cx}" y="${cy}" width="${CELL - 1}" height="${CELL - 1}" rx="2"/>`);
    });
    out.push("</g>");
  }
}

function renderGraph() {
  const d = page.detail;
  const box = $("#graphbox");
  if (!d) return;
  const t = buildTree(d.instances);
  layout(t.root);
  const out = [`<svg id="graphsvg" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${t.root.w} ${t.root.h}" width="${t.root.w}" height="${t.root.h}" data-w="${t.root.w}" data-h="${t.root.h}" data-instances="${d.instances.length}">`,
    `<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0L8,4L0,8z" fill="#94a3b8"/></marker></defs>`];
  drawContainer(t.root, 0, 0, out);
  out.push("</svg>");
  let note = "";
  if (d.instances.length && t.recorded < d.instances.length) {
    note = `<p class="note">Dependencies were recorded for ${t.recorded} of ${d.instances.length} instances of this run (an older flow recorded them for undoable instances only): some edges are missing.</p>`;
  }
  box.innerHTML = note + out.join("");
  scaleGraph();
  page.nodes.clear();
  for (const el of box.querySelectorAll(".inst")) page.nodes.set(el.dataset.address, el);
  markSelected();
  page.dirty.graph = false;
  drawn("graphDrawnAt");
}

// scaleGraph sizes the graph: to the window's width (page.zoom 0, never above its own
// size), else at page.zoom.
function scaleGraph() {
  const svg = $("#graphsvg");
  if (!svg) return;
  const w = Number(svg.dataset.w), h = Number(svg.dataset.h);
  const box = $("#graph");
  const avail = Math.max(200, box.clientWidth - 24);
  const scale = page.zoom || Math.min(1, avail / w);
  svg.setAttribute("width", (w * scale).toFixed(1));
  svg.setAttribute("height", (h * scale).toFixed(1));
  svg.dataset.scale = scale.toFixed(4);
  $("#zoomlevel").textContent = page.zoom ? Math.round(scale * 100) + "%" : `fit (${Math.round(scale * 100)}%)`;
}

function zoomBy(f) {
  const svg = $("#graphsvg");
  const cur = svg ? Number(svg.dataset.scale) : 1;
  page.zoom = Math.min(4, Math.max(0.05, cur * f));
  scaleGraph();
}

// findInstance selects the first instance whose address contains q (an exact match
// first), brings it into view and shows its details.
function findInstance(q) {
  q = q.trim();
  const found = $("#findnote");
  if (!q || !page.detail) { found.textContent = ""; return; }
  const all = page.detail.instances.map((i) => i.address);
  const hits = all.filter((a) => a === q).concat(all.filter((a) => a !== q && a.toLowerCase().includes(q.toLowerCase())));
  found.textContent = hits.length ? `${hits.length} found` : "not found";
  if (!hits.length) return;
  if (page.view !== "graph") selectView("graph");
  showDetails(hits[0]);
  const el = page.nodes.get(hits[0]);
  if (el) el.scrollIntoView({ block: "center", inline: "center" });
}

// drawn records, for the benchmark, when the browser painted what was just drawn: ms
// since the page's navigation started.
function drawn(name) {
  requestAnimationFrame(() => setTimeout(() => { document.body.dataset[name] = performance.now().toFixed(1); }));
}

// ---- timeline ----

const ms = (t) => (t ? Date.parse(t) : NaN);
function fmtDur(msec) {
  if (!(msec >= 0)) return "-";
  if (msec < 1000) return Math.round(msec) + "ms";
  const s = msec / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + "s";
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${Math.round(s % 60)}s`;
  return `${Math.floor(m / 60)}h${m % 60}m`;
}

// criticalPath walks back from the instance that finished last, each time to the
// dependency that finished last: the chain that decided when the run ended. A destroy
// undoes an instance after what depended on it, so there it walks the edges reversed.
function criticalPath(insts, destroy) {
  const by = new Map(insts.map((i) => [i.address, i]));
  const waitsFor = new Map(insts.map((i) => [i.address, destroy ? [] : i.deps || []]));
  if (destroy) for (const i of insts) for (const d of i.deps || []) if (waitsFor.has(d)) waitsFor.get(d).push(i.address);
  let cur = null;
  for (const i of insts) if (i.finished_at && (!cur || ms(i.finished_at) > ms(cur.finished_at))) cur = i;
  const path = new Set();
  while (cur && !path.has(cur.address)) {
    path.add(cur.address);
    let next = null;
    for (const a of waitsFor.get(cur.address)) {
      const d = by.get(a);
      if (d && d.finished_at && (!next || ms(d.finished_at) > ms(next.finished_at))) next = d;
    }
    cur = next;
  }
  return path;
}

// firstStart is when inst's first attempt started (its earlier failed attempts are
// its tries).
const firstStart = (i) => (i.tries && i.tries.length ? ms(i.tries[0].started_at) : ms(i.started_at));

// runEnd is when run d ended: its finish, now while it goes on, and for a run that
// ended without recording its finish (interrupted, killed) the last event it recorded.
function runEnd(d) {
  if (d.run.finished_at) return ms(d.run.finished_at);
  if (d.live) return Date.now();
  let t = ms(d.run.started_at);
  for (const i of d.instances) {
    for (const v of [i.started_at, i.finished_at]) if (v && ms(v) > t) t = ms(v);
    for (const a of i.tries || []) if (ms(a.finished_at) > t) t = ms(a.finished_at);
  }
  return t;
}

function renderTimeline() {
  const d = page.detail;
  if (!d) return;
  const rows = d.instances.filter((i) => i.started_at).sort((a, b) => firstStart(a) - firstStart(b) || a.order - b.order);
  const box = $("#timelinebox");
  page.dirty.timeline = false;
  if (!rows.length) {
    box.innerHTML = `<p class="note">No instance of run ${d.run.id} has started.</p>`;
    $("#slowest").innerHTML = "";
    return;
  }
  // An instance that has not finished goes on to now while the run does, else to the
  // run's last recorded event.
  const now = runEnd(d);
  const end = (i) => (i.finished_at ? ms(i.finished_at) : Math.max(now, ms(i.started_at)));
  const t0 = Math.min(...rows.map(firstStart));
  const t1 = Math.max(...rows.map(end), t0 + 1);
  const labelW = rows.length > 400 ? 0 : 300;
  const width = Math.max(500, (box.clientWidth || 1200) - labelW - 30);
  const per = width / (t1 - t0);
  const rh = rows.length > 400 ? 3 : 16;
  const top = 20;
  const crit = criticalPath(d.instances, d.run.kind === "destroy");
  const out = [`<svg class="gantt" xmlns="http://www.w3.org/2000/svg" width="${labelW + width + 20}" height="${top + rows.length * rh + 10}" data-t0="${t0}" data-px-per-ms="${per}" data-x0="${labelW}">`];
  out.push('<g class="axis">');
  const step = niceStep((t1 - t0) / 8);
  for (let t = 0; t <= t1 - t0; t += step) {
    const x = labelW + t * per;
    out.push(`<line x1="${x}" x2="${x}" y1="${top - 4}" y2="${top + rows.length * rh}"/><text x="${x + 2}" y="${top - 8}">${fmtDur(t)}</text>`);
  }
  out.push("</g>");
  rows.forEach((i, n) => {
    const y = top + n * rh;
    const x = labelW + (ms(i.started_at) - t0) * per;
    const w = Math.max(1, (end(i) - ms(i.started_at)) * per);
    if (labelW) out.push(`<text class="label" x="4" y="${y + rh - 4}">${esc(i.address.length > 48 ? "…" + i.address.slice(-47) : i.address)}</text>`);
    // Each failed attempt before the latest, on the same row: the gap before the latest is explained.
    (i.tries || []).forEach((a, n) => {
      const ax = labelW + (ms(a.started_at) - t0) * per, aw = Math.max(1, (ms(a.finished_at) - ms(a.started_at)) * per);
      out.push(`<rect class="try" data-address="${esc(i.address)}" data-attempt="${n + 1}" data-status="failed" ` +
        `data-start="${ms(a.started_at)}" data-finish="${ms(a.finished_at)}" x="${ax}" y="${y + 1}" width="${aw}" height="${rh - 2}"/>`);
    });
    out.push(`<rect class="bar${crit.has(i.address) ? " critical" : ""}" data-address="${esc(i.address)}" data-status="${shownStatus(i)}" data-attempt="${(i.tries || []).length + 1}" ` +
      `data-start="${ms(i.started_at)}" data-finish="${i.finished_at ? ms(i.finished_at) : ""}" x="${x}" y="${y + 1}" width="${w}" height="${rh - 2}"/>`);
  });
  out.push("</svg>");
  box.innerHTML = out.join("");
  drawn("timelineDrawnAt");
  // An instance's time counts from its first attempt.
  const took = (i) => end(i) - firstStart(i);
  const slow = rows.filter((i) => i.finished_at).sort((a, b) => took(b) - took(a)).slice(0, 5);
  const tries = (i) => (i.tries && i.tries.length ? `, ${i.tries.length + 1} attempts` : "");
  $("#slowest").innerHTML = `<b>Slowest:</b><ol>${slow.map((i) => `<li data-address="${esc(i.address)}" data-ms="${took(i)}">${esc(i.address)} ${fmtDur(took(i))}${tries(i)}</li>`).join("")}</ol>` +
    `<span class="note">Outlined bars: the critical path (${crit.size} instances), each waiting for the dependency that finished last. Hatched bars: failed attempts that were tried again.</span>`;
}

function niceStep(raw) {
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 900000, 1800000, 3600000];
  for (const s of steps) if (s >= raw) return s;
  return 3600000 * Math.ceil(raw / 3600000);
}

// ---- history ----

async function renderHistory() {
  const h = await getJSON("api/history");
  const shown = page.detail ? page.detail.run.id : 0;
  $("#runs tbody").innerHTML = h.runs.slice().reverse().map((r) => {
    const dur = r.finished_at ? fmtDur(ms(r.finished_at) - ms(r.started_at)) : "-";
    const kind = r.kind === "destroy" ? `destroy of run ${r.destroys}` : "run";
    return `<tr data-run="${r.id}" class="${r.id === shown ? "on" : ""}"><td>${r.id}</td><td>${kind}</td><td class="result-${r.status}">${r.status}</td>` +
      `<td>${new Date(r.started_at).toLocaleString()}</td><td>${dur}</td><td>${r.resumes}</td><td>${esc(r.flow)}</td></tr>`;
  }).join("");
  const tasks = h.tasks.slice().sort((a, b) => Math.max(...b.durations.map((x) => x.seconds)) - Math.max(...a.durations.map((x) => x.seconds))).slice(0, 120);
  $("#taskcharts").innerHTML = tasks.map((t) => {
    const max = Math.max(...t.durations.map((x) => x.seconds), 0.001);
    const bw = Math.max(3, Math.min(16, Math.floor(240 / h.runs.length)));
    const bars = t.durations.map((x, i) => {
      const hh = Math.max(1, (x.seconds / max) * 40);
      return `<rect class="${x.run === shown ? "on" : ""}" data-run="${x.run}" x="${i * (bw + 1)}" y="${42 - hh}" width="${bw}" height="${hh}"><title>run ${x.run}: ${x.seconds.toFixed(2)}s</title></rect>`;
    }).join("");
    return `<div class="taskchart" data-task="${esc(t.task)}"><div>${esc(t.task)} <span class="note">max ${fmtDur(max * 1000)}</span></div><svg width="250" height="44">${bars}</svg></div>`;
  }).join("") + (h.tasks.length > tasks.length ? `<p class="note">${h.tasks.length - tasks.length} shorter tasks not drawn.</p>` : "");
}

// ---- details ----

function markSelected() {
  for (const el of document.querySelectorAll(".inst.sel")) el.classList.remove("sel");
  const el = page.nodes.get(page.selected);
  if (el) el.classList.add("sel");
}

function showDetails(addr) {
  page.selected = addr;
  markSelected();
  const i = page.byAddr.get(addr);
  const aside = $("#details");
  if (!i) { aside.hidden = true; return; }
  aside.hidden = false;
  $("#d-address").textContent = addr;
  const d = page.detail;
  const dur = i.started_at ? fmtDur((i.finished_at ? ms(i.finished_at) : Math.max(runEnd(d), ms(i.started_at))) - firstStart(i)) : "-";
  const fields = [["status", shownStatus(i)], ["type", i.type], ["attempts", i.attempts], ["fingerprint", i.fingerprint || (d.live && i.status === "succeeded" ? "in the state file once the run ends" : "-")],
    ["started", i.started_at || "-"], ["finished", i.finished_at || "-"], ["duration", dur], ["reason", i.reason || "-"],
    ["waited for", i.deps_known ? (i.deps && i.deps.length ? i.deps.join("\n") : "nothing") : "not recorded"]];
  if (i.error) fields.splice(1, 0, ["error", i.error]);
  (i.tries || []).forEach((a, n) => fields.push([`attempt ${n + 1}`, `failed after ${fmtDur(ms(a.finished_at) - ms(a.started_at))} (started ${a.started_at}): ${a.error || "-"}`]));
  if (i.removed) fields.splice(1, 0, ["removed", "no longer in the flow: this run undid it (or kept it)"]);
  if (i.pending_undo) fields.splice(1, 0, ["pending undo", `${i.pending_undo} object${i.pending_undo > 1 ? "s" : ""} it made before, whose undo has not succeeded yet: the next run or flow destroy undoes ${i.pending_undo > 1 ? "them" : "it"} first`]);
  $("#d-fields").innerHTML = fields.map(([k, v]) => `<dt>${k}</dt><dd data-field="${k}">${esc(v)}</dd>`).join("");
  loadOutput();
}

async function loadOutput() {
  clearTimeout(page.tail);
  const addr = page.selected;
  const d = page.detail;
  if (!addr || !d) return;
  const pre = $("#d-output");
  try {
    const r = await fetch(`api/log?run=${d.run.id}&address=${encodeURIComponent(addr)}`);
    const text = r.ok ? await r.text() : "";
    if (addr !== page.selected) return;
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = text || "(no output)";
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  } catch (e) { /* the next tick tries again */ }
  const i = page.byAddr.get(addr);
  if (i && i.status === "running" && d.live) page.tail = setTimeout(loadOutput, 1000);
}

// ---- data ----

async function getJSON(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: ${r.status} ${await r.text()}`);
  return r.json();
}

function setDetail(d) {
  page.detail = d;
  page.byAddr = new Map(d.instances.map((i) => [i.address, i]));
  page.dirty.graph = page.dirty.timeline = true;
  showRunInfo();
  redraw();
  if (page.selected) showDetails(page.selected);
  loadRuns();
}

function applyUpdate(u) {
  const d = page.detail;
  if (!d) return;
  d.run = u.run;
  d.live = u.live;
  let added = false;
  for (const inst of u.instances) {
    const old = page.byAddr.get(inst.address);
    if (old) Object.assign(old, inst);
    else { d.instances.push(inst); page.byAddr.set(inst.address, inst); added = true; }
    if (!added) {
      const el = page.nodes.get(inst.address);
      if (el) el.dataset.status = shownStatus(inst);
    }
  }
  if (added) page.dirty.graph = true;
  page.dirty.timeline = true;
  showRunInfo();
  redraw();
  if (page.selected && u.instances.some((i) => i.address === page.selected)) showDetails(page.selected);
}

function showRunInfo() {
  const r = page.detail.run;
  const counts = {};
  for (const i of page.detail.instances) counts[shownStatus(i)] = (counts[shownStatus(i)] || 0) + 1;
  const kind = r.kind === "destroy" ? `destroy of run ${r.destroys}` : "run";
  const dur = fmtDur(runEnd(page.detail) - ms(r.started_at));
  const info = $("#runinfo");
  info.textContent = `Run ${r.id} (${kind}): ${r.status}, ${dur} — ` + STATUSES.filter((s) => counts[s]).map((s) => `${counts[s]} ${s}`).join(", ");
  info.dataset.run = r.id;
  info.dataset.status = r.status;
  document.title = `flow: run ${r.id} ${r.status}`;
}

function redraw() {
  if (page.view === "graph" && page.dirty.graph) renderGraph();
  if (page.view === "timeline" && page.dirty.timeline) renderTimeline();
}

async function loadRuns() {
  try {
    const runs = await getJSON("api/runs");
    const sel = $("#runsel");
    const want = String(page.runParam);
    sel.innerHTML = `<option value="0">latest run (follows new runs)</option>` +
      runs.slice().reverse().map((r) => `<option value="${r.id}">run ${r.id}: ${r.kind === "destroy" ? "destroy, " : ""}${r.status}</option>`).join("");
    sel.value = want;
  } catch (e) { /* shown by the events stream */ }
}

// connect follows the run over a WebSocket: a browser holds six HTTP connections to a
// host and an open stream would hold one per tab, so a seventh tab would wait; a
// WebSocket is not one of them. A lost connection is made again, sooner at first.
function connect() {
  clearTimeout(page.reconnect);
  if (page.events) { page.events.onclose = null; page.events.close(); }
  const u = new URL(`api/live?run=${page.runParam}`, location.href);
  u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(u);
  page.events = ws;
  ws.onopen = () => { $("#conn").classList.add("live"); page.retry = 0; };
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (m.event === "run") setDetail(m.data);
    else if (m.event === "update") applyUpdate(m.data);
    else if (m.event === "problem") $("#runinfo").textContent = m.data;
  };
  ws.onclose = () => {
    $("#conn").classList.remove("live");
    if (page.events !== ws) return;
    page.retry = Math.min(10000, (page.retry || 250) * 2);
    page.reconnect = setTimeout(connect, page.retry);
  };
}

function selectRun(id) {
  page.runParam = id;
  const u = new URL(location.href);
  if (id) u.searchParams.set("run", id); else u.searchParams.delete("run");
  history.replaceState(null, "", u);
  page.detail = null;
  connect();
}

function selectView(v) {
  page.view = v;
  for (const b of document.querySelectorAll("nav button")) b.classList.toggle("on", b.dataset.view === v);
  for (const s of document.querySelectorAll(".view")) s.classList.toggle("on", s.id === v);
  const u = new URL(location.href);
  u.searchParams.set("view", v);
  history.replaceState(null, "", u);
  if (v === "history") renderHistory();
  else redraw();
  if (v === "graph" && !page.zoom) scaleGraph(); // the window may have changed while hidden
}

function init() {
  $("#legend").innerHTML = STATUSES.map((s) => `<span><i style="background:var(--${s})"></i>${s}</span>`).join("");
  for (const b of document.querySelectorAll("nav button")) b.addEventListener("click", () => selectView(b.dataset.view));
  document.addEventListener("click", (e) => {
    const el = e.target.closest("[data-address]");
    if (el && !el.closest("#details")) showDetails(el.dataset.address);
    const tr = e.target.closest("#runs tr[data-run]");
    if (tr) { selectRun(Number(tr.dataset.run)); selectView("graph"); }
  });
  // One tooltip for every instance and bar: the address under the pointer.
  const tip = $("#tip");
  document.addEventListener("mouseover", (e) => {
    const el = e.target.closest && e.target.closest("svg [data-address]");
    if (!el) { tip.hidden = true; return; }
    const i = page.byAddr.get(el.dataset.address);
    tip.textContent = el.dataset.address + (i ? ` — ${shownStatus(i)}` : "");
    tip.hidden = false;
  });
  document.addEventListener("mousemove", (e) => { tip.style.left = e.clientX + 12 + "px"; tip.style.top = e.clientY + 12 + "px"; });
  $("#closedetails").addEventListener("click", () => { page.selected = ""; $("#details").hidden = true; markSelected(); clearTimeout(page.tail); });
  $("#runsel").addEventListener("change", (e) => selectRun(Number(e.target.value)));
  $("#zoomfit").addEventListener("click", () => { page.zoom = 0; scaleGraph(); });
  $("#zoomin").addEventListener("click", () => zoomBy(1.25));
  $("#zoomout").addEventListener("click", () => zoomBy(0.8));
  $("#find").addEventListener("keydown", (e) => { if (e.key === "Enter") findInstance(e.target.value); });
  $("#find").addEventListener("change", (e) => findInstance(e.target.value));
  window.addEventListener("resize", () => { if (!page.zoom) scaleGraph(); });
  // A running instance's bar grows and the run's clock moves between updates.
  setInterval(() => {
    if (page.detail && page.detail.live) {
      page.dirty.timeline = true;
      showRunInfo();
      if (page.view === "timeline") renderTimeline();
    }
  }, 2000);
  selectView(page.view);
  connect();
}

init();
