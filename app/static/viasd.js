// The Generate tab's slider notch, drawn in the browser: no server round trip inside a computed grid.
//
// The page holds the run's computed points (app/views/page_grid.py: tables, then one short record per
// point). On every slider move `viasd.move` puts the pair in order (tau_slim follows tau_accept down and
// back up), snaps each value to the grid, and, where that point is computed, redraws the text, the
// headline, the legend, the why sentence, the trade-off chart and the picker from the point's record;
// what only the server draws (the cards below, the charts, the downloads) is greyed until its re-route
// lands. Away from any computed point the headline shows the nearest computed point's numbers as ghosts,
// and the release runs the server's re-route. Gradio gr.HTML components register their `props` here
// (their js_on_load), so setting `props.value` updates both the page and Gradio's own copy.
(() => {
  if (window.viasd) return;
  const V = window.viasd = {parts: {}, grid: null, wantSlim: null, shown: null, last: 0};
  const STALE = ["#viasd-status", "#viasd-metrics-box", "#viasd-conf-plot", "#viasd-timeline-plot", "#viasd-more-charts",
                 "#viasd-strip-plot", "#viasd-files", "#viasd-prediction"];
  const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
  const fill = (tpl, values) => tpl.replace(/@@(\w+)@@/g, (m, k) => (k in values ? values[k] : m));
  const conf = (v) => (v < 0 ? "—" : (v / 100).toFixed(2));
  const key = (a, s, g) => `${a}|${s}|${g}`;

  V.register = (name, element, props) => {
    V.parts[name] = {element, props};
    if (name === "data") V.load(props.value);
    if (name === "picker") element.addEventListener("click", (e) => {
      const cell = e.target.closest && e.target.closest("rect.cell");
      if (cell && !cell.classList.contains("invalid")) V.pick(Number(cell.dataset.a), Number(cell.dataset.s));
    });
    // Gradio writes a component's initial props after its js_on_load: draw once every part has settled
    clearTimeout(V.later);
    V.later = setTimeout(() => V.grid && V.draw(V.shown, true), 50);
  };
  const put = (name, value) => {
    const p = V.parts[name];
    if (!p) return;
    p.want = value;
    if (p.props.value !== value) p.props.value = value;
  };
  // A part mounted late (the picker, inside an accordion opened after the page loaded) can get Gradio's initial
  // value after the script drew it (under load, later than the 50 ms settle): it keeps what the script drew.
  V.keep = (name) => {
    const p = V.parts[name];
    if (p && p.want !== undefined && p.props.value !== p.want) p.props.value = p.want;
  };

  V.load = (text) => {  // a whole grid ("grid"), the points computed since ("more"), or none ("")
    if (!text) {  // a run without a grid yet (it is running, or not VIA-SD): nothing to draw from
      V.grid = null; V.shown = null; V.wantSlim = null;
      put("notch", '<div class="viasd-notch-line">No threshold grid computed for this run: '
        + "a slider move re-routes on the server.</div>");
      put("tradeoff", '<div class="viasd-tradeoff"></div>');
      put("picker", '<div class="viasd-picker"></div>');
      return;
    }
    const d = typeof text === "string" ? JSON.parse(text) : text;
    const g = V.grid;
    if (d.kind === "grid" || (d.kind === "refresh" && g && g.id === d.id)) {
      V.grid = {...d, points: {...d.points}, order: [...d.order]};
      if (d.kind === "grid") { V.shown = null; V.wantSlim = null; }  // a new run: its own point, as the server drew
    }  // a refresh: the same run's grid with new numbers, drawn where the visitor looks
    else if (g && g.id === d.id && d.texts_from === g.texts.length && d.kinds_from === g.kinds.length) {
      g.texts.push(...d.texts); g.kinds.push(...d.kinds); Object.assign(g.points, d.points);
      g.order.push(...d.order); g.ready = d.ready; g.pace = d.pace; g.ahead = d.ahead;
    } else return;
    V.draw(V.shown, true);
  };

  const rows = (p) => {  // a point's token rows: a shared prefix of an earlier point's, then its own
    if (!p.rows) p.rows = p.b ? rows(V.grid.points[p.b]).slice(0, p.k).concat(p.t) : p.t;
    return p.rows;
  };

  V.tokensHtml = (p) => {  // kept on the point: its tables only grow, so its text never changes
    if (!p.html) p.html = tokensHtml(p);
    return p.html;
  };
  const tokensHtml = (p) => {
    const g = V.grid, t = rows(p);
    const spans = t.map(([ti, round, ki, dc, sc, fc], pos) => {
      const [shown, repr] = g.texts[ti], [classes, attrs, middle, details] = g.kinds[ki];
      const title = `${repr} · token ${pos + 1} · round ${round + 1}\n${middle}confidence: drafter ${conf(dc)} · ` +
        `slim ${conf(sc)} · full ${conf(fc)}\n${details}`;
      return `<span class="${classes}" data-pos="${pos}" data-round="${round}" ${attrs} title="${esc(title)}">` +
        `${shown}</span>`;
    });
    return `<div id="viasd-tokens" class="viasd-tokens" data-tokens="${t.length}" data-pending="0" ` +
      `data-stop="${p.stop}">${spans.join("")}</div>`;
  };
  V.headlineHtml = (p, row, classes) => {  // the point's own row (a contradicted speed-up) unless one is given
    const r = row === undefined ? p.r || "" : row;
    return fill(V.grid.tpl.headline, {speed: p.v[0], rejected: p.v[1], words: p.v[2], here: p.h || "",
      note: esc(r), row: r ? esc(r) : "&nbsp;", classes: classes ? ` ${classes}` : ""});
  };
  V.legendHtml = (p) => {
    const values = {standing: p.c[p.c.length - 2], cut: p.c[p.c.length - 1]};
    p.c.slice(0, -2).forEach((n, i) => { values[`c${i}`] = n; });
    return fill(V.grid.tpl.legend, values);
  };

  const nearest = (axis, v) => {  // the axis value nearest v (ties to the larger); null outside the axis
    if (v < axis[0] - 1e-9 || v > axis[axis.length - 1] + 1e-9) return null;
    return axis.reduce((best, x) => (Math.abs(x - v) < Math.abs(best - v) - 1e-12 ||
      (Math.abs(Math.abs(x - v) - Math.abs(best - v)) <= 1e-12 && x > best) ? x : best), axis[0]);
  };
  const inOrder = (a, s, off) => [a, s >= off ? s : Math.min(s, a)];
  V.snap = (a, s, g) => {
    const x = V.grid.axes, sa = nearest(x.a, a), sg = nearest(x.g, g);
    const ss = s < V.grid.off && s >= a - 1e-9 ? sa : nearest(x.s, s);  // taken along: tau_accept's notch (grid.py)
    if (sa === null || ss === null || sg === null) return null;
    const [oa, os] = inOrder(sa, ss, V.grid.off);
    return {a: oa, s: os, g: sg};
  };

  // A slider moved: put the pair in order (the slider that moved leads), then show the point.
  V.move = (which, a, s, g) => {
    a = Number(a); s = Number(s); g = Number(g);
    const off = V.grid ? V.grid.off : 1.0;
    if (V.wantSlim === null) V.wantSlim = s;  // the tau_slim the visitor chose, before any taking along
    if (which === "slim") { V.wantSlim = s; if (s < off && s > a) a = s; }
    else if (V.wantSlim < off) s = Math.min(V.wantSlim, a);
    else if (s < off && s > a) s = a;
    V.draw({a, s, g});
    return [a, s];
  };

  const label = (v) => (v >= 1 ? "off" : v.toFixed(Math.round(v * 1000) % 50 ? 3 : 2));
  const pointName = (q) => `τ_accept ${q.a.toFixed(2)} · τ_slim ${label(q.s)} · γ ${q.g}`;

  V.draw = (wanted, quiet) => {  // quiet: redraw what is shown (new data), greying nothing
    const g = V.grid;
    if (!g) return;
    const want = wanted || (g.base && (([a, s, gg]) => ({a: +a, s: +s, g: +gg}))(g.base.split("|")));
    if (!want) return;
    V.shown = want;
    if (!quiet) V.answered = null;
    const at = V.snap(want.a, want.s, want.g), p = at && g.points[key(at.a, at.s, at.g)];
    let line;
    if (!p && quiet && V.answered === pointName(want)) {  // new points arrived: the server's answer stays shown
      line = `${pointName(want)} is not in the grid: the numbers above are the engine's, run on release`;
    } else if (p) {
      put("tokens", V.tokensHtml(p)); put("headline", V.headlineHtml(p)); put("legend", V.legendHtml(p));
      put("why", p.why);
      const snapped = at.a !== want.a || at.s !== want.s || at.g !== want.g;
      line = `${g.recorded ? "Recorded" : "Computed"} point ${pointName(at)}` +
        (snapped ? ` (nearest to ${pointName(want)})` : "") + " · drawn in the browser, no model call";
      if (!quiet) V.stale(true);
    } else {
      const near = at ? V.nearestComputed(at) : null;
      const row = !at ? `outside the ${g.recorded ? "recorded" : "computed"} grid: release to run the engine` :
        (near ? `≈ nearest computed: ${pointName(near.q)}; release to compute this point` : "release to compute") +
        V.eta();
      const ghost = near ? near.p : {v: ["—", "—", "—"]};
      put("headline", V.headlineHtml(ghost, row, "ghost"));
      line = `${pointName(want)} is not ${at ? "computed yet" : "in the grid"}: the numbers above are ghosts`;
      if (!quiet) V.stale(true, true);
    }
    put("notch", (g.label ? `<div class="viasd-kind-line">${esc(g.label)}</div>` : "") +
      `<div class="viasd-notch-line">${esc(line)}</div>` + V.readyLine());
    V.chart(at || want);
    V.picker(at || want);
  };

  V.nearestComputed = (at) => {
    let best = null;
    for (const k of V.grid.order) {
      const [a, s, gg] = k.split("|").map(Number);
      const d = Math.abs(a - at.a) / 0.05 + (s === at.s ? 0 : 2) + (gg === at.g ? 0 : 2);
      if (!best || d < best.d) best = {d, q: {a, s, g: gg}, p: V.grid.points[k]};
    }
    return best;
  };

  V.eta = () => {  // how long a release on a point not computed yet takes, at this run's measured pace
    const pace = V.grid.pace;
    return pace > 0 ? ` (about ${pace < 10 ? pace.toFixed(1) : Math.round(pace)} s at this run's pace)` : "";
  };
  V.lineReady = () => {  // [notches computed, notches] of the tau_accept line at the tau_slim and gamma shown
    const g = V.grid, at = V.shown && V.snap(V.shown.a, V.shown.s, V.shown.g);
    if (!at) return null;
    const keys = new Set(g.axes.a.map((a) => V.snap(a, at.s, at.g)).filter(Boolean).map((q) => key(q.a, q.s, q.g)));
    return [[...keys].filter((k) => k in g.points).length, keys.size, at];
  };
  V.readyLine = () => {
    const g = V.grid, line = g.recorded ? null : V.lineReady();
    const ready = g.ready >= g.total ? `all ${g.total} points` :
      `${g.ready} of ${g.total} points (` + (g.ahead > 0 ? `queued behind ${g.ahead} newer run${g.ahead > 1 ? "s'" : "'s"}`
      + " grid" + (g.ahead > 1 ? "s" : "") : "computing: the τ_accept line in view first, nearest first") + ")";
    const onLine = !line ? "" : `τ_accept line at τ_slim ${label(line[2].s)}, γ ${line[2].g}: ` +
      (line[0] >= line[1] ? `all ${line[1]} notches ready · ` : `${line[0]} of ${line[1]} notches ready · `);
    return `<div class="viasd-grid-line">${onLine}Grid: ${ready} · ${esc(g.source)}</div>`;
  };

  V.stale = (on, text) => {  // grey what this point has not drawn yet (text: the legend and why too)
    for (const sel of [...STALE, ...(text ? ["#viasd-legend-box", "#viasd-why"] : [])]) {
      const el = document.querySelector(sel);
      if (el) el.classList.toggle("viasd-stale", on);
    }
  };
  V.fresh = () => {  // the server's re-route landed; one it refused ([data-stale]) leaves the ghosts greyed
    const refused = !!document.querySelector("#viasd-status [data-stale]");
    const at = V.grid && V.shown && V.snap(V.shown.a, V.shown.s, V.shown.g);
    // an answer for an earlier release may land after the page drew a later point: the page's point stays
    if (at && V.grid.points[key(at.a, at.s, at.g)]) V.draw(V.shown, true);
    else if (!refused && V.shown) V.answered = pointName(V.shown);  // off the grid: no later redraw ghosts it
    V.stale(refused, true);
    document.querySelector("#viasd-status")?.classList.remove("viasd-stale");  // its own line is always legible
  };

  // The trade-off chart: speed-up (left axis) and words differing / drafts rejected (right axis, %) against
  // tau_accept, at the shown tau_slim and gamma; the marker is the shown point.
  V.chart = (at) => {
    const g = V.grid, W = 460, H = 150, L = 40, R = 40, T = 8, B = 30;
    const xs = g.axes.a, x0 = xs[0], x1 = xs[xs.length - 1];
    const rows = xs.map((a) => { const [oa, os] = inOrder(a, at.s, g.off); return [a, g.points[key(oa, os, at.g)]]; })
      .filter(([, p]) => p);
    const speeds = rows.map(([, p]) => p.n[0]).filter((v) => v !== null);
    const top = Math.max(1.2, ...speeds.map((v) => v * 1.1));
    const X = (a) => L + (a - x0) / (x1 - x0 || 1) * (W - L - R);
    const Y = (v) => T + (1 - v / top) * (H - T - B), P = (v) => T + (1 - v) * (H - T - B);
    const path = (pts) => pts.map(([x, y], i) => `${i ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)}`).join("");
    const line = (f, scale, cls) => `<path class="${cls}" d="${path(rows.filter(([, p]) => f(p) !== null)
      .map(([a, p]) => [X(a), scale(f(p))]))}"/>`;
    const ticks = [0.3, 0.5, 0.7, 0.9, 1.0].filter((v) => v >= x0 && v <= x1).map((v) =>
      `<text x="${X(v)}" y="${H - B + 16}" text-anchor="middle">${v.toFixed(1)}</text>`).join("");
    const here = g.points[key(...inOrder(at.a, at.s, g.off), at.g)];
    const mark = here ? `<line class="now" x1="${X(at.a)}" x2="${X(at.a)}" y1="${T}" y2="${H - B}"/>` +
      (here.n[0] !== null ? `<circle class="speed" cx="${X(at.a)}" cy="${Y(here.n[0])}" r="6"/>` : "") +
      (here.n[1] !== null ? `<circle class="words" cx="${X(at.a)}" cy="${P(here.n[1])}" r="6"/>` : "") : "";
    const svg = `<svg viewBox="0 0 ${W} ${H}" class="viasd-tradeoff-svg" role="img" ` +
      `aria-label="speed-up and words differing against tau_accept">` +
      `<line class="axis" x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}"/>` +
      `<line class="plain" x1="${L}" x2="${W - R}" y1="${Y(1)}" y2="${Y(1)}"/>` +
      `<text x="${L - 6}" y="${Y(1) + 4}" text-anchor="end">1×</text>` +
      `<text x="${L - 6}" y="${Y(top) + 10}" text-anchor="end">${top.toFixed(1)}×</text>` +
      `<text x="${W - R + 6}" y="${P(1) + 10}">100%</text><text x="${W - R + 6}" y="${P(0)}">0%</text>` +
      ticks + line((p) => p.n[0], Y, "speed") + line((p) => p.n[1], P, "words") + line((p) => p.n[2], P, "rejected") +
      mark + `<text x="${(L + W - R) / 2}" y="${H - 4}" text-anchor="middle">τ_accept</text></svg>`;
    const v = here ? here.v : ["—", "—", "—"];
    put("tradeoff", `<div class="viasd-tradeoff"><div class="keys"><span class="k speed">speed-up ${v[0]}</span>` +
      `<span class="k words">words differing ${v[2]}</span><span class="k rejected">drafts rejected ${v[1]}</span>` +
      `<span class="k at">at τ_slim ${label(at.s)}, γ ${at.g}</span></div>${svg}</div>`);
  };

  // The two-dimensional picker: tau_accept across, tau_slim up, one cell per slider notch. Cells above the
  // diagonal (tau_slim over tau_accept, tier 2 on) are not a valid pair; a click sets both sliders through
  // their own input and release events, so it is exactly a drag of each.
  V.picker = (at) => {
    const g = V.grid, n = 21, C = 13, L = 34, T = 6, B = 30, W = L + n * C + 8, H = T + n * C + B;
    const cells = [];
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
      const a = i / 20, s = j / 20, q = V.snap(a, s, at.g), done = q && g.points[key(q.a, q.s, q.g)];
      const invalid = s < g.off && s > a + 1e-9, here = Math.abs(a - at.a) < 1e-9 && Math.abs(s - at.s) < 1e-9;
      const cls = ["cell", invalid ? "invalid" : done ? "done" : "", here ? "here" : ""].filter(Boolean).join(" ");
      cells.push(`<rect class="${cls}" data-a="${a.toFixed(2)}" data-s="${s.toFixed(2)}" x="${L + i * C}" ` +
        `y="${T + (n - 1 - j) * C}" width="${C - 1}" height="${C - 1}"><title>τ_accept ${a.toFixed(2)}, τ_slim ` +
        `${label(s)}${invalid ? " (not a valid pair)" : done ? " (computed)" : ""}</title></rect>`);
    }
    put("picker", `<svg viewBox="0 0 ${W} ${H}" class="viasd-picker-svg" role="img" aria-label="pick tau_accept ` +
      `and tau_slim">${cells.join("")}<text x="${L}" y="${H - 14}">0</text><text x="${L + n * C}" y="${H - 14}" ` +
      `text-anchor="end">1</text><text x="${L + n * C / 2}" y="${H - 2}" text-anchor="middle">τ_accept →</text>` +
      `<text x="${L - 4}" y="${T + 10}" text-anchor="end">1</text><text x="${L - 4}" y="${T + n * C}" ` +
      `text-anchor="end">0</text><text x="10" y="${T + n * C / 2}" transform="rotate(-90 10 ${T + n * C / 2})" ` +
      `text-anchor="middle">τ_slim →</text></svg>`);
  };

  // A slider moved by keyboard never fires Gradio's release (it listens for pointerup): send one once the keys
  // rest, so the server's re-route (cards, charts) follows a keyboard move as it follows a drag. Not one per key:
  // each answer redraws the charts below, and a redraw landing during the next key press held that notch's own
  // draw back by up to 200 ms (`python -m app.tools.latency`). A drag sends one release at its end, too.
  const KEYS_REST_MS = 450;
  let release = null;
  document.addEventListener("keyup", (e) => {
    const t = e.target;
    if (!(t && t.type === "range" && t.closest && t.closest("#viasd-tau-accept, #viasd-tau-slim, #viasd-gamma")))
      return;
    clearTimeout(release);
    release = setTimeout(() => t.dispatchEvent(new PointerEvent("pointerup", {bubbles: true})), KEYS_REST_MS);
  }, true);

  V.pick = (a, s) => {
    const set = (id, v) => {
      const el = document.querySelector(`#${id} input[type=range]`);
      if (el) { el.value = String(v); el.dispatchEvent(new Event("input", {bubbles: true})); }
      return el;
    };
    V.wantSlim = s;
    set("viasd-tau-accept", a);
    const last = set("viasd-tau-slim", s);
    if (last) setTimeout(() => last.dispatchEvent(new PointerEvent("pointerup", {bubbles: true})), 0);
  };
})();
