// The cost explorer: the page's controls become a `POST v1/recommendations` body (the same request
// `planner recommend` takes), and its answer is drawn as a table, stage bars and a cost/time chart.
// Plain JavaScript with no build step and nothing fetched from elsewhere, so it works offline and
// from the installed package. URLs are relative, so the page also works behind a path prefix.
"use strict";

const API = {
  health: "healthz",
  datasets: "v1/datasets",
  families: "v1/families",
  recommend: "v1/recommendations",
};
const DEFAULT_DATASET = "papers100M";
const UPLOADED = "__uploaded_profile__"; // the dataset menu's entry for an uploaded profile
const DEBOUNCE_MS = 120; // typing or dragging settles this long before a request goes out
const BUDGET_SLIDER = { min: 0.1, max: 10000, steps: 1000 }; // log scale: five decades
const TOP = 10; // plans asked for (the table shows those that fit, plus the two best of each layout)

// A request field path (as a 422 `loc` or an advice `field` names it) -> the control that sets it.
const FIELD_CONTROLS = {
  dataset: "dataset",
  profile: "profile-file",
  "constraints.budget_usd": "budget",
  "constraints.deadline_hours": "deadline",
  "constraints.max_hourly_usd": "hourly-cap",
  "workload.epochs": "epochs",
  "workload.gpus": "gpus",
  "workload.gpu_cache_gib": "gpu-cache",
  "workload.sampling": "sampling",
  "workload.shard_layout": "shard-layout",
  "workload.learner_machines": "learner-machines",
  "filters.max_memory_gib": "max-memory",
  "filters.gpu_families": "gpu-families",
  "filters.memory_families": "memory-families",
  spot: "spot",
  ena_express: "ena-express",
};
// What the page calls a field in advice ("raise the budget to at least $0.36").
const FIELD_WORDS = {
  "constraints.budget_usd": "the budget",
  "constraints.deadline_hours": "the deadline",
  "constraints.max_hourly_usd": "the hourly cap",
  "workload.epochs": "the epochs",
  "workload.gpus": "the GPUs per learner",
  "workload.gpu_cache_gib": "the GPU cache",
  "workload.sampling": "who samples",
  "workload.shard_layout": "how rows are dealt",
  "workload.learner_machines": "the learner machines",
  "filters.max_memory_gib": "the largest RAM per machine",
  "filters.gpu_families": "the GPU learner families",
  "filters.memory_families": "the memory machine families",
};
const FIELD_UNITS = {
  "constraints.budget_usd": (v) => `$${v}`,
  "constraints.deadline_hours": (v) => `${v} h`,
  "constraints.max_hourly_usd": (v) => `$${v}/h`,
  "filters.max_memory_gib": (v) => `${v} GiB`,
};
const CHANGE_WORDS = { at_least: "Raise", at_most: "Lower" };
const BOUND_WORDS = { at_least: "at least", at_most: "at most" };
const LAYOUT_WORDS = { "single-machine": "best single machine", "two-level": "best two-level" };

const state = {
  profile: null, // an uploaded profile (parsed JSON), sent instead of a dataset name
  answerText: null, // the last answer's exact bytes: what "Download plan JSON" saves
  answer: null,
  rows: [],
  selected: 0,
  inFlight: null, // AbortController of the request under way
  sequence: 0, // answers to older requests than the newest are dropped
  timer: null,
  answers: 0, // requests answered or refused, shown as body[data-answers] so tests can wait for one
};

const $ = (id) => document.getElementById(id);

// ------------------------------------------------------------------------------------ formatting

// Figures read as the CLI prints them (foundation.units): three significant digits, money at least
// to the cent, so a small graph's plans, fractions of a cent and seconds apart, still read apart.
const SIGNIFICANT_DIGITS = 3;
const CENT_DECIMALS = 2;

function significant(value, minDecimals = 0) {
  const rounded = Number(value.toPrecision(SIGNIFICANT_DIGITS));
  const decimals = rounded === 0 ? minDecimals
    : Math.max(minDecimals, SIGNIFICANT_DIGITS - 1 - Math.floor(Math.log10(Math.abs(rounded))));
  return value.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

// The units' bounds, as foundation/units.py's SHOWN_IN_*_BELOW_S (a browser test checks the page's figures against it).
const SHOWN_IN_SECONDS_BELOW_S = 2 * 60;
const SHOWN_IN_MINUTES_BELOW_S = 2 * 3600;

function duration(seconds) {
  if (!Number.isFinite(seconds)) return "–";
  const shown = Number(seconds.toPrecision(SIGNIFICANT_DIGITS)); // the unit the rounded figure falls in
  if (shown === 0) return "0 s";
  if (shown < 1) return `${significant(seconds * 1000)} ms`;
  if (shown < SHOWN_IN_SECONDS_BELOW_S) return `${significant(seconds)} s`;
  if (shown < SHOWN_IN_MINUTES_BELOW_S) return `${significant(seconds / 60)} min`;
  return `${significant(seconds / 3600)} h`;
}

function usd(value) {
  if (!Number.isFinite(value)) return "–";
  return `$${significant(value, CENT_DECIMALS)}`;
}

function label(plan) {
  if (!plan.learner) return `${plan.memory.count}× ${plan.memory.instance_type}`;
  return plan.memory ? `${plan.learner.instance_type} + ${plan.memory.count}× ${plan.memory.instance_type}`
    : `${plan.learner.instance_type} alone`;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  return node;
}

// ------------------------------------------------------------------------------- the request

// A number control's value: null when empty (no limit), NaN when it holds no number.
function numberOf(id) {
  const input = $(id);
  if (input.validity.badInput) return Number.NaN;
  return input.value.trim() === "" ? null : Number(input.value);
}

// "2× g5.12xlarge (A10G, 8 train)": the learner machines and the GPUs that train on them.
function learnerText(plan) {
  const machines = plan.learner.count > 1 ? `${plan.learner.count}× ` : "";
  const ranks = plan.learner_ranks && plan.learner_ranks > 1 ? `, ${plan.learner_ranks} train` : "";
  return `${machines}${plan.learner.instance_type} (${plan.learner.gpu}${ranks})`;
}

function checkedFamilies(id) {
  const names = [...$(id).querySelectorAll("input[type=checkbox]:checked")].map((box) => box.value);
  return names.length ? names : null;
}

// The request body, or the local errors (controls that hold no number) that keep it from being sent.
function buildRequest() {
  const errors = {};
  const read = (id) => {
    const value = numberOf(id);
    if (Number.isNaN(value)) errors[id] = "Type a number (or leave it empty for no limit).";
    return value;
  };
  const budget = read("budget");
  const deadline = read("deadline");
  const hourly = read("hourly-cap");
  const maxMemory = read("max-memory");
  const epochs = read("epochs");
  if (epochs === null) errors.epochs = "Give the number of epochs to train.";
  const gpus = read("gpus");
  const learnerMachines = read("learner-machines");
  if (learnerMachines === null) errors["learner-machines"] = "Give the number of learner machines (1: one).";
  // "auto", a size in GiB, or empty for none: the API checks it and names the field when it is wrong.
  const gpuCache = $("gpu-cache").value.trim() || "0";
  const body = {
    workload: {
      epochs,
      gpus,
      gpu_cache_gib: gpuCache,
      learner_machines: learnerMachines,
      sampling: $("sampling").value,
      shard_layout: $("shard-layout").value,
    },
    constraints: { budget_usd: budget, deadline_hours: deadline, max_hourly_usd: hourly },
    filters: {
      max_memory_gib: maxMemory,
      gpu_families: checkedFamilies("gpu-families"),
      memory_families: checkedFamilies("memory-families"),
    },
    spot: $("spot").checked,
    ena_express: $("ena-express").checked,
    top: TOP,
  };
  if ($("dataset").value === UPLOADED) body.profile = state.profile;
  else body.dataset = $("dataset").value;
  return { body, errors };
}

// -------------------------------------------------------------------------------- field errors

function clearErrors() {
  for (const node of document.querySelectorAll(".error")) node.textContent = "";
  for (const node of document.querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
  $("request-error").hidden = true;
  $("request-error").textContent = "";
}

function showFieldError(controlId, message) {
  const box = $(`${controlId}-error`);
  box.textContent = box.textContent ? `${box.textContent} ${message}` : message;
  $(controlId).setAttribute("aria-invalid", "true");
  const details = $(controlId).closest("details");
  if (details) details.open = true;
}

function showBanner(message) {
  $("request-error").textContent = message;
  $("request-error").hidden = false;
}

// The control a request field path belongs to: the longest known prefix of the path.
function controlFor(path) {
  const parts = path.split(".");
  for (let n = parts.length; n > 0; n--) {
    const control = FIELD_CONTROLS[parts.slice(0, n).join(".")];
    if (control) return control;
  }
  return null;
}

// A 422's field errors next to their controls; those no control owns go to the banner.
function showValidationErrors(error) {
  const unplaced = [];
  for (const item of error.errors || []) {
    const path = item.loc.filter((part, i) => !(i === 0 && part === "body")).join(".");
    const control = controlFor(path);
    const where = control === "profile-file" && path !== "profile" ? `${path}: ` : "";
    if (control) showFieldError(control, `${where}${item.msg}`);
    else unplaced.push(path ? `${path}: ${item.msg}` : item.msg);
  }
  if (unplaced.length || !(error.errors || []).length) showBanner(unplaced.join("; ") || error.detail);
}

// ---------------------------------------------------------------------------------- the answer

function scheduleUpdate() {
  clearTimeout(state.timer);
  state.timer = setTimeout(update, DEBOUNCE_MS);
}

async function update() {
  clearErrors();
  const { body, errors } = buildRequest();
  if (Object.keys(errors).length) {
    for (const [control, message] of Object.entries(errors)) showFieldError(control, message);
    $("status").textContent = "Fix the marked field to get an answer.";
    return;
  }
  if (state.inFlight) state.inFlight.abort();
  const controller = new AbortController();
  state.inFlight = controller;
  const sequence = ++state.sequence;
  const started = performance.now();
  $("status").textContent = "Pricing…";
  document.body.setAttribute("aria-busy", "true");
  let response;
  let text;
  try {
    response = await fetch(API.recommend, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    text = await response.text();
  } catch (err) {
    if (err.name === "AbortError") return;
    showBanner(`The server did not answer (${err.message}). Is planner serve still running?`);
    $("status").textContent = "No answer.";
    document.body.removeAttribute("aria-busy");
    return;
  }
  if (sequence !== state.sequence) return; // a newer request is under way
  state.inFlight = null;
  document.body.removeAttribute("aria-busy");
  document.body.dataset.answers = String(++state.answers);
  const elapsed = Math.round(performance.now() - started);
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    showBanner(`The server answered ${response.status} with something that is not JSON.`);
    return;
  }
  if (!response.ok) {
    if (response.status === 422) showValidationErrors(data);
    else showBanner(data.detail || `The server answered ${response.status}.`);
    if (data.suggestions && data.suggestions.length) showBanner(`${data.detail} Did you mean ${data.suggestions.join(", ")}?`);
    $("status").textContent = "The request was refused: see the marked field.";
    disableDownload();
    return;
  }
  state.answer = data;
  state.answerText = text;
  render(data);
  $("status").textContent = `Answered in ${elapsed} ms.`;
}

function disableDownload() {
  $("download").disabled = true;
}

function render(rec) {
  renderSnapshot(rec.snapshot);
  renderVerdict(rec);
  state.rows = tableRows(rec);
  state.selected = 0;
  renderTable();
  renderStages();
  renderFrontier(rec);
  $("download").disabled = !(rec.feasible && rec.chosen);
  $("warnings").replaceChildren(...rec.warnings.map((w) => el("li", { text: w })));
}

function renderSnapshot(info) {
  const node = $("snapshot");
  const days = info.age_days === 1 ? "1 day" : `${info.age_days} days`;
  node.textContent = `Prices: ${info.region}, retrieved ${info.retrieved_on} (${days} old).`
    + (info.stale ? " Older than 30 days: prices may have moved; refresh the snapshot with planner pricing refresh." : "");
  node.classList.toggle("stale", info.stale);
}

function renderVerdict(rec) {
  const box = $("verdict");
  box.hidden = false;
  box.classList.toggle("infeasible", !rec.feasible);
  const name = rec.profile.name;
  if (rec.feasible && rec.chosen) {
    const c = rec.chosen;
    box.replaceChildren(
      el("p", { class: "headline", text: `${label(c)}: ${usd(c.total_usd)} for ${rec.request.workload.epochs} epochs of ${name}` }),
      el("p", { text: `${duration(c.total_hours * 3600)} in all, ${duration(c.epoch_seconds)} an epoch at $${c.usd_per_hour.toFixed(3)}/h; bound by ${c.bottleneck}.` }),
    );
    return;
  }
  const parts = [el("p", { class: "headline", text: "No plan fits." }), el("p", { text: rec.reason || "" })];
  if (rec.cheapest_feasible_usd !== null && rec.cheapest_feasible_usd !== undefined) {
    parts.push(el("p", { id: "cheapest", text: `Cheapest plan within the other limits: ${usd(rec.cheapest_feasible_usd)}.` }));
  }
  const advice = (rec.infeasibility && rec.infeasibility.advice) || [];
  const applicable = advice.filter((a) => a.value !== null && FIELD_CONTROLS[a.field]);
  if (applicable.length) {
    const list = el("p", {}, "What would fit: ");
    applicable.forEach((a, i) => {
      if (i) list.append(" or ");
      const value = String(a.value); // already rounded up to what the page shows
      const unit = FIELD_UNITS[a.field] || ((v) => v);
      const button = el("button", { type: "button", class: "link", "data-field": a.field, "data-value": value,
        text: `${(CHANGE_WORDS[a.change] || "Set").toLowerCase()} ${FIELD_WORDS[a.field] || a.field} to ${BOUND_WORDS[a.change] || ""} ${unit(value)}` });
      button.addEventListener("click", () => applyAdvice(a.field, value));
      list.append(button);
    });
    parts.push(list);
  }
  if (rec.infeasibility && rec.infeasibility.binding) {
    const control = controlFor(rec.infeasibility.binding);
    if (control) showFieldError(control, "No plan fits this limit.");
  }
  box.replaceChildren(...parts);
}

function applyAdvice(field, value) {
  const control = FIELD_CONTROLS[field];
  $(control).value = value;
  if (control === "budget") syncSlider();
  $(control).focus();
  scheduleUpdate();
}

// The table's rows: the chosen plan, the runners-up that fit, and the best of each layout.
// When nothing fits, the cheapest plans are shown anyway, dimmed, so the distance is visible.
function tableRows(rec) {
  const rows = [];
  if (rec.chosen) rows.push({ plan: rec.chosen, marks: ["recommended"] });
  const runners = rec.feasible ? rec.alternatives.filter((p) => p.fits) : rec.alternatives;
  for (const plan of runners) if (rows.length < TOP) rows.push({ plan, marks: [] });
  for (const best of [rec.single_machine, rec.two_level]) {
    if (!best) continue;
    const row = rows.find((r) => label(r.plan) === label(best));
    if (row) row.marks.push(LAYOUT_WORDS[best.layout]);
    else rows.push({ plan: best, marks: [LAYOUT_WORDS[best.layout]] });
  }
  return rows;
}

function renderTable() {
  $("plans").tBodies[0].replaceChildren(...state.rows.map((row, i) => planRow(row, i)));
}

function planRow(row, index) {
  const p = row.plan;
  const selected = index === state.selected;
  const pick = el("button", { type: "button", class: "pick", "aria-pressed": String(selected),
    "aria-label": `Show where plan ${index + 1}'s epoch time goes`, text: String(index + 1) });
  pick.addEventListener("click", () => {
    state.selected = index;
    renderTable();
    renderStages();
    renderFrontier(state.answer);
    $("plans").tBodies[0].querySelectorAll("button.pick")[index].focus();
  });
  const learnerCell = el("td", { class: "wrap" }, p.learner ? learnerText(p) : "–");
  for (const mark of row.marks) learnerCell.append(el("span", { class: `badge${mark === "recommended" ? " chosen" : ""}`, text: mark }));
  if (!p.fits) learnerCell.append(el("span", { class: "badge", text: "over the limits" }));
  const memory = p.memory ? `${p.memory.count}× ${p.memory.instance_type}` : "none";
  const volume = `${p.volume.size_gb} GB · ${p.volume.throughput_mbps} MB/s · ${p.volume.iops} IOPS`;
  const tr = el("tr", { class: [selected ? "selected" : "", p.fits ? "" : "over"].join(" ").trim() },
    el("td", {}, pick), learnerCell, el("td", { text: memory }), el("td", { class: "wrap wide-only", text: volume }),
    el("td", { class: "num wide-only", text: p.usd_per_hour.toFixed(3) }),
    el("td", { class: "num wide-only", text: duration(p.epoch_seconds) }),
    el("td", { class: "num", text: duration(p.total_hours * 3600) }), el("td", { class: "num", text: usd(p.total_usd) }),
    el("td", { text: p.bottleneck }));
  return tr;
}

function renderStages() {
  const row = state.rows[state.selected];
  if (!row) {
    $("stages").replaceChildren();
    $("stages-plan").textContent = "";
    $("explanation").textContent = "";
    return;
  }
  const p = row.plan;
  const entries = Object.entries(p.stages);
  const longest = Math.max(...entries.map(([, s]) => s), 1e-9);
  $("stages-plan").textContent = `Plan ${state.selected + 1}, ${label(p)}: ${p.full_graph ? "seconds per round; the stages add up" : "seconds per epoch; the stages overlap, so the slowest sets the pace"}.`;
  const cells = [];
  for (const [name, seconds] of entries) {
    const hot = name === p.bottleneck ? " bottleneck" : "";
    cells.push(
      el("span", { class: `stage-name${hot}`, text: name }),
      el("div", { class: `stage-bar${hot}`, role: "img", "aria-label": `${name}: ${duration(seconds)}`,
        style: `width: ${(100 * seconds) / longest}%` }),
      el("span", { class: "stage-value", text: duration(seconds) }),
    );
  }
  $("stages").replaceChildren(...cells);
  $("explanation").textContent = `Bottleneck: ${p.bottleneck}. ${p.explanation}.`;
}

// Round, readable tick values covering [lo, hi].
function ticks(lo, hi, count = 5) {
  const span = hi - lo || Math.abs(hi) || 1;
  const raw = span / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function renderFrontier(rec) {
  const box = $("frontier");
  const row = state.rows[state.selected];
  const points = rec.frontier.map((f) => ({ x: f.total_hours, y: f.total_usd, label: f.label }));
  const chosen = row ? { x: row.plan.total_hours, y: row.plan.total_usd, label: label(row.plan) } : null;
  const all = chosen ? [...points, chosen] : points;
  if (!all.length) {
    box.replaceChildren(el("p", { class: "muted", text: "No plan to draw." }));
    return;
  }
  const budget = rec.request.constraints.budget_usd;
  const deadline = rec.request.constraints.deadline_hours;
  const xs = all.map((p) => p.x);
  const ys = all.map((p) => p.y);
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (budget && budget < y1 * 1.5) y1 = Math.max(y1, budget);
  if (deadline && deadline < x1 * 1.5) x1 = Math.max(x1, deadline);
  const padX = (x1 - x0 || x1 || 1) * 0.08;
  const padY = (y1 - y0 || y1 || 1) * 0.08;
  [x0, x1, y0, y1] = [Math.max(0, x0 - padX), x1 + padX, Math.max(0, y0 - padY), y1 + padY];
  const W = 420;
  const H = 260;
  const M = { left: 56, right: 12, top: 12, bottom: 40 };
  const sx = (x) => M.left + ((x - x0) / (x1 - x0)) * (W - M.left - M.right);
  const sy = (y) => H - M.bottom - ((y - y0) / (y1 - y0)) * (H - M.top - M.bottom);
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `Cost against total time for ${points.length} plans on the frontier` + (chosen ? `; plan ${state.selected + 1} costs ${usd(chosen.y)} over ${duration(chosen.x * 3600)}` : "") });
  for (const t of ticks(x0, x1)) {
    chart.append(svg("line", { class: "grid", x1: sx(t), x2: sx(t), y1: M.top, y2: H - M.bottom }));
    chart.append(svg("text", { x: sx(t), y: H - M.bottom + 14, "text-anchor": "middle" }, duration(t * 3600)));
  }
  for (const t of ticks(y0, y1, 6)) {
    chart.append(svg("line", { class: "grid", x1: M.left, x2: W - M.right, y1: sy(t), y2: sy(t) }));
    chart.append(svg("text", { x: M.left - 6, y: sy(t) + 4, "text-anchor": "end" }, usd(t)));
  }
  chart.append(svg("line", { class: "axis", x1: M.left, x2: W - M.right, y1: H - M.bottom, y2: H - M.bottom }));
  chart.append(svg("line", { class: "axis", x1: M.left, x2: M.left, y1: M.top, y2: H - M.bottom }));
  chart.append(svg("text", { x: (M.left + W - M.right) / 2, y: H - 6, "text-anchor": "middle" }, "total time"));
  chart.append(svg("text", { x: 12, y: (M.top + H - M.bottom) / 2, "text-anchor": "middle",
    transform: `rotate(-90 12 ${(M.top + H - M.bottom) / 2})` }, "cost"));
  if (budget && budget <= y1) {
    chart.append(svg("line", { class: "limit", x1: M.left, x2: W - M.right, y1: sy(budget), y2: sy(budget) }));
    chart.append(svg("text", { x: W - M.right, y: sy(budget) - 4, "text-anchor": "end" }, `budget ${usd(budget)}`));
  }
  if (deadline && deadline <= x1) {
    chart.append(svg("line", { class: "limit", x1: sx(deadline), x2: sx(deadline), y1: M.top, y2: H - M.bottom }));
    chart.append(svg("text", { x: sx(deadline) - 4, y: M.top + 10, "text-anchor": "end" }, "deadline"));
  }
  const sorted = [...points].sort((a, b) => a.x - b.x);
  if (sorted.length > 1) {
    chart.append(svg("polyline", { class: "frontier", points: sorted.map((p) => `${sx(p.x)},${sy(p.y)}`).join(" ") }));
  }
  for (const p of points) {
    const dot = svg("circle", { class: "point", cx: sx(p.x), cy: sy(p.y), r: 4 });
    dot.append(svg("title", {}, `${p.label}: ${usd(p.y)}, ${duration(p.x * 3600)}`));
    chart.append(dot);
  }
  if (chosen) {
    const mark = svg("circle", { class: "point chosen", cx: sx(chosen.x), cy: sy(chosen.y), r: 7, "data-plan": chosen.label });
    mark.append(svg("title", {}, `plan ${state.selected + 1}, ${chosen.label}: ${usd(chosen.y)}, ${duration(chosen.x * 3600)}`));
    chart.append(mark);
  }
  box.replaceChildren(chart);
}

// --------------------------------------------------------------------------------- the controls

function sliderToBudget(position) {
  const { min, max, steps } = BUDGET_SLIDER;
  const value = min * (max / min) ** (position / steps);
  return value < 10 ? Math.round(value * 100) / 100 : Math.round(value);
}

function syncSlider() {
  const value = numberOf("budget");
  if (value === null || Number.isNaN(value) || value <= 0) return;
  const { min, max, steps } = BUDGET_SLIDER;
  const clamped = Math.min(Math.max(value, min), max);
  $("budget-slider").value = String(Math.round((steps * Math.log(clamped / min)) / Math.log(max / min)));
}

function familyBoxes(containerId, families) {
  const box = $(containerId);
  const summary = $(`${containerId}-summary`);
  const refresh = () => {
    const chosen = checkedFamilies(containerId);
    summary.textContent = chosen ? chosen.join(", ") : "all";
  };
  const clear = el("button", { type: "button", class: "link", text: "Clear (use all)" });
  clear.addEventListener("click", () => {
    for (const input of box.querySelectorAll("input[type=checkbox]")) input.checked = false;
    refresh();
    scheduleUpdate();
  });
  const items = families.map((f) => {
    const input = el("input", { type: "checkbox", value: f.name, name: containerId });
    input.addEventListener("change", () => {
      refresh();
      scheduleUpdate();
    });
    return el("label", { title: `${f.types} priced types, ${f.arch}, up to ${f.max_memory_gib} GiB` }, input, f.name);
  });
  box.replaceChildren(el("div", { class: "family-actions" }, clear), ...items);
  refresh();
}

async function readProfile(file) {
  const target = "profile-file";
  clearErrors();
  let profile;
  try {
    profile = JSON.parse(await file.text());
  } catch (err) {
    showFieldError(target, `${file.name} is not JSON (${err.message}). Choose the file remotegnn profile wrote.`);
    return;
  }
  if (typeof profile !== "object" || profile === null || Array.isArray(profile)) {
    showFieldError(target, `${file.name} holds no profile object. Choose the file remotegnn profile wrote.`);
    return;
  }
  state.profile = profile;
  const menu = $("dataset");
  let option = menu.querySelector(`option[value="${UPLOADED}"]`);
  if (!option) {
    option = el("option", { value: UPLOADED });
    menu.prepend(option);
  }
  option.textContent = `Uploaded: ${typeof profile.name === "string" ? profile.name : file.name}`;
  menu.value = UPLOADED;
  update();
}

async function getJSON(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return response.json();
}

async function start() {
  try {
    const [health, datasets, families] = await Promise.all([getJSON(API.health), getJSON(API.datasets), getJSON(API.families)]);
    renderSnapshot(health.snapshot);
    $("dataset").replaceChildren(...datasets.map((d) => el("option", { value: d.name, text: `${d.name} (${(d.num_nodes / 1e6).toLocaleString("en-US", { maximumFractionDigits: 1 })}M nodes)` })));
    if (datasets.some((d) => d.name === DEFAULT_DATASET)) $("dataset").value = DEFAULT_DATASET;
    familyBoxes("gpu-families", families.filter((f) => f.gpu));
    familyBoxes("memory-families", families.filter((f) => !f.gpu));
  } catch (err) {
    showBanner(`The page could not load its choices: ${err.message}.`);
    return;
  }
  syncSlider();
  for (const id of ["budget", "epochs", "gpus", "gpu-cache", "learner-machines", "deadline", "hourly-cap", "max-memory"]) {
    $(id).addEventListener("input", scheduleUpdate);
  }
  $("budget").addEventListener("input", syncSlider);
  $("budget-slider").addEventListener("input", () => {
    $("budget").value = String(sliderToBudget(Number($("budget-slider").value)));
    scheduleUpdate();
  });
  $("spot").addEventListener("change", scheduleUpdate);
  $("sampling").addEventListener("change", scheduleUpdate);
  $("shard-layout").addEventListener("change", scheduleUpdate);
  $("ena-express").addEventListener("change", scheduleUpdate);
  $("dataset").addEventListener("change", () => {
    if ($("dataset").value !== UPLOADED) $("profile-file").value = "";
    update();
  });
  $("profile-file").addEventListener("change", () => {
    const file = $("profile-file").files[0];
    if (file) readProfile(file);
  });
  $("controls").addEventListener("submit", (event) => {
    event.preventDefault();
    update();
  });
  $("download").addEventListener("click", () => {
    if (!state.answerText) return;
    const link = el("a", { href: URL.createObjectURL(new Blob([state.answerText], { type: "application/json" })),
      download: `plan-${state.answer.plan_id}.json` });
    document.body.append(link);
    link.click();
    link.remove();
    URL.revokeObjectURL(link.href);
  });
  await update();
}

document.addEventListener("DOMContentLoaded", start);
