// The book's live explorers (issue 27): the notebooks' kvlib Explorers, computed in the page.
//
// Every formula comes from kvlib_formulas.js, which scripts/build_book.py generates from kvlib's
// SymPy expressions (kvlib.views.book_js); this file holds no formula. What it adds is plain and
// small: exact rational arithmetic on BigInt, kvlib's number formatting (kvlib.core.units,
// kvlib.views.style.format_context), the layer-group sums of kvlib.models.spec, the controls,
// the readout, and an SVG chart. tests/book/test_explorers.py drives every explorer against
// kvlib's Python results. A classic script (not an ES module), so it runs from file://.
(function () {
  "use strict";
  const G = window.KVLIB_GENERATED;
  if (!G) return;
  const DATA = G.data;
  // notebooks 05 and 06's KV dtype control: vLLM's names for the formats kvlib models exactly,
  // each with the value the explorer keeps (kvlib.core.dtypes.VLLM_EXACT_KV_DTYPES) and its bytes
  const KV_OPTIONS = DATA.kv_dtypes.map(([value, name]) => [value, name]);
  const KV_BYTES = Object.fromEntries(DATA.kv_dtypes.map(([value, , bytes]) => [value, bytes]));

  // ------------------------------------------------------------ exact rationals [n, d] (BigInt)
  const gcd = (a, b) => { a = a < 0n ? -a : a; b = b < 0n ? -b : b;
    while (b) { [a, b] = [b, a % b]; } return a; };
  const rat = (n, d = 1n) => { const g = gcd(n, d) || 1n; return d < 0n ? [-n / g, -d / g] : [n / g, d / g]; };
  const parse = (s) => { const [n, d] = String(s).split("/"); return rat(BigInt(n), BigInt(d || 1)); };
  const add = (a, b) => rat(a[0] * b[1] + b[0] * a[1], a[1] * b[1]);
  const mul = (a, b) => rat(a[0] * b[0], a[1] * b[1]);
  const ZERO = [0n, 1n];
  const ratText = (r) => (r[1] === 1n ? `${r[0]}` : `${r[0]}/${r[1]}`);

  // ------------------------------------------------------------ the generated formulas
  // values: symbol name -> rational; returns the formula's value, exactly (a rational).
  function evaluate(key, values) {
    const f = G.formulas[key];
    if (!f) throw new Error(`no generated formula ${key}`);
    const v = {};
    for (const a of f.args) {
      const x = values[a];
      if (x === undefined) throw new Error(`${key} needs ${a}`);
      if (f.fractional.includes(a)) { v[a + "__n"] = x[0]; v[a + "__d"] = x[1]; }
      else if (x[1] !== 1n) throw new Error(`${key}: ${a} must be an integer`);
      else v[a] = x[0];
    }
    return rat(f.num(v), f.den(v));
  }
  // The engines' expressions (floors, ceilings, min, max): one exact-rational JavaScript
  // expression each, in v (the arguments) and R (these helpers); kvlib.views.book_js.js_exact
  const floorDiv = (n, d) => { const q = n / d; return n % d !== 0n && n < 0n ? q - 1n : q; };  // d > 0
  const cmp = (a, b) => a[0] * b[1] - b[0] * a[1];
  const R = {
    add: (...xs) => xs.reduce(add), mul: (...xs) => xs.reduce(mul),
    inv: (x) => { if (x[0] === 0n) throw new Error("division by zero"); return rat(x[1], x[0]); },
    pow: (x, k) => rat(x[0] ** k, x[1] ** k),
    floor: (x) => [floorDiv(x[0], x[1]), 1n], ceil: (x) => [-floorDiv(-x[0], x[1]), 1n],
    min: (...xs) => xs.reduce((a, b) => (cmp(a, b) <= 0n ? a : b)),
    max: (...xs) => xs.reduce((a, b) => (cmp(a, b) >= 0n ? a : b)),
    mod: (a, b) => add(a, mul([-1n, 1n], mul(b, R.floor(mul(a, R.inv(b)))))),  // Python's a % b
    eq: (a, b) => cmp(a, b) === 0n,
  };
  function evaluateExact(key, values) {
    const f = G.engine_formulas[key];
    if (!f) throw new Error(`no generated formula ${key}`);
    const v = {};
    for (const a of f.args) {
      if (values[a] === undefined) throw new Error(`${key} needs ${a}`);
      v[a] = values[a];
    }
    return f.value(v, R);
  }

  // ------------------------------------------------------------ a model's layer groups
  // As kvlib.models.spec.LayerGroup: the group's own sizes win over the caller's (b).
  const isGrowing = (g) => DATA.kinds.growing.includes(g.kind);
  const isStateful = (g) => DATA.kinds.stateful.includes(g.kind);
  function groupValues(g, extra) {
    const v = {};
    for (const [k, x] of Object.entries(extra)) v[k] = typeof x === "bigint" ? [x, 1n] : x;
    for (const [k, x] of Object.entries(g.sizes)) v[k] = parse(x);
    return v;
  }
  // kvlib.models.spec.LayerGroup.cached_tokens: a compressed group keeps floor(T / m) entries
  const cachedTokens = (g, T) => (g.ratio ? T / BigInt(g.ratio)
    : g.window !== null && BigInt(g.window) < T ? BigInt(g.window) : T);
  // kvlib.models.spec.LayerGroup.bytes_per_token: a compressed group's entry per m tokens
  function groupBytesPerToken(g, b) {
    if (!isGrowing(g)) return ZERO;
    const entry = evaluate(`${g.attention}.bytes_per_token`, groupValues(g, { N_L: BigInt(g.layers), b }));
    return g.ratio ? mul(entry, [1n, BigInt(g.ratio)]) : entry;
  }
  function groupBytesPerSequence(g, T, b) {
    return isGrowing(g) ? evaluate(`${g.attention}.bytes_per_sequence`,
      groupValues(g, { N_L: BigInt(g.layers), b, N_KV: cachedTokens(g, T) })) : ZERO;
  }
  function groupBytesPerBatch(g, T, B, b) {
    return isGrowing(g) ? evaluate(`${g.attention}.bytes_per_batch`,
      groupValues(g, { N_L: BigInt(g.layers), b, N_KV: cachedTokens(g, T), B })) : ZERO;
  }
  function groupStateBytes(g) {
    return isStateful(g) ? evaluate(`${g.attention}.bytes_per_sequence`,
      groupValues(g, { N_L: BigInt(g.layers) })) : ZERO;
  }
  const sum = (rs) => rs.reduce(add, ZERO);

  // ------------------------------------------------------------ formatting (kvlib.core.units)
  const UNITS = { B: 1n, KiB: 1024n, MiB: 1024n ** 2n, GiB: 1024n ** 3n, TiB: 1024n ** 4n };
  const commas = (s) => s.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const fmtInt = (n) => commas(BigInt(n).toString());
  const bitLength = (n) => n.toString(2).length;

  // The double nearest n/d (n, d > 0), as Python's float(Fraction) gives it: [mantissa, exp]
  // with value mantissa * 2^exp exactly, mantissa < 2^53 (round half to even).
  function nearestDouble(n, d) {
    const shift = 55 - (bitLength(n) - bitLength(d));  // the quotient gets at least 55 bits
    const num = shift >= 0 ? n << BigInt(shift) : n;
    const den = shift >= 0 ? d : d << BigInt(-shift);
    let q = num / den, sticky = num % den !== 0n, exp = -shift;
    while (q >= 1n << 54n) { if (q & 1n) sticky = true; q >>= 1n; exp += 1; }
    const guard = q & 1n;  // q has 54 bits: the 53 kept and one guard bit
    let m = q >> 1n; exp += 1;
    if (guard && (sticky || (m & 1n))) m += 1n;
    if (m === 1n << 53n) { m >>= 1n; exp += 1; }
    return [m, exp];
  }

  // A positive finite double's exact value, [mantissa, exp]: value = mantissa * 2^exp.
  function doubleParts(x) {
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, x);
    const bits = view.getBigUint64(0), e = Number((bits >> 52n) & 0x7ffn);
    const m = bits & ((1n << 52n) - 1n);
    return e === 0 ? [m, -1074] : [m | (1n << 52n), e - 1075];
  }
  // Python's f"{x:,.{digits}f}" of the double [m, e]: its exact value rounded half to even.
  function fixedParts([m, e], digits) {
    const scale = 10n ** BigInt(digits);
    let num = m * scale, den = 1n;
    if (e >= 0) num <<= BigInt(e); else den <<= BigInt(-e);
    let q = num / den; const rem = num % den;
    if (2n * rem > den || (2n * rem === den && (q & 1n))) q += 1n;
    const s = q.toString().padStart(digits + 1, "0");
    const head = commas(s.slice(0, s.length - digits));
    return digits ? `${head}.${s.slice(s.length - digits)}` : head;
  }
  // f"{float(Fraction(n, d)):,.{digits}f}" for a rational r >= 0
  const fixed = (r, digits) => (r[0] === 0n ? (0).toFixed(digits) : fixedParts(nearestDouble(r[0], r[1]), digits));
  // f"{x:,.{digits}f}" for a double x
  const fixedNumber = (x, digits) => (x === 0 ? (0).toFixed(digits)
    : (x < 0 ? "-" : "") + fixedParts(doubleParts(Math.abs(x)), digits));
  // float(Fraction(n, d)), correctly rounded
  const toDouble = (r) => { if (r[0] === 0n) return 0; const [m, e] = nearestDouble(r[0], r[1]); return Number(m) * 2 ** e; };

  // kvlib.core.units.fmt_bytes / auto_unit / fmt_size
  function fmtBytes(r, unit, digits = 2) {
    const v = rat(r[0], r[1] * UNITS[unit]);
    if (v[1] === 1n) return `${fmtInt(v[0])} ${unit}`;
    const text = fixed(v, digits).replace(/0+$/, "").replace(/\.$/, "");
    return `${text} ${unit}`;
  }
  const atLeast = (r, n) => r[0] >= n * r[1];
  const autoUnit = (r) => ["TiB", "GiB", "MiB", "KiB"].find((u) => atLeast(r, UNITS[u])) || "B";
  const fmtSize = (r, digits = 2) => fmtBytes(r, autoUnit(r), digits);
  // kvlib.views.style.format_context
  function formatContext(n) {
    n = BigInt(n);
    if (n >= 1048576n && n % 1048576n === 0n) return `${n / 1048576n}M`;
    if (n >= 1024n && n % 1024n === 0n) return `${n / 1024n}K`;
    return `${n}`;
  }
  const contextTicks = (lo, hi) => { const out = []; for (let n = lo; n <= hi; n *= 2) out.push(n); return out; };
  const toNumber = (r) => Number(r[0]) / Number(r[1]);
  const plural = (n, noun) => `${n} ${noun}${String(n) === "1" ? "" : "s"}`;
  const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

  function htmlTable(header, rows, numeric) {
    const align = (i) => (numeric[i] ? "right" : "left");
    const head = header.map((h, i) => `<th style="text-align:${align(i)}">${h}</th>`).join("");
    const body = rows.map((row) => `<tr>${row.map((c, i) =>
      `<td style="text-align:${align(i)}">${c}</td>`).join("")}</tr>`).join("");
    return `<table class="kvlib-table"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
  }

  // ------------------------------------------------------------ the chart's width (issue 40)
  // A chart is drawn VW units wide and shown 100% of its box's width (viewBox + width="100%"):
  // 760 where the box is that wide or about (a desktop); on a narrow screen (a phone, a box under
  // NARROW px) as wide as its box, so that one unit is one CSS pixel and 12-unit text is 12 px,
  // with a layout for that width (titles and legends wrapped, one legend column, labels above
  // bars). mount() sets VW from the chart's box before each draw, and again when it resizes.
  const WIDE = 760, NARROW = 600;
  let VW = WIDE;
  const narrow = () => VW < NARROW;
  // Split text into lines of at most `px` pixels at `size` px (an upper bound of a sans-serif
  // glyph's width: 0.62 em), at spaces; a word longer than a line stays whole.
  function wrap(text, px, size = 12) {
    const most = Math.max(8, Math.floor(px / (0.62 * size))), lines = [];
    for (const word of String(text).split(" ")) {
      const last = lines.length ? lines[lines.length - 1] : null;
      if (last !== null && (last + " " + word).length <= most) lines[lines.length - 1] = last + " " + word;
      else lines.push(word);
    }
    return lines;
  }
  // <text> of several lines (tspans), the first at y, each next `step` units lower.
  const textLines = (lines, x, y, step, attrs = "") => `<text x="${x}" y="${y}" ${attrs}>` +
    lines.map((line, i) => (i ? `<tspan x="${x}" dy="${step}">${esc(line)}</tspan>` : esc(line))).join("") + `</text>`;

  // ------------------------------------------------------------ the chart: plain SVG, log axes
  // opts: title, xlabel, ylabel, x: [lo, hi] (log 2), xticks: [[value, label]], y: [lo, hi]
  // (log), yticks: [[value, label]], series: [{xs, ys, color, dash, marker, width, opacity}],
  // vline, dots: [{x, y, color, r, label, dx, dy, anchor}], legend: [{label, color, dash, marker}],
  // legendBelow: the legend in two columns under the axes (where no corner of the axes is free),
  // note: a line of text under it.
  function chart(o) {
    if (narrow()) return narrowChart(o);
    const LB = o.legendBelow ? Math.ceil(o.legend.length / 2) * 18 + 10 + (o.note ? 18 : 0) : 0;
    const W = 760, H = 380 + LB, L = 78, R = 16, T = 34, B = 52 + LB;
    const lx = (v) => Math.log2(v), ly = (v) => Math.log(v);
    const X = (v) => L + (lx(v) - lx(o.x[0])) / (lx(o.x[1]) - lx(o.x[0])) * (W - L - R);
    const Y = (v) => H - B - (ly(v) - ly(o.y[0])) / (ly(o.y[1]) - ly(o.y[0])) * (H - T - B);
    const f = (v) => v.toFixed(1);
    const out = [`<svg class="kvlib-svg" viewBox="0 0 ${W} ${H}" width="100%" role="img" ` +
      `xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="12">`,
      `<title>${esc(o.title)}</title>`,
      `<text class="kvlib-chart-title" x="${(L + W - R) / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${esc(o.title)}</text>`];
    for (const [v, label] of o.yticks) {
      if (v < o.y[0] || v > o.y[1]) continue;
      out.push(`<line x1="${L}" x2="${W - R}" y1="${f(Y(v))}" y2="${f(Y(v))}" stroke="#e3e3e3"/>`,
        `<text x="${L - 6}" y="${f(Y(v) + 4)}" text-anchor="end">${esc(label)}</text>`);
    }
    for (const [v, label] of o.xticks) {
      out.push(`<line x1="${f(X(v))}" x2="${f(X(v))}" y1="${T}" y2="${H - B}" stroke="#eeeeee"/>`,
        `<text x="${f(X(v))}" y="${H - B + 16}" text-anchor="middle">${esc(label)}</text>`);
    }
    out.push(`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#555"/>`,
      `<text class="kvlib-xlabel" x="${(L + W - R) / 2}" y="${H - 12 - LB}" text-anchor="middle">${esc(o.xlabel)}</text>`,
      `<text class="kvlib-ylabel" transform="translate(16 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">${esc(o.ylabel)}</text>`);
    out.push(...marks(o, X, Y, T, H - B, 3.5));
    for (const p of o.dots || []) {
      out.push(`<circle class="kvlib-dot" cx="${f(X(p.x))}" cy="${f(Y(p.y))}" r="${p.r}" fill="${p.color}" stroke="white" stroke-width="1.5"/>`);
      if (p.label) out.push(`<text x="${f(X(p.x) + p.dx)}" y="${f(Y(p.y) + p.dy)}" text-anchor="${p.anchor}" fill="${p.color}" font-weight="bold" font-size="13">${esc(p.label)}</text>`);
    }
    if (o.legendBelow) {  // two columns under the axes, filled down the first column
      const rows = Math.ceil(o.legend.length / 2), colW = (W - L - R) / 2;
      out.push(`<g class="kvlib-legend">`);
      o.legend.forEach((e, i) => {
        const x = L + Math.floor(i / rows) * colW, y = H - LB + 8 + (i % rows) * 18;
        out.push(`<line x1="${x}" x2="${x + 26}" y1="${y}" y2="${y}" stroke="${e.color}" stroke-width="${e.width || 2}"${e.dash ? ` stroke-dasharray="${e.dash}"` : ""}/>`);
        if (e.marker) out.push(`<circle cx="${x + 13}" cy="${y}" r="3.5" fill="${e.color}"/>`);
        out.push(`<text x="${x + 32}" y="${y + 4}">${esc(e.label)}</text>`);
      });
      out.push(`</g>`);
      if (o.note) out.push(`<text class="kvlib-note" x="${L}" y="${H - 8}" fill="#555">${esc(o.note)}</text>`);
      out.push(`</svg>`);
      return out.join("");
    }
    // legend: upper left, inside the axes
    let ly0 = T + 10;
    out.push(`<g class="kvlib-legend">`);
    out.push(`<rect x="${L + 8}" y="${T + 4}" width="330" height="${o.legend.length * 18 + 8}" fill="white" opacity="0.9"/>`);
    for (const e of o.legend) {
      out.push(`<line x1="${L + 14}" x2="${L + 40}" y1="${ly0 + 6}" y2="${ly0 + 6}" stroke="${e.color}" stroke-width="2"${e.dash ? ` stroke-dasharray="${e.dash}"` : ""}/>`);
      if (e.marker) out.push(`<circle cx="${L + 27}" cy="${ly0 + 6}" r="3.5" fill="${e.color}"/>`);
      out.push(`<text x="${L + 46}" y="${ly0 + 10}">${esc(e.label)}</text>`);
      ly0 += 18;
    }
    out.push(`</g></svg>`);
    return out.join("");
  }
  // What both charts draw inside the axes the same way: the dashed context line from the top of
  // the plot (y top) to its bottom (y bottom), then each series as a path, with markers of radius
  // r where it asks for them. X, Y: data to SVG coordinates.
  function marks(o, X, Y, top, bottom, r) {
    const f = (v) => v.toFixed(1), out = [];
    if (o.vline) out.push(`<line class="kvlib-vline" x1="${f(X(o.vline))}" x2="${f(X(o.vline))}" y1="${top}" y2="${bottom}" stroke="#555" stroke-dasharray="2 3" stroke-width="1.5"/>`);
    for (const s of o.series) {
      if (!s.xs.length) continue;
      const d = s.xs.map((x, i) => `${i ? "L" : "M"}${f(X(x))},${f(Y(s.ys[i]))}`).join("");
      out.push(`<path class="kvlib-line" d="${d}" fill="none" stroke="${s.color}" stroke-width="${s.width || 2}"` +
        `${s.dash ? ` stroke-dasharray="${s.dash}"` : ""} opacity="${s.opacity || 1}"/>`);
      if (s.marker) for (let i = 0; i < s.xs.length; i++)
        out.push(`<circle cx="${f(X(s.xs[i]))}" cy="${f(Y(s.ys[i]))}" r="${r}" fill="${s.color}" opacity="${s.opacity || 1}"/>`);
    }
    return out;
  }
  // chart(o) on a narrow screen: VW units wide, the title wrapped over the axes, the legend (and
  // the note) in one column under them, wrapped, every other context tick labelled where the
  // labels would touch; the same series, marks and classes as the wide chart.
  function narrowChart(o) {
    // the left margin holds the rotated y label and the widest y tick label
    // (the y label wrapped to the plot's height, one line per 14 units)
    const plotH = o.panel ? 110 : 230;  // two panels stack: lower ones
    const ylines = wrap(o.ylabel, plotH + 10);
    const widest = Math.max(0, ...o.yticks.filter(([v]) => v >= o.y[0] && v <= o.y[1]).map(([, l]) => String(l).length));
    const W = VW, L = Math.ceil(16 + ylines.length * 14 + widest * 0.62 * 12), R = 12, f = (v) => v.toFixed(1);
    const title = wrap(o.title, W - 8, 14);
    const T = 14 + title.length * 18 + 8;
    const legend = o.legend.map((e) => wrap(e.label, W - L - R - 32));
    const note = o.note ? wrap(o.note, W - 8) : [];
    const LB = 10 + legend.reduce((n, lines) => n + lines.length * 15 + 3, 0) + note.length * 15;
    const B = 46, H = T + plotH + B + LB;
    const lx = (v) => Math.log2(v), ly = (v) => Math.log(v);
    const X = (v) => L + (lx(v) - lx(o.x[0])) / (lx(o.x[1]) - lx(o.x[0])) * (W - L - R);
    const Y = (v) => T + plotH - (ly(v) - ly(o.y[0])) / (ly(o.y[1]) - ly(o.y[0])) * plotH;
    const out = [`<svg class="kvlib-svg kvlib-narrow" viewBox="0 0 ${W} ${H}" width="100%" role="img" ` +
      `xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="12">`,
      `<title>${esc(o.title)}</title>`,
      textLines(title, W / 2, 18, 18, `class="kvlib-chart-title" text-anchor="middle" font-size="14" font-weight="bold"`)];
    const yticks = o.yticks.filter(([v]) => v >= o.y[0] && v <= o.y[1]);
    const ygap = yticks.length > 1 ? Math.abs(Y(yticks[0][0]) - Y(yticks[yticks.length - 1][0])) / (yticks.length - 1) : plotH;
    yticks.forEach(([v, label], i) => {  // every other label where they would touch
      out.push(`<line x1="${L}" x2="${W - R}" y1="${f(Y(v))}" y2="${f(Y(v))}" stroke="#e3e3e3"/>`);
      if (ygap >= 16 || i % 2 === 0) out.push(`<text x="${L - 5}" y="${f(Y(v) + 4)}" text-anchor="end">${esc(label)}</text>`);
    });
    const ticks = o.xticks.filter(([v]) => v >= o.x[0] && v <= o.x[1]);
    const gap = ticks.length > 1 ? (X(ticks[ticks.length - 1][0]) - X(ticks[0][0])) / (ticks.length - 1) : W;
    const every = gap < 34 ? 2 : 1;  // a label ("128K") is about 30 px wide
    ticks.forEach(([v, label], i) => {
      out.push(`<line x1="${f(X(v))}" x2="${f(X(v))}" y1="${T}" y2="${T + plotH}" stroke="#eeeeee"/>`);
      if (i % every === 0) out.push(`<text x="${f(X(v))}" y="${T + plotH + 16}" text-anchor="middle">${esc(label)}</text>`);
    });
    out.push(`<rect x="${L}" y="${T}" width="${W - L - R}" height="${plotH}" fill="none" stroke="#555"/>`,
      `<text class="kvlib-xlabel" x="${(L + W - R) / 2}" y="${T + plotH + 36}" text-anchor="middle">${esc(o.xlabel)}</text>`,
      `<g transform="translate(13 ${T + plotH / 2}) rotate(-90)">` +
        textLines(ylines, 0, 0, 14, `class="kvlib-ylabel" text-anchor="middle"`) + `</g>`);
    out.push(...marks(o, X, Y, T, T + plotH, 3));
    for (const p of o.dots || []) {
      out.push(`<circle class="kvlib-dot" cx="${f(X(p.x))}" cy="${f(Y(p.y))}" r="${p.r}" fill="${p.color}" stroke="white" stroke-width="1.5"/>`);
      if (!p.label) continue;
      // inside the axes: a label that would cross the box's side goes to the dot's other side
      const x = X(p.x) + p.dx, wide = p.label.length * 0.62 * 13;
      const anchor = p.anchor === "end" ? (x - wide < L ? "start" : "end") : (x + wide > W - R ? "end" : "start");
      const lx0 = anchor === p.anchor ? x : X(p.x) - p.dx;
      out.push(`<text x="${f(lx0)}" y="${f(Y(p.y) + p.dy)}" text-anchor="${anchor}" fill="${p.color}" font-weight="bold" font-size="13">${esc(p.label)}</text>`);
    }
    let y = T + plotH + B + 14;
    out.push(`<g class="kvlib-legend">`);
    o.legend.forEach((e, i) => {
      out.push(`<line x1="${L}" x2="${L + 26}" y1="${y - 4}" y2="${y - 4}" stroke="${e.color}" stroke-width="${e.width || 2}"${e.dash ? ` stroke-dasharray="${e.dash}"` : ""}/>`);
      if (e.marker) out.push(`<circle cx="${L + 13}" cy="${y - 4}" r="3" fill="${e.color}"/>`);
      out.push(textLines(legend[i], L + 32, y, 15));
      y += legend[i].length * 15 + 3;
    });
    out.push(`</g>`);
    if (note.length) out.push(textLines(note, 4, y + 4, 15, `class="kvlib-note" fill="#555"`));
    out.push(`</svg>`);
    return out.join("");
  }
  const contextAxis = (ticks) => ticks.map((t) => [t, formatContext(t)]);
  const XLABEL = "context length N_KV (tokens, log scale)";

  // ------------------------------------------------------------ notebook 02: MHA vs GQA vs MQA
  const divisors = (n) => { const out = []; for (let k = 1; k <= n; k++) if (n % k === 0) out.push(k); return out; };
  const GQA_CONTEXTS = contextTicks(1024, 131072);
  const gqa = {
    controls: (init) => [
      { name: "N_L", label: "layers N_L", type: "range", options: Array.from({ length: 128 }, (_, i) => [i + 1, `${i + 1}`]) },
      { name: "N_h", label: "query heads N_h", type: "select", options: [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 64, 96, 128].map((n) => [n, `${n}`]) },
      { name: "N_g", label: "KV heads N_g", type: "select", options: divisors(init.N_h).map((n) => [n, `${n}`]) },
      { name: "head_dim", label: "head dim", type: "select", options: [64, 80, 96, 128, 192, 256].map((n) => [n, `${n}`]) },
      { name: "dtype", label: "KV dtype", type: "select", options: Object.keys(DATA.dtypes).map((k) => [k, k]) },
      { name: "context", label: "context", type: "range", options: GQA_CONTEXTS.map((t) => [t, formatContext(t)]) },
    ],
    // kvlib.views.widgets.gqa.follow_query_heads: KV heads must divide the query heads
    adjust(changed, values, setOptions) {
      if (changed !== "N_h") return;
      const opts = divisors(values.N_h);
      values.N_g = Math.max(...opts.filter((k) => k <= values.N_g));
      setOptions("N_g", opts.map((n) => [n, `${n}`]), values.N_g);
    },
    // kvlib.views.widgets.gqa.compare_heads
    compute(s) {
      const b = parse(DATA.dtypes[s.dtype]);
      const common = { N_L: [BigInt(s.N_L), 1n], N_h: [BigInt(s.N_h), 1n],
        d_QK: [BigInt(s.head_dim), 1n], d_V: [BigInt(s.head_dim), 1n], b };
      const kinds = { MHA: {}, GQA: { N_g: [BigInt(s.N_g), 1n] }, MQA: {} };
      const r = { per_token: {}, per_sequence: {}, sweep: {} };
      for (const [k, extra] of Object.entries(kinds)) {
        const v = { ...common, ...extra };
        r.per_token[k] = evaluate(`${k}.bytes_per_token`, v);
        r.per_sequence[k] = evaluate(`${k}.bytes_per_sequence`, { ...v, N_KV: [BigInt(s.context), 1n] });
        r.sweep[k] = GQA_CONTEXTS.map((t) => evaluate(`${k}.bytes_per_sequence`, { ...v, N_KV: [BigInt(t), 1n] }));
      }
      return r;
    },
    // kvlib.views.widgets.gqa.render
    render(s, r) {
      const heads = { MHA: s.N_h, GQA: s.N_g, MQA: 1 };
      const rows = ["MHA", "GQA", "MQA"].map((k) => {
        const ratio = rat(r.per_token.MHA[0] * r.per_token[k][1], r.per_token.MHA[1] * r.per_token[k][0]);
        const g = ratio[1] === 1n ? `${ratio[0]}` : String(Number(toNumber(ratio).toPrecision(6)));
        // bytes per token are whole for every offered shape (2 x head dim elements per head)
        return [k, `${heads[k]}`, r.per_token[k][1] === 1n ? fmtInt(r.per_token[k][0]) : ratText(r.per_token[k]),
          fmtSize(r.per_token[k]), fmtSize(r.per_sequence[k]), `${g}x`];
      });
      return htmlTable(["attention", "KV heads", "bytes/token", "per token",
        `${formatContext(s.context)} tokens`, "saving"], rows, [false, true, true, true, true, true]);
    },
    // kvlib.views.widgets.gqa.draw, with kit.whole_decades value limits
    chart(s, r) {
      const heads = { MHA: s.N_h, GQA: s.N_g, MQA: 1 };
      const gib = (x) => toNumber(x) / 1073741824;
      const series = ["MHA", "GQA", "MQA"].map((k) => ({ xs: GQA_CONTEXTS, ys: r.sweep[k].map(gib),
        color: DATA.colors[k], marker: true, label: `${k}: ${plural(heads[k], "KV head")}` }));
      const all = series.flatMap((x) => x.ys).filter((v) => v > 0);
      const lo = 10 ** Math.floor(Math.log10(Math.min(...all) / 1.25));
      const hi = 10 ** Math.ceil(Math.log10(Math.max(...all) * 1.25));
      const yticks = [];
      for (let e = Math.round(Math.log10(lo)); e <= Math.round(Math.log10(hi)); e++)
        yticks.push([10 ** e, e >= 0 ? fmtInt(BigInt(10 ** e)) : String(10 ** e)]);
      return chart({ title: `${plural(s.N_L, "layer")}, ${plural(s.N_h, "query head")}, head dim ${s.head_dim}, ${s.dtype}`,
        xlabel: XLABEL, ylabel: "KV cache of one sequence (GiB)", x: [GQA_CONTEXTS[0] / 1.3, GQA_CONTEXTS.at(-1) * 1.3],
        xticks: contextAxis(GQA_CONTEXTS), y: [lo, hi], yticks, series, vline: s.context,
        legend: series.map((x) => ({ label: x.label, color: x.color, marker: true })) });
    },
    exact: (r) => ({ per_token: r.per_token, per_sequence: r.per_sequence, sweep: r.sweep }),
  };

  // ------------------------------------------------------------ notebook 07: cache and state
  const HYBRID_CONTEXTS = contextTicks(1024, 1 << 20);
  const CACHE_COLOR = "#0072B2", STATE_COLOR = "#882255";
  const hybrid = {
    controls: () => [
      { name: "model", label: "model", type: "select", options: Object.entries(DATA.models).map(([n, m]) => [n, m.title]) },
      { name: "context", label: "context", type: "range", options: HYBRID_CONTEXTS.map((t) => [t, formatContext(t)]) },
    ],
    // kvlib.views.widgets.hybrid.split (kvlib.models.estimate at bf16)
    compute(s) {
      const m = DATA.models[s.model], b = parse(DATA.dtypes.bf16), T = BigInt(s.context);
      const kv = sum(m.groups.map((g) => groupBytesPerSequence(g, T, b)));
      const state = sum(m.groups.map(groupStateBytes));
      const cache = HYBRID_CONTEXTS.map((t) => sum(m.groups.map((g) => groupBytesPerSequence(g, BigInt(t), b))));
      return { kv, state, total: add(kv, state), cache };
    },
    // kvlib.views.widgets.hybrid.render
    render(s, r) {
      const m = DATA.models[s.model];
      const kinds = m.groups.map((g) => `${g.layers} ${g.kind}`).join(", ");
      const longest = m.max_position_embeddings;
      const beyond = longest && s.context > longest ? ` <i>Beyond the model's longest context (${fmtInt(longest)} tokens, its config's max_position_embeddings).</i>` : "";
      return `<p><b>${esc(m.title)}</b> (${esc(m.label)}; ${kinds}), bf16, ${fmtInt(s.context)} tokens: ` +
        `growing cache ${fmtSize(r.kv)} + constant state ${fmtSize(r.state)} = <b>${fmtSize(r.total)}</b>.${beyond}</p>`;
    },
    // kvlib.views.widgets.hybrid.draw
    chart(s, r) {
      const m = DATA.models[s.model], gib = (x) => toNumber(x) / 1073741824;
      const cache = r.cache.map(gib), state = gib(r.state);
      const longest = m.max_position_embeddings || HYBRID_CONTEXTS.at(-1);
      const n = HYBRID_CONTEXTS.filter((t) => t <= longest).length;
      // kvlib.views.widgets.hybrid.value_limits: 2^-10 .. 2^14 GiB, widened by 16x steps
      let lo = 2 ** -10, hi = 2 ** 14;
      const vals = [...cache, state].filter((v) => v > 0);
      while (Math.min(...vals) / 2 < lo) lo /= 16;
      while (Math.max(...vals) * 10 > hi) hi *= 16;
      const yticks = [];
      for (let v = lo; v <= hi; v *= 16) yticks.push([v, fmtSize(rat(BigInt(Math.round(v * 1073741824)), 1n))]);
      const windowed = m.groups.some((g) => g.window !== null);
      const series = [{ xs: HYBRID_CONTEXTS.slice(0, n), ys: cache.slice(0, n), color: CACHE_COLOR, marker: true, width: 2.5 }];
      const legend = [{ label: "growing cache (attention layers" + (windowed ? "; windowed ones stop at their window)" : ")"), color: CACHE_COLOR, marker: true }];
      if (n < HYBRID_CONTEXTS.length) {
        series.push({ xs: HYBRID_CONTEXTS.slice(Math.max(n - 1, 0)), ys: cache.slice(Math.max(n - 1, 0)), color: CACHE_COLOR, marker: true, dash: "2 4", opacity: 0.45 });
        legend.push({ label: "beyond the model's longest context", color: CACHE_COLOR, dash: "2 4", marker: true });
      }
      if (state > 0) {
        series.push({ xs: [HYBRID_CONTEXTS[0] / 1.3, HYBRID_CONTEXTS.at(-1) * 1.3], ys: [state, state], color: STATE_COLOR, dash: "8 5", width: 2.5 });
        legend.push({ label: "constant state (recurrent layers)", color: STATE_COLOR, dash: "8 5" });
      }
      const here = [gib(r.kv), state], k = HYBRID_CONTEXTS.indexOf(s.context);
      const larger = here[0] >= here[1] ? 0 : 1;
      const dots = [];
      [[STATE_COLOR, 8, 1, r.state], [CACHE_COLOR, 5.5, 0, r.kv]].forEach(([color, radius, i, bytes]) => {
        if (here[i] <= 0) return;
        const up = i === larger, left = up ? k >= 2 : k > HYBRID_CONTEXTS.length - 3;
        const dy = left === up ? 8 : 20;
        dots.push({ x: s.context, y: here[i], color, r: radius, label: fmtSize(bytes),
          dx: left ? -12 : 12, dy: up ? -dy : dy + 10, anchor: left ? "end" : "start" });
      });
      return chart({ title: `${m.title}, ${formatContext(s.context)} tokens: ${fmtSize(r.total)} in all`,
        xlabel: XLABEL, ylabel: "one sequence (log scale)", x: [HYBRID_CONTEXTS[0] / 1.3, HYBRID_CONTEXTS.at(-1) * 1.3],
        xticks: contextAxis(HYBRID_CONTEXTS), y: [lo, hi], yticks, series, vline: s.context, dots, legend });
    },
    exact: (r) => ({ kv: r.kv, state: r.state, total: r.total, cache: r.cache }),
  };

  // ------------------------------------------------------------ notebook 05: a model, by layer group
  // kvlib.views.widgets.kit.steady_limit: the least 1, 2, 2.5 or 5 x 10^k >= 1.3 x value
  function steadyLimit(value, room = 1.3) {
    const need = value * room, k = Math.floor(Math.log10(need));
    for (const e of [k, k + 1]) for (const s of [1, 2, 2.5, 5]) if (s * 10 ** e >= need) return s * 10 ** e;
    return 10 ** (k + 1);
  }
  // Python's f"{x:,g}" for the tick values of a bar chart (at most 6 significant digits)
  const fmtG = (x) => { const t = String(Number(x.toPrecision(6))); const [i, f] = t.split(".");
    return f === undefined ? commas(i) : `${commas(i)}.${f}`; };

  // opts: title, xlabel, bars: [{name, value (axis unit), label, color}]; the first on top.
  function barChart(o) {
    if (narrow()) return narrowBarChart(o);
    const W = 760, L = 150, R = 24, T = 34, B = 48, row = 34;
    const H = T + B + row * o.bars.length;
    const top = Math.max(0, ...o.bars.map((b) => b.value));
    const end = top > 0 ? steadyLimit(top) : 1;
    const X = (v) => L + v / end * (W - L - R);
    const f = (v) => v.toFixed(1);
    const out = [`<svg class="kvlib-svg" viewBox="0 0 ${W} ${H}" width="100%" role="img" ` +
      `xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="12">`,
      `<title>${esc(o.title)}</title>`,
      `<text class="kvlib-chart-title" x="${(L + W - R) / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${esc(o.title)}</text>`];
    const step = steadyLimit(end / 5, 1) <= end / 4 ? steadyLimit(end / 5, 1) : end / 4;
    for (let i = 0; i * step <= end * (1 + 1e-9); i++) {
      const v = i * step;
      out.push(`<line x1="${f(X(v))}" x2="${f(X(v))}" y1="${T}" y2="${H - B}" stroke="#e3e3e3"/>`,
        `<text x="${f(X(v))}" y="${H - B + 16}" text-anchor="middle">${fmtG(v)}</text>`);
    }
    o.bars.forEach((b, i) => {
      const y = T + i * row + 6, h = row - 12;
      out.push(`<rect class="kvlib-bar" x="${L}" y="${y}" width="${f(X(b.value) - L)}" height="${h}" fill="${b.color}" stroke="#333" stroke-width="0.5"/>`,
        `<text x="${L - 8}" y="${y + h / 2 + 4}" text-anchor="end">${esc(b.name)}</text>`,
        `<text class="kvlib-bar-label" x="${f(X(b.value) + 5)}" y="${y + h / 2 + 5}" font-size="13">${esc(b.label)}</text>`);
    });
    out.push(`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#555"/>`,
      `<text class="kvlib-xlabel" x="${(L + W - R) / 2}" y="${H - 10}" text-anchor="middle">${esc(o.xlabel)}</text>`,
      `</svg>`);
    return out.join("");
  }

  // barChart(o) on a narrow screen: VW units wide, the title wrapped, each bar's name and size on a
  // line above it, the bars the whole width.
  function narrowBarChart(o) {
    const W = VW, L = 10, R = 16, B = 48, row = 44, f = (v) => v.toFixed(1);
    const title = wrap(o.title, W - 8, 14);
    const T = 14 + title.length * 18 + 8;
    const H = T + B + row * o.bars.length;
    const top = Math.max(0, ...o.bars.map((b) => b.value));
    const end = top > 0 ? steadyLimit(top, 1.05) : 1;
    const X = (v) => L + v / end * (W - L - R);
    const out = [`<svg class="kvlib-svg kvlib-narrow" viewBox="0 0 ${W} ${H}" width="100%" role="img" ` +
      `xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="12">`,
      `<title>${esc(o.title)}</title>`,
      textLines(title, W / 2, 18, 18, `class="kvlib-chart-title" text-anchor="middle" font-size="14" font-weight="bold"`)];
    const step = steadyLimit(end / 3, 1) <= end / 2 ? steadyLimit(end / 3, 1) : end / 2;
    for (let i = 0; i * step <= end * (1 + 1e-9); i++) {
      const v = i * step, anchor = i === 0 ? "start" : X(v) > W - R - 20 ? "end" : "middle";
      out.push(`<line x1="${f(X(v))}" x2="${f(X(v))}" y1="${T}" y2="${H - B}" stroke="#e3e3e3"/>`,
        `<text x="${f(X(v))}" y="${H - B + 16}" text-anchor="${anchor}">${fmtG(v)}</text>`);
    }
    o.bars.forEach((b, i) => {
      const y = T + i * row + 18, h = row - 24;
      out.push(`<text x="${L + 3}" y="${y - 5}">${esc(b.name)}: <tspan class="kvlib-bar-label">${esc(b.label)}</tspan></text>`,
        `<rect class="kvlib-bar" x="${L}" y="${y}" width="${f(X(b.value) - L)}" height="${h}" fill="${b.color}" stroke="#333" stroke-width="0.5"/>`);
    });
    out.push(`<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#555"/>`,
      `<text class="kvlib-xlabel" x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">${esc(o.xlabel)}</text>`,
      `</svg>`);
    return out.join("");
  }

  const MODEL_CONTEXTS = contextTicks(1024, 1 << 20);
  const models = {
    controls: () => [
      { name: "model", label: "model", type: "select", options: Object.entries(DATA.models).map(([n, m]) => [n, m.title]) },
      { name: "context", label: "context", type: "range", options: MODEL_CONTEXTS.map((t) => [t, formatContext(t)]) },
      { name: "batch", label: "batch", type: "range", options: Array.from({ length: 256 }, (_, i) => [i + 1, `${i + 1}`]) },
      { name: "kv_dtype", label: "KV dtype", type: "select", options: KV_OPTIONS },
    ],
    // kvlib.views.widgets.models.breakdown (kvlib.models.estimate.estimate)
    compute(s) {
      const m = DATA.models[s.model], b = parse(KV_BYTES[s.kv_dtype]);
      const T = BigInt(s.context), B = BigInt(s.batch);
      const groups = m.groups.map((g) => {
        const perToken = groupBytesPerToken(g, b), batch = groupBytesPerBatch(g, T, B, b);
        const state = groupStateBytes(g);
        return { g, per_token: perToken, cached_tokens: cachedTokens(g, T), per_batch: batch,
          state, held: add(batch, mul(state, [B, 1n])) };
      });
      const kvTotal = sum(groups.map((x) => x.per_batch)), state = sum(groups.map((x) => x.state));
      return { groups, kv_per_token: sum(groups.map((x) => x.per_token)),
        kv_per_sequence: sum(m.groups.map((g) => groupBytesPerSequence(g, T, b))),
        kv_total: kvTotal, state, total: add(kvTotal, mul(state, [B, 1n])) };
    },
    // kvlib.views.widgets.models.render
    render(s, r) {
      const m = DATA.models[s.model], seqs = `sequence${s.batch > 1 ? "s" : ""}`;
      const rows = r.groups.map((x) => [x.g.kind, `${x.g.layers}`, x.g.window === null ? "" : fmtInt(x.g.window),
        ...(isGrowing(x.g) ? [fmtInt(x.cached_tokens), fmtSize(x.per_token)] : ["state", "-"]), fmtSize(x.held)]);
      rows.push(["all", `${m.num_layers}`, "", "", fmtSize(r.kv_per_token), fmtSize(r.total)].map((v) => (v ? `<b>${v}</b>` : "")));
      const limit = m.max_position_embeddings;
      const warn = limit !== null && s.context > limit ? `<p style="color:#b00"><b>Beyond this model's max_position_embeddings (${fmtInt(limit)}).</b></p>` : "";
      return `<p><b>${esc(m.title)}</b> (${esc(m.label)}), ${s.kv_dtype}, ${fmtInt(s.context)} tokens x ${s.batch} ${seqs}</p>${warn}` +
        htmlTable(["kind", "layers", "window", "tokens kept", "per token", `x ${s.batch} ${seqs}`], rows,
          [false, true, true, true, true, true]);
    },
    // kvlib.views.widgets.models.draw
    chart(s, r) {
      const m = DATA.models[s.model];
      return barChart({ title: `${m.title}: ${formatContext(s.context)} tokens x ${s.batch}, ${s.kv_dtype}; total ${fmtSize(r.total)}`,
        xlabel: "KV cache (and state) of the batch (GiB)",
        bars: r.groups.map((x) => ({ name: `${x.g.layers} ${x.g.kind}${x.g.window ? ` ${fmtInt(x.g.window)}` : ""}`,
          value: toNumber(x.held) / 1073741824, label: fmtSize(x.held), color: DATA.kind_colors[x.g.kind] })) });
    },
    exact: (r) => ({ groups: r.groups.map((x) => ({ per_token: x.per_token, cached_tokens: x.cached_tokens,
      per_batch: x.per_batch, state: x.state, held: x.held })), kv_per_token: r.kv_per_token,
      kv_per_sequence: r.kv_per_sequence, kv_total: r.kv_total, state: r.state, total: r.total }),
  };

  // ------------------------------------------------------------ notebook 04: what decoupled RoPE costs
  const ROPE = DATA.rope, ROPE_CONTEXTS = contextTicks(1024, 131072);
  const big = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, [BigInt(v), 1n]]));
  // kvlib.views.widgets.mla._step_sizes: (a) and (a') rotate keys d_QK + d_R wide
  function stepSizes(s) {
    const step = {}; for (const k of ["N_h", "d_in", "d_QK", "d_V", "d_L", "d_Lq"]) step[k] = s[k];
    return { a: { ...step, d_QK: s.d_QK + s.d_R }, naive: { ...step, d_QK: s.d_QK + s.d_R }, b: { ...step, d_R: s.d_R } };
  }
  const logTicks = (lo, hi) => { const out = [];
    for (let e = Math.ceil(Math.log10(lo)); e <= Math.floor(Math.log10(hi)); e++)
      out.push([10 ** e, e >= 0 ? fmtInt(BigInt(10 ** e)) : String(Number((10 ** e).toPrecision(1)))]);
    return out; };
  const rope = {
    defaults: ROPE.start,  // kvlib.views.widgets.mla: DeepSeek V2 at 128K tokens
    controls: () => [
      { name: "d_L", label: "latent d_L", type: "select", options: ROPE.options.d_L.map((n) => [n, `${n}`]) },
      { name: "d_R", label: "RoPE width d_R", type: "select", options: ROPE.options.d_R.map((n) => [n, `${n}`]) },
      { name: "N_h", label: "heads N_h", type: "select", options: ROPE.options.N_h.map((n) => [n, `${n}`]) },
      { name: "context", label: "context", type: "range", options: ROPE_CONTEXTS.map((t) => [t, formatContext(t)]) },
    ],
    // kvlib.views.widgets.mla.rope_price
    compute(c) {
      const s = { ...ROPE.sizes, d_L: c.d_L, d_R: c.d_R, N_h: c.N_h };
      const cacheA = big({ N_L: s.N_L, d_L: s.d_L, b: s.b }), cacheB = { ...cacheA, d_R: [BigInt(s.d_R), 1n] };
      const step = stepSizes(s), N = (t) => ({ N_KV: [BigInt(t), 1n] });
      const perToken = { a: evaluate("MLA.bytes_per_token", cacheA), b: evaluate("MLA+RoPE.bytes_per_token", cacheB) };
      const perSeq = { a: evaluate("MLA.bytes_per_sequence", { ...cacheA, ...N(c.context) }),
        b: evaluate("MLA+RoPE.bytes_per_sequence", { ...cacheB, ...N(c.context) }) };
      const flopsAt = (k, t) => evaluate(`decode:${ROPE.designs[k]}.flops`, { ...big(step[k]), ...N(t) });
      const flops = {}, sweepFlops = {};
      for (const k of ["a", "naive", "b"]) { flops[k] = flopsAt(k, c.context); sweepFlops[k] = ROPE_CONTEXTS.map((t) => flopsAt(k, t)); }
      return { sizes: s, per_token: perToken, per_sequence: perSeq, flops,
        extra: add(rat(perToken.b[0] * perToken.a[1], perToken.b[1] * perToken.a[0]), [-1n, 1n]),
        speedup: toDouble(rat(flops.a[0] * flops.b[1], flops.a[1] * flops.b[0])),
        naive_speedup: toDouble(rat(flops.naive[0] * flops.b[1], flops.naive[1] * flops.b[0])),
        sweep_bytes: { a: ROPE_CONTEXTS.map((t) => evaluate("MLA.bytes_per_sequence", { ...cacheA, ...N(t) })),
          b: ROPE_CONTEXTS.map((t) => evaluate("MLA+RoPE.bytes_per_sequence", { ...cacheB, ...N(t) })) },
        sweep_flops: sweepFlops };
    },
    // kvlib.views.widgets.mla.render
    render(c, r) {
      const rows = [["a", "a"], ["naive", "a"], ["b", "b"]].map(([k, x]) => [ROPE.labels[k], fmtInt(r.per_token[x][0]),
        fmtSize(r.per_token[x]), fmtSize(r.per_sequence[x]), fixedNumber(toNumber(r.flops[k]) / 1e9, 2)]);
      const fc = formatContext(c.context), pct = toDouble(r.extra) * 100;
      return htmlTable(["design", "bytes/token", "per token", `${fc} tokens`, "GFLOPs/step/layer"], rows,
        [false, true, true, true, true]) +
        `<p>decoupling costs <b>${pct >= 0 ? "+" : ""}${fixedNumber(pct, 1)}%</b> cache and makes a decode step ` +
        `<b>${fixedNumber(r.speedup, 0)}x</b> cheaper than (a) at ${fc} tokens ` +
        `(${fixedNumber(r.naive_speedup, 0)}x cheaper than the naive extreme (a'))</p>`;
    },
    // kvlib.views.widgets.mla.draw, on the live view's steady value axes (value_limits)
    chart(c, r) {
      const s = r.sizes, fc = formatContext(c.context), colors = DATA.colors;
      const series = { left: [["a", colors.MLA, null], ["b", colors["MLA+RoPE"], null]],
        right: [["naive", colors.MLA, "2 4"], ["a", colors.MLA, null], ["b", colors["MLA+RoPE"], null]] };
      const panel = (side, title, ylabel, sweep, unit, lim) => {
        const lines = series[side].map(([k, color, dash]) => ({ xs: ROPE_CONTEXTS, ys: sweep[k].map((x) => toNumber(x) / unit),
          color, dash, marker: true, label: ROPE.legend[side][k] }));
        return chart({ title, panel: true, xlabel: XLABEL, ylabel, x: [ROPE_CONTEXTS[0] / 1.3, ROPE_CONTEXTS.at(-1) * 1.3],
          xticks: contextAxis(ROPE_CONTEXTS), y: lim, yticks: logTicks(lim[0], lim[1]), series: lines, vline: c.context,
          legend: [...lines.map((l) => ({ label: l.label, color: l.color, dash: l.dash, marker: true })),
            { label: "selected context", color: "black", dash: "2 3" }] });
      };
      const pct = fixedNumber(toDouble(r.extra) * 100, 1);
      return `<div class="kvlib-suptitle">${s.N_L} layers, ${s.N_h} heads, d_L = ${s.d_L}, d_R = ${s.d_R}, ` +
        `bf16: +${pct}% bytes buys ${fixedNumber(r.speedup, 0)}x fewer FLOPs than (a) at ${fc}</div>` +
        `<div class="kvlib-panels">` +
        panel("left", "Cache: what (b) adds", "KV cache, one sequence (GiB, log scale)", r.sweep_bytes, 1073741824, ROPE.value_limits[0]) +
        panel("right", "Compute: what (b) saves", "GFLOPs per decode step per layer (log scale)", r.sweep_flops, 1e9, ROPE.value_limits[1]) +
        `</div>`;
    },
    exact: (r) => ({ per_token: r.per_token, per_sequence: r.per_sequence, flops: r.flops, extra: r.extra,
      sweep_bytes: r.sweep_bytes, sweep_flops: r.sweep_flops }),
  };

  // ------------------------------------------------------------ notebook 06: the capacity planner
  // kvlib.serving.engines.vllm (deployment, plan, context_search) and serving.kv, for one TP rank's layer groups
  // (sharded by kvlib at build time) and the weights kvlib counted per weight dtype and TP.
  const PLAN = DATA.planner, PLAN_CONTEXTS = contextTicks(1024, 1 << 20);
  const UTILS = Array.from({ length: 51 }, (_, i) => 50 + i);  // 0.50 .. 1.00, in hundredths
  const DEC = { KB: 1000n, MB: 1000n ** 2n, GB: 1000n ** 3n };
  const fmtDec = (r, unit) => { const v = rat(r[0], r[1] * (unit === "B" ? 1n : DEC[unit]));
    if (v[1] === 1n) return `${fmtInt(v[0])} ${unit}`;
    return `${fixedSigned(v, 2).replace(/0+$/, "").replace(/\.$/, "")} ${unit}`; };
  const fixedSigned = (r, digits) => (r[0] < 0n ? "-" + fixed([-r[0], r[1]], digits) : fixed(r, digits));
  // plan.py's _gb, and capacity.render's gb (kit.fmt_size's rule in decimal units)
  const gbOnly = (n) => fmtDec([BigInt(n), 1n], "GB");
  const gb = (n) => fmtDec([BigInt(n), 1n], ["GB", "MB", "KB"].find((u) => BigInt(n) >= DEC[u]) || "B");
  const ceilDiv = (a, b) => (a + b - 1n) / b;  // a >= 0, b > 0
  const gFormat = (x) => String(Number(x.toPrecision(6)));
  // kvlib.serving.kv.kv_bytes_per_sequence_per_gpu: whole blocks of each rank group, ceiled
  function kvPerSequencePerGpu(groups, T, b, bs) {
    const total = sum(groups.map((g) => {
      const cached = cachedTokens(g, T), slots = ceilDiv(cached, bs) * bs;
      return evaluate(`${g.attention}.bytes_per_sequence`, groupValues(g, { N_L: BigInt(g.layers), b, N_KV: slots }));
    }));
    return ceilDiv(total[0], total[1]);
  }
  const planner = {
    defaults: PLAN.start,
    controls: () => [
      { name: "model", label: "model", type: "select", options: Object.keys(PLAN.models).map((n) => [n, DATA.models[n].title]) },
      { name: "gpu", label: "GPU", type: "select", options: Object.keys(PLAN.gpus).map((n) => [n, n]) },
      { name: "gpus", label: "GPUs", type: "select", options: PLAN.gpu_counts.map((n) => [n, `${n}`]) },
      { name: "tp", label: "TP", type: "select", options: PLAN.tps.map((n) => [n, `${n}`]) },
      { name: "weight_dtype", label: "weights", type: "select", options: PLAN.weight_dtypes.map((k) => [k, k]) },
      { name: "kv_dtype", label: "KV dtype", type: "select", options: KV_OPTIONS },
      { name: "context", label: "context", type: "range", options: PLAN_CONTEXTS.map((t) => [t, formatContext(t)]) },
      { name: "engine", label: "engine", type: "select", options: Object.entries(PLAN.engines.names) },
      { name: "vllm", label: "vLLM", type: "select", options: Object.keys(PLAN.releases).map((k) => [k, k]) },
      { name: "gpu_mem_util", label: "gpu_memory_util", type: "range", options: UTILS.map((u) => [u / 100, (u / 100).toFixed(2)]) },
      { name: "sessions", label: "sessions", type: "range", options: Array.from({ length: 256 }, (_, i) => [i + 1, `${i + 1}`]) },
    ],
    // kvlib.views.widgets.capacity.follow_release: a new release puts the utilization at its default
    adjust(changed, values, setOptions) {
      if (changed !== "vllm") return;
      values.gpu_mem_util = toDouble(parse(PLAN.releases[values.vllm].gpu_mem_util));
      setOptions("gpu_mem_util", UTILS.map((u) => [u / 100, (u / 100).toFixed(2)]), values.gpu_mem_util);
    },
    // kvlib.views.widgets.capacity.planner -> Deployment(...).plan(context), max_context(sessions)
    compute(s) {
      const m = PLAN.models[s.model], gpu = PLAN.gpus[s.gpu];
      if (s.gpus % s.tp) throw new Error(`gpus=${s.gpus} must be a multiple of tensor_parallel_size=${s.tp} (each data-parallel replica is one TP group)`);
      if (s.engine !== "vllm") return engineCompute(s, m, gpu);
      const w = weightsOn(m, s, gpu), layout = m.tp[s.tp];
      if (w.error) throw new Error(w.error);
      if (layout.error) throw new Error(layout.error);
      // the release's budget rule (kvlib.serving.engines.vllm.budget.RULES): 0.33.0's profiled
      // ceil(u M) - W - O; 0.34.0's extensible min(ceil(u M), M - M_0 - margin) - W - O_R - P
      const rel = PLAN.releases[s.vllm];
      const b = parse(KV_BYTES[s.kv_dtype]), bs = BigInt(rel.block_size), T = BigInt(s.context);
      const util = rat(BigInt(Math.round(s.gpu_mem_util * 100)), 100n);
      const total = BigInt(gpu.total), requested = ceilDiv(util[0] * total, util[1]);
      const extensible = rel.rule === "extensible";
      const room = extensible ? total - BigInt(rel.in_use) - BigInt(rel.margin) : requested;
      const usable = room < requested ? room : requested;
      const weights = BigInt(w.weights);
      const overhead = extensible ? BigInt(rel.resident) + BigInt(rel.peak) : BigInt(rel.overhead);
      const budget = usable - weights - overhead;
      const state = sum(layout.states.map(groupStateBytes));
      const stateInt = state[0] / state[1];
      const perSeq = kvPerSequencePerGpu(layout.groups, T, b, bs);
      const live = kvPerSequencePerGpu(layout.groups, T, b, 1n) + stateInt;
      const pos = budget > 0n ? budget : 0n;
      const perReplica = pos / (perSeq + stateInt);
      const replicas = BigInt(s.gpus / s.tp);
      let fits = true, reason = "";
      if (budget <= 0n) {
        fits = false;
        let how = `gpu_memory_utilization ${gFormat(toDouble(util))} x ${gbOnly(total)} ${s.gpu}`;
        if (extensible) how = `vLLM ${s.vllm}: the smaller of ${how} and the total less ${gbOnly(BigInt(rel.in_use))} in use at start and a margin of ${gbOnly(BigInt(rel.margin))}`;
        reason = `does not fit: weights ${gbOnly(weights)} + overhead ${gbOnly(overhead)} = ${gbOnly(weights + overhead)} per GPU exceed the ` +
          `usable ${gbOnly(usable)} (${how}); use ` +
          `more tensor parallelism, smaller weights or a larger GPU`;
      } else if (perReplica === 0n) {
        fits = false;
        reason = `does not fit: the KV budget of ${gbOnly(budget)} per GPU holds no sequence of ${fmtInt(T)} tokens (one needs ${gbOnly(perSeq + stateInt)} per GPU)`;
      }
      const used = perReplica * (perSeq + stateInt), bw = BigInt(gpu.bandwidth);
      let bound = null, uniform = null, experts = null;
      if (perReplica > 0n) {
        bound = toDouble(rat(BigInt(w.read) + perReplica * live, bw));
        if (w.moe) {  // uniform routing: E (1 - (1 - k/E)^B) distinct experts per MoE layer (in doubles)
          const [E, k, layers, expert] = w.moe, B = Number(perReplica);
          const distinct = E * (1 - Math.pow(1 - k / E, B));
          const bpw = toNumber(parse(w.bpw));
          const read = (w.base + layers * (distinct - k) * expert) * bpw / s.tp;
          uniform = (read + Number(perReplica * live)) / Number(bw);
          experts = Number(fixedNumber(distinct, 2).replace(/,/g, ""));
        }
      }
      // kvlib.serving.engines.vllm.context_search.max_context: the most whole blocks at which `sessions` fit
      const hi = BigInt(DATA.models[s.model].max_position_embeddings || 2 ** 24);
      const S = BigInt(s.sessions);
      const fitsAt = (t) => S * (kvPerSequencePerGpu(layout.groups, t, b, bs) + stateInt) <= budget;
      let maxContext = 0n;
      if (budget > 0n && fitsAt(1n)) {
        if (hi <= 1n) maxContext = 1n;
        else {
          let lo = 1n, top = ceilDiv(hi, bs);
          while (lo < top) {
            const mid = (lo + top + 1n) / 2n;
            const t = mid * bs < hi ? mid * bs : hi;
            if (fitsAt(t)) lo = mid; else top = mid - 1n;
          }
          maxContext = lo * bs < hi ? lo * bs : hi;
        }
      }
      return { total, usable, weights, overhead, budget, perSeq, state: stateInt, perReplica, replicas,
        maxSequences: perReplica * replicas, used, free: pos - used, fits, reason, bound, uniform, experts,
        moe: w.moe, maxContext, label: w.label, basis: gpu.basis, util, release: s.vllm, rule: rel.rule };
    },
    // kvlib.views.widgets.capacity.render
    render(s, r) {
      if (r.engine) return engineRender(s, r);
      const fc = formatContext(s.context);
      const rows = [
        [r.basis === "cuda" ? "memory per GPU (CUDA total)" : "memory per GPU (datasheet)", gb(r.total)],
        [`usable (x ${gFormat(toDouble(r.util))})`, gb(r.usable)],
        [`weights (${esc(r.label)}, / TP ${s.tp})`, gb(r.weights)],
        ["activations, NCCL, graphs", gb(r.overhead)],
        [`KV budget (vLLM ${r.release}, ${r.rule})`, gb(r.budget)],
        [`KV per ${fc} session (${s.kv_dtype})`, gb(r.perSeq)],
        ["max concurrent sessions (bytes alone)", `${fmtInt(r.maxSequences)} (${r.replicas} replica${r.replicas > 1n ? "s" : ""} x ${fmtInt(r.perReplica)})`],
        [`max context at ${s.sessions} sessions per replica`, r.maxContext ? `${fmtInt(r.maxContext)} tokens` : "none fits"],
        ["decode step at full batch", r.bound !== null ? `>= ${fixedNumber(r.bound * 1e3, 2)} ms` : "-"],
      ];
      if (r.uniform !== null)
        rows.push([`uniform routing (${gFormat(r.experts)} of ${r.moe[0]} experts per layer)`, `${fixedNumber(r.uniform * 1e3, 2)} ms`]);
      const warn = (r.fits ? "" : `<p style="color:#b00;margin:2px 0"><b>${esc(r.reason)}</b></p>`) + warnContext(s);
      return warn + htmlTable([`${s.model}, per GPU`, ""], rows, [false, true]);
    },
    // kvlib.views.figures.capacity.plot_budget, as the planner's draw updates it: the KV of the
    // sessions slider's sequences (at_sessions, _engine_bar), drawn at most up to the whole memory
    chart(s, r) {
      const S = BigInt(s.sessions), most = r.perReplica;
      let used = r.used, free = r.free;
      if (r.fits) {
        const pos = r.used + r.free;  // the budget, 0 when none
        const room = r.engine ? pos : r.total - r.weights - r.overhead;
        const want = S * (r.engine ? r.perRequest : r.perSeq + r.state);
        used = want < room ? want : (room > 0n ? room : 0n);
        free = r.engine ? r.budget - used : (pos > used ? pos - used : 0n);
      }
      const GB = 1e9, segs = [["weights", r.weights], ["overhead", r.overhead], ["KV in use", used], ["KV free", free]];
      const colors = { weights: "#0072B2", overhead: "#999999", "KV in use": "#D55E00", "KV free": "#F0E442" };
      const hbm = Number(r.total) / GB, usable = Number(r.usable) / GB;
      let left = 0; const bars = [];
      for (const [name, v] of segs) { const w = Number(v) / GB; if (w > 0) bars.push([name, left, w]); left += Math.max(w, 0); }
      const fc = formatContext(s.context);  // kvlib.views.figures.capacity.budget_verdict
      const verdict = !r.fits ? ["does not fit"] : S <= most ? [`${fmtInt(S)} x ${fc}`, `(${fmtInt(most)} fit)`]
        : [`${fmtInt(S)} x ${fc}:`, `only ${fmtInt(most)} fit`];  // two lines, as the figure's
      const heading = `${s.model}: one GPU's memory at ${fc}` + (r.engine ? ` under ${PLAN.engines.names[r.engine]}` : "");
      const ylabel = `${s.gpus} x ${s.gpu}, TP=${s.tp}`, xlabel = "memory per GPU (GB); dashed: usable, solid: all";
      const f = (v) => v.toFixed(1), out = [];
      // wide: the label left of the bar, the verdict right of it; narrow (a phone): both on a line
      // above the bar, the title and the x label wrapped, the legend in two columns
      let W, H, L, R, T, B, X, y0, h, title, xlines, end;
      if (!narrow()) {
        [W, H, L, R, T, B] = [760, 190, 150, 110, 62, 48];
        end = Math.max(left, hbm) * 1.18;
        y0 = T + 14; h = H - B - T - 28; title = [heading]; xlines = [xlabel];
      } else {
        W = VW; L = 10; R = 14; title = wrap(heading, W - 8, 14); xlines = wrap(xlabel, W - 8);
        const legendTop = 14 + title.length * 18 + 4;
        T = legendTop + 2 * 16 + 26; h = 34; B = 24 + xlines.length * 15;
        H = T + h + 10 + B; y0 = T; end = Math.max(left, hbm) * 1.04;
      }
      X = (v) => L + v / end * (W - L - R);
      out.push(`<svg class="kvlib-svg${narrow() ? " kvlib-narrow" : ""}" viewBox="0 0 ${W} ${H}" width="100%" role="img" xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="12">`,
        textLines(title, narrow() ? W / 2 : (L + W - R) / 2, 18, 18, `class="kvlib-chart-title" text-anchor="middle" font-size="14" font-weight="bold"`),
        `<g class="kvlib-legend">`);
      Object.entries(colors).forEach(([name, c], i) => {
        const x = narrow() ? L + (i % 2) * (W - L - R) / 2 : L + i * 130;
        const y = narrow() ? 14 + title.length * 18 + 4 + Math.floor(i / 2) * 16 : 30;
        out.push(`<rect x="${f(x)}" y="${y}" width="14" height="10" fill="${c}"/><text x="${f(x + 18)}" y="${y + 9}">${name}</text>`);
      });
      out.push(`</g>`);
      const top = narrow() ? T - 4 : T, bottom = narrow() ? T + h + 10 : H - B;
      const step = steadyLimit(end / (narrow() ? 4 : 6), 1);
      for (let v = 0; v <= end; v += step)
        out.push(`<line x1="${f(X(v))}" x2="${f(X(v))}" y1="${top}" y2="${bottom}" stroke="#e3e3e3"/><text x="${f(X(v))}" y="${bottom + 16}" text-anchor="${narrow() && v === 0 ? "start" : "middle"}">${fmtG(v)}</text>`);
      for (const [name, x, w] of bars) out.push(`<rect class="kvlib-bar" x="${f(X(x))}" y="${y0}" width="${f(X(x + w) - X(x))}" height="${h}" fill="${colors[name]}"><title>${name}</title></rect>`);
      out.push(`<line x1="${f(X(usable))}" x2="${f(X(usable))}" y1="${y0 - 6}" y2="${y0 + h + 6}" stroke="black" stroke-width="1.8" stroke-dasharray="5 3"/>`,
        `<line x1="${f(X(hbm))}" x2="${f(X(hbm))}" y1="${y0 - 6}" y2="${y0 + h + 6}" stroke="black" stroke-width="1.8"/>`);
      if (!narrow())
        out.push(`<text class="kvlib-verdict" x="${f(X(Math.max(left, hbm)) + 6)}" y="${y0 + h / 2 + 5 - (verdict.length - 1) * 8}" font-size="13">` +
          verdict.map((line, i) => i ? `<tspan x="${f(X(Math.max(left, hbm)) + 6)}" dy="16"> ${esc(line)}</tspan>` : esc(line)).join("") + `</text>`,
          `<text class="kvlib-ylabel" x="${L - 8}" y="${y0 + h / 2 + 4}" text-anchor="end">${esc(ylabel)}</text>`,
          `<rect x="${L}" y="${T}" width="${W - L - R}" height="${H - T - B}" fill="none" stroke="#555"/>`);
      else
        out.push(`<text class="kvlib-ylabel" x="${L}" y="${T - 10}">${esc(ylabel)}</text>`,
          `<text class="kvlib-verdict" x="${W - R}" y="${T - 10}" text-anchor="end" font-weight="bold">${esc(verdict.join(" "))}</text>`,
          `<line x1="${L}" x2="${W - R}" y1="${bottom}" y2="${bottom}" stroke="#555"/>`);
      out.push(textLines(xlines, (L + W - R) / 2, H - 10 - (xlines.length - 1) * 15, 15, `class="kvlib-xlabel" text-anchor="middle"`), `</svg>`);
      return out.join("");
    },
    exact: (r) => (r.engine ? { engine: r.engine, total: r.total, weights: r.weights, fraction: r.fraction, budget: r.budget,
      cell: r.cell, page: r.page, tokens: r.tokens, swa_cell: r.swaCell, swa_tokens: r.swaTokens, max_running: r.running,
      sessions: r.sessions, max_sequences: r.maxSequences, used: r.used } : { total: r.total, usable: r.usable, weights: r.weights, budget: r.budget, per_sequence: r.perSeq,
      state: r.state, per_replica: r.perReplica, max_sequences: r.maxSequences, used: r.used, free: r.free,
      max_context: r.maxContext }),
  };
  function warnContext(s) {
    const limit = DATA.models[s.model].max_position_embeddings;
    return limit !== null && s.context > limit
      ? `<p style="color:#b00;margin:2px 0"><b>context ${fmtInt(s.context)} exceeds the model's max_position_embeddings (${fmtInt(limit)})</b></p>` : "";
  }
  // kvlib.serving.engines.engine_plan at the engine's defaults, in its order of refusals: the
  // Deployment, the model, the KV dtype, (SGLang) the page and the default fraction on this GPU,
  // (TensorRT-LLM) the model's heads, then a budget of nothing. Every rule is a generated formula.
  const gib = (r) => fmtBytes(r, "GiB");
  // Python's float a // b (floatobject.c float_floor_div), which split_budget takes
  function pyFloorDiv(a, b) {
    const mod = a % b;
    let div = (a - mod) / b;
    if (mod && (b < 0) !== (mod < 0)) div -= 1;
    if (!div) return 0 * (a / b);
    const floordiv = Math.floor(div);
    return div - floordiv > 0.5 ? floordiv + 1 : floordiv;
  }
  const ratOf = (o) => Object.fromEntries(Object.entries(o).map(([k, x]) => [k, parse(String(x))]));
  // the weights per GPU of model m as set in s on gpu: one entry, or one per compute capability
  // where the MoE backend's padding makes them differ (book_js._weights_entry)
  function weightsOn(m, s, gpu) {
    const w = m.weights[`${s.weight_dtype} ${s.tp}`];
    return w.by_sm ? w.by_sm[gpu.sm === null ? "none" : String(gpu.sm)] : w;
  }
  function engineCompute(s, m, gpu) {
    const w = weightsOn(m, s, gpu), me = m.engines[s.engine], eng = PLAN.engines[s.engine];
    if (w.weights === undefined) throw new Error(w.error);
    if (me.refuse) throw new Error(me.refuse);
    const kvb = eng.kv_bytes[s.kv_dtype];
    if (typeof kvb === "string") throw new Error(kvb);
    const sglang = s.engine === "sglang", b = [BigInt(kvb), 1n], TP = [BigInt(s.tp), 1n], C = [BigInt(s.context), 1n];
    const total = [BigInt(gpu.total), 1n], W_GPU = [BigInt(w.weights), 1n];
    const cellOf = (groups, pool) => sum(groups.filter((g) => pool === undefined || g[2] === pool)
      .map(([key, values]) => evaluateExact(`${s.engine}.${key}`, { ...ratOf(values), TP, b })));
    const r = { engine: s.engine, total: total[0], weights: W_GPU[0], label: w.label, basis: gpu.basis,
      swaCell: null, swaTokens: null, running: null, replicas: BigInt(s.gpus / s.tp) };
    let assumptions, page;
    if (sglang) {
      const p = me.pages[s.gpu];
      if (typeof p === "string") throw new Error(p);
      page = [BigInt(p || 1), 1n];
      // a DSA model (kvlib.serving.engines.sglang.indexer): traced below SM100 only, for bf16 and
      // fp8; one pool of the latent row and the indexer's keys a token
      let full = cellOf(me.groups, "full");
      if (me.dsa) {
        if (me.dsa.gpus[s.gpu]) throw new Error(me.dsa.gpus[s.gpu]);
        if (me.dsa.refuse_bytes[String(kvb)]) throw new Error(me.dsa.refuse_bytes[String(kvb)]);
        full = add(evaluateExact(kvb === 2 ? "sglang.CELL_DSA_MLA_BF16" : "sglang.CELL_DSA_MLA_FP8", ratOf(me.dsa.latent)),
          evaluateExact("sglang.CELL_DSA_INDEXER", ratOf(me.dsa.indexer)));
      }
      // a multimodal model's own default fraction (cut by its vision tower) per GPU and TP
      const fr = eng.fractions[s.gpu];  // or the GPU's refusal, every model's
      if (typeof fr === "string") throw new Error(fr);
      const f = parse(me.fractions ? me.fractions[s.gpu][String(s.tp)] : fr[String(s.tp)][(me.llama2 ? 2 : 0) + (me.mla ? 1 : 0)]), inUse = [BigInt(eng.in_use), 1n];
      const F_0 = add(total, [-inUse[0], 1n]), X = [BigInt(eng.other), 1n];
      // kvlib.serving.engines.sglang.kv_budget: the exact KV_BUDGET, computed as SGLang does in
      // GB floats, each free memory all-reduced as a float32 when TP > 1 (utils/common.py:569-574),
      // less a multimodal model's reserve M_mm (KV_BUDGET_MM, in its order: F_1 - F_0 (1 - f) - M_mm)
      const gbOf = (r) => (s.tp > 1 ? Math.fround(Number(r[0]) / Number(r[1])) : Number(r[0]) / Number(r[1])) / 2 ** 30;
      const rest = gbOf(add(add(F_0, [-W_GPU[0], W_GPU[1]]), [-X[0], X[1]])) - gbOf(F_0) * (1 - Number(f[0]) / Number(f[1]));
      const restBytes = rest * 2 ** 30 - (me.reserve ? me.reserve[s.gpu] : 0);
      const budget = [BigInt(Math.floor(restBytes)), 1n];
      if (budget[0] <= 0n)
        throw new Error(`${s.model} on ${s.gpu}, TP=${s.tp}: SGLang would stop ('Loaded weights leave no GPU memory for the KV cache', kv_cache_configurator.py:3041-3058): ` +
          `the weights ${gib(W_GPU)} exceed mem_fraction_static x free memory ${gib(mul(F_0, f))}`);
      // a state hybrid (kvlib.serving.engines.sglang.state): STATE_PER_REQ a request, then
      // split_budget in SGLang's GB floats: K slots of the r / (1 + r) share, the KV pool the rest
      let poolBudget = budget, slots = null;
      if (me.state) {
        if (me.state.refuse_tp[String(s.tp)]) throw new Error(me.state.refuse_tp[String(s.tp)]);
        const S = sum(me.state.groups.map((g) => evaluateExact("sglang.STATE_PER_REQ", { ...ratOf(g), TP })));
        const per = Number(S[0]), gbRest = restBytes / 2 ** 30, rr = toDouble(parse(me.state.ratio));
        const mambaBudget = gbRest * rr / (1 + rr) * 2 ** 30;
        slots = BigInt(Math.trunc(pyFloorDiv(mambaBudget - per, per)));
        poolBudget = [BigInt(Math.trunc((gbRest - Number((slots + 1n) * S[0]) / 2 ** 30) * 2 ** 30)), 1n];
        if (slots <= 0n)
          throw new Error(`${s.model} on ${s.gpu}, TP=${s.tp}: SGLang would stop ('Not enough GPU memory for hybrid (mamba/linear-attention) state cache', kv_cache_configurator.py:3387-3396): ${slots} state slots`);
      }
      const swa = cellOf(me.groups, "swa"), ratio = parse(eng.ratio);
      let T, sessions;
      if (swa[0] > 0n) {
        T = evaluateExact("sglang.FULL_TOKENS_SWA", { B_KV: poolBudget, c_full: full, c_swa: swa, p: page, r: ratio });
        const T_SWA = evaluateExact("sglang.SWA_TOKENS", { T, r: ratio, p: page });
        sessions = evaluateExact("sglang.SESSIONS_SWA", { T, C, p: page, T_SWA, w: [BigInt(me.window), 1n] });
        Object.assign(r, { swaCell: swa[0], swaTokens: T_SWA[0] });
      } else {
        T = evaluateExact("sglang.TOKENS", { B_KV: poolBudget, c: full, p: page });
        sessions = evaluateExact("sglang.SESSIONS", { T, C, p: page });
      }
      let running = evaluateExact("sglang.MAX_RUNNING", { T, C });
      if (slots !== null) {  // max_running_requests capped at K // q by the state slots
        running = R.min(running, evaluateExact("sglang.MAMBA_CAP", { K: [slots, 1n], q: [BigInt(me.state.q), 1n] }));
        sessions = R.min(sessions, running);
      }
      Object.assign(r, { fraction: f, budget: budget[0], cell: full[0], tokens: T[0], sessions: sessions[0],
        running: running[0] });
      assumptions = [`free before the weights load (CUDA total less CUDA context, NCCL, other processes ${gib(inUse)}): ${gib(F_0)} (--in-use-gib)`,
        `memory taken after the weights and before the KV pool: ${gib(X)} (--other-gib)`];
    } else {
      if (me.late) throw new Error(me.late);
      const cell = cellOf(me.groups), O_T = [BigInt(eng.other_peak), 1n], phi = parse(eng.fraction);
      page = [BigInt(eng.block), 1n];
      const budget = evaluateExact("trtllm.KV_BUDGET", { M: total, W_GPU, O_T, phi });
      if (budget[0] <= 0n)
        throw new Error(`${s.model} on ${s.gpu}, TP=${s.tp}: nothing is left for the KV cache: weights ${gib(W_GPU)} + the rest of the profiling peak ${gib(O_T)} exceed the ${gib(total)} CUDA total`);
      // the fp8 context-MLA workspace reserve (workspace.py) and a Nemotron-H's Mamba state
      // (mamba.py) come off the budget before the tokens, as engine_plan takes them
      const S_max = [BigInt(eng.max_batch), 1n];
      let pool = budget, T;
      if (me.mla && kvb === 1 && eng.fp8_mla_sms.includes(gpu.sm)) {
        const w = evaluateExact("trtllm.W_MLA", { ...ratOf(me.mla), TP });
        pool = evaluateExact("trtllm.B_AFTER", { B_KV: budget, c: cell, w, C, S_max, M_tok: [BigInt(eng.max_num_tokens), 1n] });
      }
      if (me.mamba) {
        const mt = evaluateExact("trtllm.MAMBA_MAX_TOKENS", { ...ratOf(me.mamba), TP, S_max, B_KV: pool, c: cell });
        T = [ceilDiv(mt[0], page[0]) * page[0], 1n];
      } else {
        T = evaluateExact("trtllm.TOKENS", { B_KV: pool, c: cell, n: page });
      }
      const sessions = evaluateExact("trtllm.SESSIONS", { T, C, n: page, S_max });
      Object.assign(r, { fraction: phi, budget: budget[0], cell: cell[0], tokens: T[0], sessions: sessions[0] });
      assumptions = [`TensorRT-LLM's profiling peak less the weights and its temporary cache (CUDA context, activations, CUDA graphs, NCCL): ${gib(O_T)} (--trtllm-peak-gib)`];
    }
    // kvlib.views.widgets.capacity.engine_used_bytes and _engine_bar: the sessions' pages (and a
    // sliding pool's min(context, window) + one page), the rest of the GPU the engine's overhead
    r.page = page[0];
    let perRequest = ceilDiv(C[0], r.page) * r.page * r.cell;
    if (r.swaTokens !== null) perRequest += ((C[0] < BigInt(me.window) ? C[0] : BigInt(me.window)) + r.page) * r.swaCell;
    Object.assign(r, { assumptions, perRequest, perReplica: r.sessions, maxSequences: r.replicas * r.sessions, used: r.sessions * perRequest,
      usable: r.total, overhead: r.total - r.weights - r.budget, fits: r.sessions > 0n });
    r.free = r.budget - r.used;
    return r;
  }
  // kvlib.views.widgets.capacity.render_engine
  function engineRender(s, r) {
    const sglang = r.engine === "sglang", name = sglang ? `SGLang ${PLAN.engines.sglang.release}` : "TensorRT-LLM";
    const rows = [
      [r.basis === "cuda" ? "memory per GPU (CUDA total)" : "memory per GPU (datasheet)", gb(r.total)],
      [`weights (${esc(r.label)}, / TP ${s.tp})`, gb(r.weights)],
      [sglang ? "mem_fraction_static (its default)" : "free_gpu_memory_fraction (0.9 as a float32)",
        sglang ? gFormat(toDouble(r.fraction)) : String(Number(toDouble(r.fraction).toPrecision(16)))],
      [`KV budget (${name}, ${sglang ? "F_0 - W - F_0 (1 - f))" : "(M - W - O_T) x fraction)"}`, gb(r.budget)],
      [`KV per token (${s.kv_dtype}, ${r.swaTokens !== null ? "full-attention pool)" : "every layer)"}`, `${fmtInt(r.cell)} B`],
      [sglang ? "page" : "block", `${r.page} token${r.page !== 1n ? "s" : ""}`],
      [sglang ? "KV tokens (the #tokens it logs)" : "KV tokens (whole blocks, the (N) it logs)", fmtInt(r.tokens)],
    ];
    if (r.swaTokens !== null) rows.push([`sliding-window pool (${fmtInt(r.swaCell)} B per token)`, `${fmtInt(r.swaTokens)} tokens`]);
    if (r.running !== null) rows.push(["max_running_requests (its default)", fmtInt(r.running)]);
    rows.push([`max concurrent ${formatContext(s.context)} sessions`,
      `${fmtInt(r.maxSequences)} (${r.replicas} replica${r.replicas > 1n ? "s" : ""} x ${fmtInt(r.sessions)})`]);
    const rule = sglang ? "SGLang keeps 1 - mem_fraction_static of the memory free before the weights load, and gives its KV pools the rest of what is free after them."
      : "TensorRT-LLM gives its KV cache free_gpu_memory_fraction of what is free after a profiling run with the weights loaded.";
    return warnContext(s) + htmlTable([`${s.model}, per GPU`, ""], rows, [false, true]) +
      `<p style="margin:4px 0">${rule} Assumed (kvlib plan --engine ${r.engine} overrides each):</p>` +
      `<ul style="margin:2px 0">${r.assumptions.map((a) => `<li>${esc(a)}</li>`).join("")}</ul>`;
  }

  // ------------------------------------------------------------ notebook 08: seven ways of keeping the context
  // kvlib.views.figures.compressed.sweep: one bundled model per kind (the pairs come from kvlib),
  // each one sequence's cache and constant state (ModelSpec.total_bytes_per_sequence) at every
  // context; a group's own element size (V4's entries, an indexer's keys) wins over the KV dtype.
  const COMP = DATA.compressed, COMP_CONTEXTS = COMP.contexts;
  const compressed = {
    controls: () => [
      { name: "context", label: "context", type: "range", options: COMP_CONTEXTS.map((t) => [t, formatContext(t)]) },
      { name: "kv_dtype", label: "KV dtype", type: "select", options: COMP.dtypes.map((k) => [k, k]) },
    ],
    // kvlib.views.widgets.compressed.compare
    compute(s) {
      if (!COMP_CONTEXTS.includes(s.context)) throw new Error(`context=${s.context}: not one of the explorer's contexts`);
      const b = parse(DATA.dtypes[s.kv_dtype]), k = COMP_CONTEXTS.indexOf(s.context);
      const curves = COMP.kinds.map(([kind, name]) => {
        const m = DATA.models[name], state = sum(m.groups.map(groupStateBytes));
        const bytes = COMP_CONTEXTS.map((t) => add(sum(m.groups.map((g) => groupBytesPerSequence(g, BigInt(t), b))), state));
        return { kind, name, title: m.title, longest: m.max_position_embeddings, bytes };
      });
      return { curves, at: curves.map((c) => c.bytes[k]) };
    },
    // kvlib.views.widgets.compressed.render
    render(s, r) {
      const ref = r.at[r.curves.findIndex((c) => c.kind === COMP.reference)];
      const rows = r.curves.map((c, i) => {
        const beyond = c.longest && s.context > c.longest ? " (past its longest context)" : "";
        const times = fixed(rat(r.at[i][0] * ref[1], r.at[i][1] * ref[0]), 1).replace(/,/g, "");
        return [c.kind, esc(c.title) + beyond, fmtSize(r.at[i]), `${times}x`];
      });
      return `<p>One sequence of <b>${fmtInt(s.context)}</b> tokens, ${s.kv_dtype} cache (V4's entries ` +
        "always in vLLM's 584-byte layout):</p>" +
        htmlTable(["kind", "model", "one sequence", "x V4-Pro"], rows, [false, false, true, true]);
    },
    // kvlib.views.widgets.compressed.draw: every curve on the figure's steady value axis, solid up to
    // the model's longest context and dotted past it (as the notebook's figure), the context marked
    chart(s, r) {
      const gib = (x) => toNumber(x) / 1073741824, k = COMP_CONTEXTS.indexOf(s.context);
      const series = [], legend = [], dots = [];
      r.curves.forEach((c, i) => {
        const color = COMP.colors[i], ys = c.bytes.map(gib), width = c.kind === COMP.reference ? 3.2 : 2;
        const n = COMP_CONTEXTS.filter((t) => !c.longest || t <= c.longest).length;
        series.push({ xs: COMP_CONTEXTS.slice(0, n), ys: ys.slice(0, n), color, marker: true, width });
        if (n < COMP_CONTEXTS.length)
          series.push({ xs: COMP_CONTEXTS.slice(Math.max(n - 1, 0)), ys: ys.slice(Math.max(n - 1, 0)), color, dash: "2 4", width: 1.6, opacity: 0.6 });
        legend.push({ label: `${c.kind}: ${c.title}`, color, marker: true, width });
        dots.push({ x: s.context, y: ys[k], color, r: 6 });
      });
      const [lo, hi] = COMP.value_limits;
      return chart({ title: `One sequence at ${formatContext(s.context)} tokens, ${s.kv_dtype} cache`,
        xlabel: XLABEL, ylabel: "cache of one sequence (GiB, log scale)", x: [COMP_CONTEXTS[0] / 1.3, COMP_CONTEXTS.at(-1) * 1.3],
        xticks: contextAxis(COMP_CONTEXTS), y: [lo, hi], yticks: logTicks(lo, hi), series, vline: s.context, dots, legend,
        legendBelow: true, note: "dotted: past the model's longest context (its config's max_position_embeddings)" });
    },
    exact: (r) => ({ at: r.at, curves: r.curves.map((c) => c.bytes) }),
  };

  const EXPLORERS = { gqa, hybrid, models, rope, planner, compressed };

  // ------------------------------------------------------------ controls -> compute -> readout + chart
  const jsonExact = (x) => JSON.stringify(x, (k, v) => (Array.isArray(v) && v.length === 2 &&
    typeof v[0] === "bigint" ? ratText(v) : typeof v === "bigint" ? v.toString() : v));

  function mount(el) {
    const ex = EXPLORERS[el.dataset.explorer];
    if (!ex) return;
    const values = { ...(ex.defaults || {}), ...JSON.parse(el.dataset.init || "{}") };
    const form = document.createElement("form");
    form.className = "kvlib-controls";
    form.addEventListener("submit", (e) => e.preventDefault());
    const readout = document.createElement("div");
    readout.className = "kvlib-readout";
    const plot = document.createElement("div");
    plot.className = "kvlib-chart";
    const inputs = {};
    const number = (spec, raw) => (typeof spec.options[0][0] === "number" ? Number(raw) : raw);

    function setOptions(name, options, value) {
      const spec = specs.find((c) => c.name === name);
      spec.options = options;
      const input = inputs[name];
      if (spec.type === "select") {
        input.innerHTML = options.map(([v, label]) => `<option value="${v}">${esc(label)}</option>`).join("");
        input.value = String(value);
      } else {
        input.max = String(options.length - 1);
        input.value = String(options.findIndex(([v]) => v === value));
        input.nextSibling.textContent = options[Number(input.value)][1];
      }
    }
    const specs = ex.controls(values);
    for (const spec of specs) {
      const row = document.createElement("label");
      row.className = "kvlib-control";
      row.innerHTML = `<span class="kvlib-control-label">${esc(spec.label)}</span>`;
      let input;
      if (spec.type === "select") {
        input = document.createElement("select");
      } else {
        input = document.createElement("input");
        input.type = "range"; input.min = "0"; input.step = "1";
      }
      input.name = spec.name;
      row.appendChild(input);
      if (spec.type === "range") row.appendChild(document.createElement("output"));
      form.appendChild(row);
      inputs[spec.name] = input;
      setOptions(spec.name, spec.options, values[spec.name]);
      input.addEventListener("input", (ev) => {
        const sp = specs.find((c) => c.name === spec.name);
        values[spec.name] = spec.type === "select" ? number(sp, input.value) : sp.options[Number(input.value)][0];
        if (spec.type === "range") input.nextSibling.textContent = sp.options[Number(input.value)][1];
        if (ex.adjust) ex.adjust(spec.name, values, setOptions);
        update(ev.timeStamp);
      });
    }
    let updates = 0, result = null, drawnWidth = 0;
    // the chart's width in units: its box's width on a narrow screen, else WIDE (see VW)
    const chartWidth = () => {
      const w = Math.floor(plot.clientWidth || el.clientWidth);
      return w && w < NARROW ? Math.max(280, w) : WIDE;
    };
    function drawChart() {
      VW = drawnWidth = chartWidth();
      plot.innerHTML = ex.chart(values, result);
    }
    function update(t0) {
      try {
        const r = ex.compute(values);
        readout.innerHTML = ex.render(values, r);
        result = r;
        drawChart();
        el.dataset.exact = jsonExact(ex.exact(r));
        el.dataset.state = JSON.stringify(values);
        el.classList.remove("kvlib-error");
      } catch (err) {  // kvlib.views.widgets.kit.Explorer: say so, show no stale numbers or chart
        readout.innerHTML = `<div class="kvlib-message"><b style="color:#b00">${esc(err.message)}</b></div>` +
          `<i>(no result for this setting)</i>`;
        plot.innerHTML = "";
        result = null;
        el.dataset.exact = "null";
        el.dataset.state = JSON.stringify(values);
        el.classList.add("kvlib-error");
      }
      updates += 1;
      const n = updates;
      // input-to-redraw: from the input event to the next frame (the chart painted with it)
      requestAnimationFrame(() => { el.dataset.redrawMs = (performance.now() - t0).toFixed(1); el.dataset.updates = String(n); });
    }
    el.replaceChildren(form, readout, plot);
    update(performance.now());
    // a phone turned, a window resized: the chart is drawn again for its box's new width
    if (window.ResizeObserver)
      new ResizeObserver(() => { if (result && chartWidth() !== drawnWidth) drawChart(); }).observe(plot);
  }

  window.KVLIB_EXPLORERS = { evaluate, evaluateExact, explorers: EXPLORERS, fmtSize, formatContext, mount, parse };
  const start = () => document.querySelectorAll(".kvlib-explorer").forEach(mount);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
