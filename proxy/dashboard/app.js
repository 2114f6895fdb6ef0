// agentctx dashboard: the sessions of /agentctx/stats, live, and a
// session's timeline, context and artifacts. No dependencies.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token");
  const base = location.pathname.replace(/[^/]*$/, ""); // .../agentctx/
  const statsURL = base + "stats";
  const SVGNS = "http://www.w3.org/2000/svg";
  const POLL_MS = 2000;
  let stats = null;
  let artifactsOffset = 0;
  let viewer = null; // {id, offsets: [..]}

  function api(path) {
    const h = token ? { "X-Agentctx-Token": token } : {};
    return fetch(path, { headers: h, cache: "no-store" }).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { throw new Error(r.status + " " + t); });
      return r.json();
    });
  }
  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    const e = tag.indexOf("svg:") === 0 ? document.createElementNS(SVGNS, tag.slice(4)) : document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function int(n) { return (n || 0).toLocaleString("en-US"); }
  // count writes "1 compaction", "3 compactions".
  function count(n, one, many) { return int(n) + " " + (n === 1 ? one : many || one + "s"); }
  function usd(n) { return (n < 0 ? "-$" : "$") + Math.abs(n || 0).toFixed(4); }
  function pct(x) { return isFinite(x) ? (100 * x).toFixed(1) + "%" : "–"; }
  function hitRatio(s) {
    const all = (s.input_tokens || 0) + (s.cache_read_tokens || 0) + (s.cache_write_tokens || 0);
    return all ? (s.cache_read_tokens || 0) / all : NaN;
  }
  function ago(t) {
    const d = (Date.now() - Date.parse(t)) / 1000;
    if (!isFinite(d)) return "–";
    if (d < 60) return Math.max(0, Math.round(d)) + " s ago";
    if (d < 3600) return Math.round(d / 60) + " min ago";
    return new Date(t).toLocaleString();
  }
  // cell makes a table cell whose data-v is the raw value (the tests
  // compare it with /agentctx/stats) and whose text is formatted.
  function cell(key, raw, text, cls) {
    const td = el("td", { "data-k": key, "data-v": String(raw) }, text);
    if (cls) td.className = cls;
    return td;
  }

  // errorsCell is the session's errors, marked when there are any; its
  // title says how many requests the client hung up on (not errors).
  function errorsCell(s) {
    const td = cell("errors", s.errors || 0, int(s.errors), s.errors > 0 ? "neg" : "");
    td.title = count(s.client_cancels, "request") + " the client hung up on";
    return td;
  }

  function renderList() {
    const body = $("sessions").tBodies[0];
    body.textContent = "";
    const list = (stats && stats.sessions) || [];
    $("empty").hidden = list.length > 0;
    list.slice().sort(function (a, b) { return Date.parse(b.last_activity) - Date.parse(a.last_activity); }).forEach(function (s) {
      const tr = el("tr", { class: "session", "data-session": s.session });
      tr.append(
        cell("session", s.session, s.session, "text"),
        projectCell(s),
        cell("client", s.client, s.client || "–", "text"),
        cell("model", s.model, s.model || "–", "text"),
        cell("requests", s.requests, int(s.requests)),
        errorsCell(s),
        cell("tokens_before", s.tokens_before, int(s.tokens_before)),
        cell("tokens_after", s.tokens_after, int(s.tokens_after)),
        cell("cache_hit", hitRatio(s), pct(hitRatio(s))),
        cell("compactions", s.compactions, int(s.compactions)),
        cell("clearing_batches", s.clearing_batches, int(s.clearing_batches)),
        cell("cache_breaks", s.cache_breaks, int(s.cache_breaks)),
        cell("cost_usd", s.cost_usd, usd(s.cost_usd)),
        cell("saved_usd", s.saved_usd, usd(s.saved_usd), s.saved_usd < 0 ? "neg" : ""),
        cell("last_activity", s.last_activity, ago(s.last_activity)));
      tr.addEventListener("click", function () { location.hash = "#/session/" + encodeURIComponent(s.session); });
      body.append(tr);
    });
  }
  // projectCell is the last element of the session's project directory,
  // the whole path in its title.
  function projectCell(s) {
    const p = s.project || "";
    const td = cell("project", p, p ? p.replace(/[\\/]+$/, "").split(/[\\/]/).pop() || p : "–", "text");
    if (p) td.title = p;
    return td;
  }
  function renderTotal() {
    const t = (stats && stats.total) || {};
    $("total").textContent = count(t.requests, "request") + " · bill " + usd(t.cost_usd) + " · saved " + usd(t.saved_usd);
    // The headline: what agentctx saved, of what the same requests would
    // have cost without it.
    const h = $("headline");
    h.textContent = "";
    if (!t.requests) {
      h.textContent = "Nothing billed yet.";
      return;
    }
    const share = t.cost_without_usd > 0 ? t.saved_usd / t.cost_without_usd : NaN;
    h.append(el("strong", { id: "headline-saved", class: t.saved_usd < 0 ? "neg" : "" }, "Saved " + usd(t.saved_usd) + (isFinite(share) ? " (" + pct(share) + ")" : "")),
      document.createTextNode(" · " + usd(t.cost_usd) + " billed instead of " + usd(t.cost_without_usd) + " without agentctx"));
  }

  // niceCeil rounds n up to a round number for the axis: 52,001 → 60,000.
  function niceCeil(n) {
    const m = Math.pow(10, Math.floor(Math.log10(n)));
    const f = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].find(function (f) { return f * m >= n; });
    return f * m;
  }
  function drawTimeline(points) {
    const svg = $("timeline");
    svg.textContent = "";
    const W = 900, H = 260, L = 72, R = 10, T = 10, B = 30;
    const series = [
      ["client", function (p) { return p.tokens_client; }],
      ["forwarded", function (p) { return p.tokens_forwarded; }],
      ["cache-read", function (p) { return p.cache_read_tokens; }],
      ["cache-write", function (p) { return p.cache_write_tokens; }],
    ];
    let max = 1;
    points.forEach(function (p) { series.forEach(function (s) { max = Math.max(max, s[1](p) || 0); }); });
    max = niceCeil(max);
    const n = points.length;
    const x = function (i) { return L + (n <= 1 ? (W - L - R) / 2 : i * (W - L - R) / (n - 1)); };
    const y = function (v) { return T + (H - T - B) * (1 - (v || 0) / max); };
    svg.append(el("svg:line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
    svg.append(el("svg:line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
    [0, 0.5, 1].forEach(function (f) {
      svg.append(el("svg:text", { x: L - 6, y: y(max * f) + 4, "text-anchor": "end" }, int(Math.round(max * f))));
    });
    svg.append(el("svg:text", { class: "unit", transform: "rotate(-90)", x: -(T + H - B) / 2, y: 12, "text-anchor": "middle" }, "tokens per request"));
    if (n === 0) {
      svg.append(el("svg:text", { class: "empty", x: (L + W - R) / 2, y: (T + H - B) / 2, "text-anchor": "middle" }, "no request yet"));
    } else {
      svg.append(el("svg:text", { x: x(0), y: H - 8, "text-anchor": n <= 1 ? "middle" : "start" }, "request 1"));
      if (n > 1) svg.append(el("svg:text", { x: x(n - 1), y: H - 8, "text-anchor": "end" }, "request " + n));
    }
    points.forEach(function (p, i) {
      if (p.compacted) svg.append(el("svg:line", { class: "mark-compaction", x1: x(i), y1: T, x2: x(i), y2: H - B, "data-i": i }));
    });
    series.forEach(function (s) {
      const pts = points.map(function (p, i) { return x(i).toFixed(1) + "," + y(s[1](p)).toFixed(1); }).join(" ");
      svg.append(el("svg:polyline", { class: "line " + s[0], points: pts }));
    });
    points.forEach(function (p, i) {
      const c = el("svg:circle", { class: "pt", cx: x(i), cy: y(p.tokens_forwarded), r: 2.5, "data-i": i });
      c.append(el("svg:title", {}, "request " + (i + 1) + ": " + int(p.tokens_client) + " sent, " + int(p.tokens_forwarded) +
        " forwarded, " + int(p.cache_read_tokens) + " cache read, " + int(p.cache_write_tokens) + " written"));
      svg.append(c);
      if (p.offloaded > 0) svg.append(el("svg:rect", { class: "mark-offload", x: x(i) - 3, y: H - B + 4, width: 6, height: 6, "data-i": i }));
      if (p.clearing) svg.append(el("svg:path", { class: "mark-clearing", d: "M" + (x(i) - 4) + "," + (H - B + 20) + " l4,-8 l4,8 z", "data-i": i }));
    });
  }

  const PARTS = ["system", "tools", "messages", "tool_results", "references", "summary"];
  const LABELS = { system: "system", tools: "tools", messages: "messages", tool_results: "tool results kept", references: "references", summary: "summary" };
  function sumParts(c) {
    let t = 0;
    PARTS.forEach(function (k) { t += (c && c[k]) || 0; });
    return t;
  }
  // drawComposition draws c as a stacked bar whose full width is scale
  // tokens (default: c's own total).
  function drawComposition(c, id, scale) {
    id = id || "composition";
    const svg = $(id), legend = $(id + "-legend");
    svg.textContent = "";
    legend.textContent = "";
    const total = Math.max(scale || 0, sumParts(c));
    let at = 0;
    const W = 900;
    PARTS.forEach(function (k) {
      const v = c[k] || 0;
      if (v > 0 && total > 0) {
        const w = W * v / total;
        const r = el("svg:rect", { class: "c-" + k, x: at, y: 10, width: Math.max(w, 1), height: 40, "data-part": k, "data-v": v });
        r.append(el("svg:title", {}, LABELS[k] + ": " + int(v) + " tokens"));
        svg.append(r);
        at += w;
      }
      legend.append(el("span", { class: "k c-" + k, "data-part": k, "data-v": v }, LABELS[k] + " " + int(v)));
    });
    legend.append(el("span", { class: "total", "data-v": sumParts(c) }, "total " + int(sumParts(c)) + " tokens"));
    if (!c.known) legend.append(el("span", {}, "(no messages kept: system prompt and tools only)"));
  }

  function renderArtifacts(page, append) {
    const body = $("artifacts").tBodies[0];
    if (!append) body.textContent = "";
    page.artifacts.forEach(function (a) {
      const m = a.metadata || {};
      const tr = el("tr", { class: "artifact", "data-id": a.id });
      tr.append(cell("id", a.id, a.id, "text"), cell("kind", m.context_type || a.type, m.context_type || a.type, "text"),
        cell("tool", m.tool_name || "", m.tool_name || "–", "text"), cell("lines", a.lines, int(a.lines)),
        cell("chars", a.chars, int(a.chars)), cell("created", a.created_at, new Date(a.created_at).toLocaleTimeString()));
      tr.addEventListener("click", function () {
        location.hash = "#/session/" + encodeURIComponent(currentSession()) + "/artifact/" + encodeURIComponent(a.id);
      });
      body.append(tr);
    });
    artifactsOffset = page.offset + page.artifacts.length;
    $("artifacts-empty").hidden = artifactsOffset > 0;
    $("artifacts-more").hidden = !page.notice;
    $("artifacts-notice").textContent = page.notice || "";
  }

  function openViewer(id, offset, fresh) {
    if (fresh) viewer = { id: id, offsets: [0] };
    api(base + "api/read?id=" + encodeURIComponent(id) + "&offset=" + offset).then(function (p) {
      $("viewer").hidden = false;
      if (fresh) $("viewer").scrollIntoView();
      $("viewer-title").textContent = id;
      $("viewer-text").textContent = p.text;
      // The read-back's notice names where to read on: its last offset=N.
      const all = Array.from(p.text.slice(-400).matchAll(/offset=(\d+)\)/g));
      const m = all.length ? all[all.length - 1] : null;
      viewer.next = m && +m[1] > offset ? +m[1] : null;
      viewer.at = offset;
      $("viewer-next").disabled = viewer.next === null;
      $("viewer-prev").disabled = viewer.offsets.indexOf(offset) <= 0;
      $("viewer-pos").textContent = "from character " + int(offset);
    }).catch(function (e) { $("viewer").hidden = false; $("viewer-text").textContent = String(e); });
  }

  // The page's hash: #/session/KEY, or #/session/KEY/artifact/ID to open
  // an artifact in the viewer.
  function route() {
    const m = /^#\/session\/([^/]+)(?:\/artifact\/(.+))?$/.exec(location.hash);
    return m ? { session: decodeURIComponent(m[1]), artifact: m[2] ? decodeURIComponent(m[2]) : null } : {};
  }
  function currentSession() { return route().session || null; }

  function renderSession(key, full) {
    const s = ((stats && stats.sessions) || []).find(function (s) { return s.session === key; });
    $("session-title").textContent = "Session " + key;
    if (!s) { $("session-summary").textContent = "No statistics for this session."; return; }
    $("session-summary").textContent = (s.client || "–") + " · " + (s.model || "–") + " · " + count(s.requests, "request") + " · " +
      count(s.errors, "error") + " · " + count(s.client_cancels, "client cancel") + " · " +
      count(s.compactions, "compaction") + " · " + count(s.clearing_batches, "clearing batch", "clearing batches") + " · " +
      count(s.cache_breaks, "cache break") + " · cache hit " + pct(hitRatio(s)) + " · bill " + usd(s.cost_usd) + " · saved " + usd(s.saved_usd);
    drawTimeline(s.timeline || []);
    api(base + "api/context?session=" + encodeURIComponent(key)).then(function (c) { drawComposition(c); }).catch(function () {});
    if (full) {
      $("viewer").hidden = true;
      if (route().artifact) openViewer(route().artifact, 0, true);
      api(base + "api/artifacts?session=" + encodeURIComponent(key)).then(function (p) { renderArtifacts(p, false); })
        .catch(function (e) { $("artifacts-notice").textContent = String(e.message || e); });
    }
  }

  function refresh(full) {
    return api(statsURL).then(function (s) {
      stats = s;
      const key = currentSession();
      $("list-view").hidden = !!key;
      $("session-view").hidden = !key;
      if (key) renderSession(key, full); else renderList();
      renderTotal();
      $("updated").textContent = "updated " + new Date().toLocaleTimeString();
      document.body.setAttribute("data-loaded", "1");
    }).catch(function (e) { $("updated").textContent = "cannot read the statistics: " + e.message; });
  }

  // A report (agentctx report --html): the data is in the page.
  const reportData = $("report-data");
  if (reportData) {
    const r = JSON.parse(reportData.textContent);
    $("session-title").textContent = r.title;
    $("session-summary").textContent = count(r.requests, "request") + " · " + count(r.compactions, "compaction") + " · " +
      count(r.clearing_batches, "clearing batch", "clearing batches") + " · " + count(r.cache_breaks, "cache break") + " · bill " + usd(r.cost_usd) +
      " · without agentctx " + usd(r.cost_without_usd) + " · saved " + usd(r.saved_usd);
    drawTimeline(r.timeline || []);
    const scale = Math.max(sumParts(r.after), sumParts(r.before));
    drawComposition(r.after, "composition", scale);
    if (r.before) { $("before-block").hidden = false; drawComposition(r.before, "composition-before", scale); }
    document.body.setAttribute("data-loaded", "1");
    return;
  }

  $("artifacts-more").addEventListener("click", function () {
    const key = currentSession();
    api(base + "api/artifacts?session=" + encodeURIComponent(key) + "&offset=" + artifactsOffset).then(function (p) { renderArtifacts(p, true); });
  });
  $("viewer-next").addEventListener("click", function () {
    if (viewer && viewer.next !== null) { viewer.offsets.push(viewer.next); openViewer(viewer.id, viewer.next, false); }
  });
  $("viewer-prev").addEventListener("click", function () {
    if (!viewer) return;
    const i = viewer.offsets.indexOf(viewer.at);
    if (i > 0) { viewer.offsets.length = i; openViewer(viewer.id, viewer.offsets[i - 1], false); }
  });
  window.addEventListener("hashchange", function () { refresh(true); });
  refresh(true);
  setInterval(function () { refresh(false); }, POLL_MS);
})();
