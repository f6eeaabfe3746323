// Hummer's dashboard: one page that polls the JSON API (web/api.go) every
// second and draws what it says. Routes are the URL's fragment: #/ (overview),
// #/jobs/ID (a job), #/explain. Rates are counters' differences between two
// polls. Everything from the server is escaped before it enters the page.
"use strict";

const POLL_MS = 1000;
const main = document.getElementById("main");
const statusEl = document.getElementById("status");
let timer = null;
let prev = {}; // counter snapshots by key, for rates: {t, v}

function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}

// rate returns the per-second change of counter key since the last poll.
function rate(key, v, t) {
  const p = prev[key];
  prev[key] = {t, v};
  if (!p || t <= p.t) return null;
  return (v - p.v) * 1000 / (t - p.t);
}

function fmtNum(n) {
  if (n === null || n === undefined) return "–";
  const a = Math.abs(n);
  if (a >= 1e9) return (n / 1e9).toFixed(2) + "G";
  if (a >= 1e6) return (n / 1e6).toFixed(2) + "M";
  if (a >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}
function fmtBytes(n) {
  if (!n) return "0 B";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}
function fmtDur(ms) {
  if (ms < 1000) return Math.round(ms) + " ms";
  let s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86400); s %= 86400;
  const h = Math.floor(s / 3600); s %= 3600;
  const m = Math.floor(s / 60); s %= 60;
  return (d ? d + "d " : "") + (d || h ? h + "h " : "") + (d || h || m ? m + "m " : "") + s + "s";
}
function fmtTime(ms) { return new Date(ms).toLocaleString(); }
function stateBadge(s) {
  const cls = s.startsWith("waiting") ? "waiting" : s;
  return `<span class="state ${esc(cls)}">${esc(s)}</span>`;
}
function pct(part, whole) { return whole > 0 ? Math.max(0, Math.min(100, 100 * part / whole)) : 0; }

async function api(path, opts) {
  const r = await fetch(path, opts);
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function route() {
  clearTimeout(timer);
  prev = {};
  const h = location.hash || "#/";
  document.querySelectorAll("header nav a").forEach(a => a.classList.toggle("active", a.getAttribute("href") === h));
  const m = h.match(/^#\/jobs\/([^/]+)$/);
  if (m) return poll(() => jobPage(decodeURIComponent(m[1])));
  if (h === "#/explain") return explainPage();
  return poll(overviewPage);
}

// poll runs draw now and every POLL_MS while its route is shown.
function poll(draw) {
  const hash = location.hash;
  const tick = async () => {
    try {
      await draw();
      statusEl.textContent = "updated " + new Date().toLocaleTimeString();
    } catch (e) {
      statusEl.textContent = "error: " + e.message;
    }
    if (location.hash === hash) timer = setTimeout(tick, POLL_MS);
  };
  tick();
}

async function overviewPage() {
  const o = await api("/api/overview");
  const t = o.now_ms;
  let slots = 0, busy = 0;
  for (const tm of o.taskmanagers) { slots += tm.slots.length; busy += tm.slots.filter(b => b).length; }
  const running = o.jobs.filter(j => j.state === "running").length;
  let totalRate = 0;
  const rows = o.jobs.map(j => {
    const rin = rate("in/" + j.id, j.rows_in, t), rout = rate("out/" + j.id, j.rows_out, t);
    if (rin) totalRate += rin;
    return `<tr data-job="${esc(j.id)}">
      <td><a href="#/jobs/${encodeURIComponent(j.id)}">${esc(j.id)}</a></td>
      <td class="job-state">${stateBadge(j.state)}</td>
      <td class="sql">${esc(j.statement.length > 160 ? j.statement.slice(0, 159) + "…" : j.statement)}</td>
      <td>${fmtDur((j.ended_ms || t) - j.started_ms)}</td>
      <td class="num rows-in" data-value="${j.rows_in}">${fmtNum(j.rows_in)}</td><td class="num">${fmtNum(rin)}</td>
      <td class="num rows-out">${fmtNum(j.rows_out)}</td><td class="num">${fmtNum(rout)}</td>
      <td class="num">${j.restarts}</td><td class="num">${j.checkpoint || "–"}</td>
      <td class="error">${esc(j.error || "")}</td></tr>`;
  }).join("");
  main.innerHTML = `
    <div class="cards">
      <div class="card stat"><div class="v" id="uptime">${fmtDur(t - o.started_ms)}</div><div class="k">uptime</div></div>
      <div class="card stat"><div class="v" id="tm-count">${o.taskmanagers.length}</div><div class="k">TaskManagers</div></div>
      <div class="card stat"><div class="v">${busy} / ${slots}</div><div class="k">slots busy</div></div>
      <div class="card stat"><div class="v">${running}</div><div class="k">jobs running</div></div>
      <div class="card stat"><div class="v">${fmtNum(totalRate)}</div><div class="k">rows/s read</div></div>
    </div>
    <h2>TaskManagers</h2>
    <table id="taskmanagers"><tr><th>id</th><th>slots (busy in orange)</th><th class="num">free</th></tr>
    ${o.taskmanagers.map(tm => `<tr data-tm="${esc(tm.id)}"><td>${esc(tm.id)}</td>
      <td class="slots">${tm.slots.map(b => `<span class="${b ? "busy" : ""}" title="${b ? "busy" : "free"}"></span>`).join("")}</td>
      <td class="num">${tm.slots.filter(b => !b).length}</td></tr>`).join("")}
    </table>
    <h2>Jobs</h2>
    <table id="jobs"><tr><th>id</th><th>state</th><th>statement</th><th>uptime</th><th class="num">rows in</th><th class="num">in/s</th>
      <th class="num">rows out</th><th class="num">out/s</th><th class="num">restarts</th><th class="num">checkpoint</th><th>error</th></tr>
    ${rows || `<tr><td colspan="11" class="muted">No jobs. Run a query or an INSERT INTO … SELECT in psql.</td></tr>`}</table>`;
}

async function jobPage(id) {
  const j = await api("/api/jobs/" + encodeURIComponent(id));
  const t = Date.now();
  // Per vertex: totals and rates over its subtasks.
  const vs = j.vertices.map(v => {
    const s = {rowsIn: 0, rowsOut: 0, busy: 0, idle: 0, bp: 0, wm: 0, queue: 0, cap: 0};
    for (const st of v.subtasks) {
      s.rowsIn += st.rows_in; s.rowsOut += st.rows_out;
      s.busy += st.busy_ns; s.idle += st.idle_ns; s.bp += st.backpressured_ns;
      s.queue += st.queue; s.cap += st.queue_capacity;
      if (st.watermark_us && (!s.wm || st.watermark_us < s.wm)) s.wm = st.watermark_us;
    }
    const key = "v/" + id + "/" + v.id + "/";
    // Each fused operator's output rate, over the subtasks.
    s.opRates = v.operators.map((_, i) => rate(key + "op" + i,
      v.subtasks.reduce((n, st) => n + ((st.operator_rows_out || [])[i] || 0), 0), t));
    s.inRate = rate(key + "in", s.rowsIn, t);
    s.outRate = rate(key + "out", s.rowsOut, t);
    const dBusy = rate(key + "busy", s.busy, t), dIdle = rate(key + "idle", s.idle, t), dBp = rate(key + "bp", s.bp, t);
    const whole = (dBusy || 0) + (dIdle || 0) + (dBp || 0);
    s.busyPct = whole ? pct(dBusy, whole) : null;
    s.bpPct = whole ? pct(dBp, whole) : null;
    return {v, s};
  });
  const live = j.state === "running" || j.state === "restarting" || j.state.startsWith("waiting");
  const lag = j.watermark_us ? (t * 1000 - j.watermark_us) / 1e6 : null;
  const subRows = [];
  for (const {v} of vs) for (const st of v.subtasks) {
    const key = "s/" + id + "/" + v.id + "/" + st.subtask + "/";
    const rin = rate(key + "in", st.rows_in, t);
    const db = rate(key + "busy", st.busy_ns, t) || 0, di = rate(key + "idle", st.idle_ns, t) || 0, dp = rate(key + "bp", st.backpressured_ns, t) || 0;
    const whole = db + di + dp;
    subRows.push(`<tr class="subtask" data-vertex="${v.id}" data-subtask="${st.subtask}">
      <td>${v.id}: ${esc(v.name)}</td><td class="num">${st.subtask}</td><td class="tm">${esc(st.taskmanager)}</td><td class="num">${st.slot}</td>
      <td class="num">${fmtNum(st.rows_in)}</td><td class="num">${fmtNum(rin)}</td><td class="num">${fmtNum(st.rows_out)}</td>
      <td>${bar(whole ? pct(db, whole) : 0, "busy")}${whole ? Math.round(pct(db, whole)) + "%" : "–"}</td>
      <td>${bar(whole ? pct(dp, whole) : 0, "bp")}${whole ? Math.round(pct(dp, whole)) + "%" : "–"}</td>
      <td class="num">${st.queue_capacity ? st.queue + "/" + st.queue_capacity : "–"}</td>
      <td>${st.watermark_us ? fmtTime(st.watermark_us / 1000) : "–"}</td>
      <td class="num">${st.lag < 0 ? "–" : fmtNum(st.lag)}</td>
      <td class="num">${fmtBytes(st.net_bytes_out)}</td><td>${esc(st.status || "")}</td></tr>`);
  }
  const ck = j.checkpoints;
  main.innerHTML = `
    <div class="jobhead"><h1 class="grow" data-state="${esc(j.state)}">Job <span id="job-id">${esc(j.id)}</span> ${stateBadge(j.state)}</h1>
      ${live ? `<button class="danger" id="cancel">Cancel job</button>` : ""}</div>
    <pre class="sql" id="statement">${esc(j.statement)}</pre>
    <div class="cards">
      <div class="card stat"><div class="v" id="rows-in" data-value="${j.rows_in}">${fmtNum(j.rows_in)}</div><div class="k">rows read</div></div>
      <div class="card stat"><div class="v" id="rows-out" data-value="${j.rows_out}">${fmtNum(j.rows_out)}</div><div class="k">rows written</div></div>
      <div class="card stat"><div class="v">${fmtDur((j.ended_ms || t) - j.started_ms)}</div><div class="k">${j.ended_ms ? "ran for" : "uptime"}</div></div>
      <div class="card stat"><div class="v" id="restarts">${j.restarts}</div><div class="k">restarts (attempt ${j.attempt})</div></div>
      <div class="card stat"><div class="v">${ck.last || "–"}</div><div class="k">checkpoint (${ck.completed} done, ${ck.failed} failed)</div></div>
      <div class="card stat"><div class="v">${lag === null ? "–" : lag.toFixed(1) + " s"}</div><div class="k">watermark lag</div></div>
      <div class="card stat"><div class="v">${fmtNum(j.late_rows)} / ${fmtNum(j.bad_records)}</div><div class="k">late rows / bad records</div></div>
    </div>
    ${j.error ? `<h2>Last error</h2><div class="card error" id="job-error">${esc(j.error)}</div>` : ""}
    <h2>JobGraph</h2>
    <div id="graph">${graphSVG(vs, j.edges, t)}</div>
    <div class="legend">Boxes are tasks: a fused chain of operators. Dashed blue edges cross TaskManagers. Bars: busy (orange) and backpressured (red) share of the last second; a red frame marks backpressure over 50%.</div>
    <h2>Subtasks</h2>
    <table id="subtasks"><tr><th>vertex</th><th class="num">subtask</th><th>TaskManager</th><th class="num">slot</th><th class="num">rows in</th><th class="num">in/s</th>
      <th class="num">rows out</th><th>busy</th><th>backpressured</th><th class="num">queue</th><th>watermark</th><th class="num" title="records the source's partitions hold past what it fetched">source lag</th><th class="num">net out</th><th>status</th></tr>
      ${subRows.join("")}</table>
    <h2>Checkpoints</h2>
    <table id="checkpoints"><tr><th class="num">id</th><th>started</th><th class="num">duration</th><th class="num">size</th><th class="num">alignment</th><th>status</th></tr>
      ${j.checkpoint_history.slice().reverse().map(c => `<tr class="checkpoint" data-checkpoint="${c.id}"><td class="num">${c.id}</td><td>${fmtTime(c.started_ms)}</td>
        <td class="num">${c.duration_ms.toFixed(1)} ms</td><td class="num">${fmtBytes(c.bytes)}</td><td class="num">${c.alignment_ms.toFixed(1)} ms</td>
        <td>${c.failure ? `<span class="error">failed: ${esc(c.failure)}</span>` : "complete"}</td></tr>`).join("") ||
        `<tr><td colspan="6" class="muted">No checkpoints${ck.restored_from ? "" : " (a query's job takes none)"}.</td></tr>`}
    </table>
    ${ck.restored_from ? `<p class="muted">Restored from checkpoint ${ck.restored_from}.</p>` : ""}`;
  const btn = document.getElementById("cancel");
  if (btn) btn.onclick = async () => {
    if (!confirm("Cancel job " + j.id + "?")) return;
    btn.disabled = true;
    try {
      await api("/api/jobs/" + encodeURIComponent(j.id) + "/cancel", {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"});
    } catch (e) { alert(e.message); btn.disabled = false; }
  };
}

function bar(p, cls) { return `<span class="bar"><i class="${cls}" style="width:${p.toFixed(0)}%"></i></span>`; }

// graphSVG lays the JobGraph out left to right, a column per depth from the
// sources, and draws each vertex as a box listing its fused operators.
function graphSVG(vs, edges, t) {
  const W = 300, GAP_X = 150, GAP_Y = 28, PAD = 20;
  const depth = {};
  for (const {v} of vs) depth[v.id] = 0;
  for (const {v} of vs) for (const e of edges) if (e.to === v.id) depth[v.id] = Math.max(depth[v.id], depth[e.from] + 1);
  const cols = {};
  const pos = {};
  for (const x of vs) {
    const d = depth[x.v.id];
    const h = 30 + 15 * x.v.operators.length + 62;
    const y = cols[d] === undefined ? PAD : cols[d];
    pos[x.v.id] = {x: PAD + d * (W + GAP_X), y, h};
    cols[d] = y + h + GAP_Y;
  }
  const width = PAD * 2 + (Math.max(0, ...Object.values(depth)) + 1) * (W + GAP_X) - GAP_X;
  const height = Math.max(...Object.values(cols), 100) + PAD - GAP_Y;
  let out = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">
    <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#8a94a6"/></marker></defs>`;
  for (const e of edges) {
    const a = pos[e.from], b = pos[e.to];
    if (!a || !b) continue;
    const x1 = a.x + W, y1 = a.y + a.h / 2, x2 = b.x, y2 = b.y + b.h / 2, mx = (x1 + x2) / 2;
    const cls = e.transport.replace(" ", "");
    out += `<path class="edge ${cls}" data-from="${e.from}" data-to="${e.to}" d="M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}" marker-end="url(#arrow)"/>`;
    out += `<text class="elabel" x="${mx}" y="${(y1 + y2) / 2 - 6}" text-anchor="middle">${esc(e.kind)}${e.transport !== "local" ? " · " + esc(e.transport) : ""}</text>`;
  }
  for (const {v, s} of vs) {
    const p = pos[v.id];
    const tms = [...new Set(v.subtasks.map(st => st.taskmanager))];
    out += `<g class="vertex" data-vertex="${v.id}" transform="translate(${p.x},${p.y})">
      <rect class="box${s.bpPct > 50 ? " bp" : ""}" width="${W}" height="${p.h}" rx="6"/>
      <text class="title" x="10" y="18">${v.id}: ${esc(trim(v.name, 34))}  ×${v.parallelism}</text>`;
    v.operators.forEach((op, i) => {
      const r = s.opRates[i];
      out += `<text class="op" x="14" y="${36 + 15 * i}">${i ? "→ " : ""}${esc(trim(op, i ? 31 : 33))}<title>${esc(op)}</title></text>`;
      out += `<text class="metric oprate" x="${W - 8}" y="${36 + 15 * i}" text-anchor="end">${r === null ? "" : fmtNum(r) + "/s"}</text>`;
    });
    const y0 = 30 + 15 * v.operators.length + 6;
    out += `<text class="metric" x="10" y="${y0 + 10}">in ${fmtNum(s.inRate)}/s · out ${fmtNum(s.outRate)}/s${s.wm ? " · wm lag " + ((t * 1000 - s.wm) / 1e6).toFixed(1) + "s" : ""}</text>`;
    out += `<rect class="bar-bg" x="10" y="${y0 + 18}" width="120" height="7"/><rect class="bar-busy" x="10" y="${y0 + 18}" width="${1.2 * (s.busyPct || 0)}" height="7"/>`;
    out += `<text class="metric" x="136" y="${y0 + 25}">busy ${s.busyPct === null ? "–" : Math.round(s.busyPct) + "%"}</text>`;
    out += `<rect class="bar-bg" x="10" y="${y0 + 30}" width="120" height="7"/><rect class="bar-bp" x="10" y="${y0 + 30}" width="${1.2 * (s.bpPct || 0)}" height="7"/>`;
    out += `<text class="metric" x="136" y="${y0 + 37}">backpressure ${s.bpPct === null ? "–" : Math.round(s.bpPct) + "%"}</text>`;
    out += `<text class="metric tms" x="10" y="${y0 + 50}">on ${esc(trim(tms.join(", "), 44))}</text></g>`;
  }
  return out + "</svg>";
}

function trim(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

function explainPage() {
  main.innerHTML = `<h1>EXPLAIN</h1>
    <p class="muted">A query's three graphs: the StreamGraph of operators, the JobGraph of fused tasks, and the ExecutionGraph placed on slots now.</p>
    <textarea id="explain-sql" placeholder="SELECT word, COUNT(*) FROM …">${esc(sessionStorage.getItem("explain") || "")}</textarea>
    <p><button class="primary" id="explain-run">Explain</button></p>
    <pre id="explain-out" class="muted">The plan appears here.</pre>`;
  const run = async () => {
    const sql = document.getElementById("explain-sql").value;
    sessionStorage.setItem("explain", sql);
    const out = document.getElementById("explain-out");
    try {
      const r = await api("/api/explain", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({sql})});
      out.className = "";
      out.textContent = r.plan;
    } catch (e) {
      out.className = "error";
      out.textContent = e.message;
    }
  };
  document.getElementById("explain-run").onclick = run;
  document.getElementById("explain-sql").onkeydown = e => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) run(); };
}

window.addEventListener("hashchange", route);
route();
