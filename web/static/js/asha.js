// ASHA rungs: for a STRATEGY_ASHA experiment (RankResponse's ashaRungs), one
// card with
//   * a line per rung: its step, how it was scored, how many reached it of
//     its members, its quota and how many went on;
//   * one SVG plot of every schedule's score across the rungs (x: the rung
//     steps, y: the mean paired delta vs the baseline, or the raw val loss
//     while the baseline has not reached the rungs), the schedules that went
//     on past the last rung they reached drawn in the accent colour over the
//     others, each point filled where the schedule was promoted, and each
//     rung's promotion cut-off (between its quota-th and next best score)
//     as a dashed line;
//   * a table of the schedules, furthest and best first: by default the
//     ones promoted past a rung (at most kTop; the kTop best while none is),
//     "Show all" for every schedule that reached a rung.
// Trials stopped at a rung are not in the leaderboard; this is where they
// show. The plot is plain SVG (no canvas): one <g class="rung-series"> per
// schedule, its <title> the schedule's scores for a hover.

import { h, svg } from './dom.js';
import { fixed, integer, signed } from './format.js';
import { badge, table } from './ui.js';

const kTop = 10;
// Experiments (by key) whose table shows every schedule: kept across the
// live page's redraws.
const expanded = new Set();

// The plot's geometry in viewBox units; it scales to the card's width.
const kWidth = 960;
const kHeight = 300;
const kMargin = { left: 96, right: 96, top: 14, bottom: 38 };

function scoreText(paired, score) {
  return paired ? signed(score) : fixed(score);
}

// schedulesAcross gathers each schedule's entries by rung: [{ schedule,
// cells: [entry or null per rung], last (index of the furthest rung
// reached), order (its place there, best first), wentOn }], furthest and
// best first.
function schedulesAcross(rungs) {
  const bySchedule = new Map();
  rungs.forEach((rung, r) => {
    (rung.schedules || []).forEach((entry, order) => {
      let row = bySchedule.get(entry.schedule);
      if (!row) {
        row = { schedule: entry.schedule, cells: rungs.map(() => null), last: -1, order: 0 };
        bySchedule.set(entry.schedule, row);
      }
      row.cells[r] = entry;
      if (r > row.last) {
        row.last = r;
        row.order = order;
      }
    });
  });
  const rows = [...bySchedule.values()];
  for (const row of rows) {
    row.wentOn = Boolean(row.cells[row.last]?.promoted);
    row.promotedAnywhere = row.cells.some((c) => c?.promoted);
  }
  rows.sort((a, b) => (b.last - a.last) || (Number(b.wentOn) - Number(a.wentOn)) || (a.order - b.order));
  return rows;
}

// niceTicks: about `count` round values spanning [low, high], and the
// decimals that tell them apart.
function niceTicks(low, high, count = 5) {
  const span = high - low || Math.abs(high) || 1;
  const raw = span / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const mantissa = [1, 2, 2.5, 5, 10].find((m) => m * magnitude >= raw) || 10;
  const step = mantissa * magnitude;
  const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9) + (mantissa === 2.5 ? 1 : 0));
  const ticks = [];
  for (let v = Math.ceil(low / step) * step; v <= high + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return { ticks, digits };
}

// cutOff is the score between the rung's quota-th best and the next one
// (schedules are listed lowest score first), or null when every schedule
// that reached it fits the quota.
function cutOff(rung) {
  const entries = rung.schedules || [];
  const quota = Number(rung.promoteQuota || 0);
  if (quota <= 0 || quota >= entries.length) return null;
  return (Number(entries[quota - 1].score) + Number(entries[quota].score)) / 2;
}

function rungPlot(rungs, rows) {
  // One y axis: when the baseline has reached some rungs but not others, the
  // plot keeps the paired ones (the table still lists every score).
  const anyPaired = rungs.some((r) => r.paired);
  const plotted = rungs.map((r, i) => i).filter((i) => Boolean(rungs[i].paired) === anyPaired);
  const left = rungs.length - plotted.length;
  const scores = [];
  for (const i of plotted) for (const e of rungs[i].schedules || []) scores.push(Number(e.score));
  if (anyPaired) scores.push(0);
  for (const i of plotted) {
    const c = cutOff(rungs[i]);
    if (c !== null) scores.push(c);
  }
  let low = Math.min(...scores);
  let high = Math.max(...scores);
  const pad = (high - low) * 0.08 || Math.abs(high) * 0.05 || 0.01;
  low -= pad;
  high += pad;

  const innerW = kWidth - kMargin.left - kMargin.right;
  const innerH = kHeight - kMargin.top - kMargin.bottom;
  const band = innerW / Math.max(1, plotted.length);
  const xOf = (k) => kMargin.left + band * (k + 0.5);
  const yOf = (v) => kMargin.top + innerH * (1 - (v - low) / (high - low));

  const { ticks, digits } = niceTicks(low, high);
  const grid = ticks.map((v) => svg('g', { class: 'tick' },
    svg('line', { x1: kMargin.left, x2: kWidth - kMargin.right, y1: yOf(v), y2: yOf(v) }),
    svg('text', { x: kMargin.left - 8, y: yOf(v), 'text-anchor': 'end', 'dominant-baseline': 'middle' },
        anyPaired ? signed(v, digits) : fixed(v, digits))));
  const xLabels = plotted.map((i, k) => svg('text', {
    class: 'x-label', x: xOf(k), y: kHeight - kMargin.bottom + 18, 'text-anchor': 'middle',
  }, `step ${integer(rungs[i].step)}`));
  const baseline = anyPaired ? svg('g', { class: 'baseline-line' },
    svg('line', { x1: kMargin.left, x2: kWidth - kMargin.right, y1: yOf(0), y2: yOf(0) }),
    svg('text', { x: kMargin.left + 4, y: yOf(0) - 5 }, 'baseline')) : null;
  const quotas = plotted.map((i, k) => {
    const c = cutOff(rungs[i]);
    if (c === null) return null;
    const half = band * 0.38;
    return svg('g', { class: 'quota-line', dataset: { step: String(rungs[i].step) } },
      svg('line', { x1: xOf(k) - half, x2: xOf(k) + half, y1: yOf(c), y2: yOf(c) }),
      svg('text', { x: xOf(k) + half + 4, y: yOf(c), 'dominant-baseline': 'middle' },
          `quota ${integer(rungs[i].promoteQuota)}`));
  });

  // Stopped schedules first, the ones that went on drawn over them.
  const ordered = rows.filter((r) => !r.wentOn).concat(rows.filter((r) => r.wentOn));
  const series = ordered.map((row) => {
    const points = plotted.map((i, k) => (row.cells[i] ? { k, i, entry: row.cells[i] } : null)).filter(Boolean);
    const d = points.map((p, j) => `${j ? 'L' : 'M'}${xOf(p.k).toFixed(1)} ${yOf(Number(p.entry.score)).toFixed(1)}`)
      .join(' ');
    const title = `${row.schedule}: ` + row.cells.map((e, i) => (e
      ? `step ${integer(rungs[i].step)} ${scoreText(rungs[i].paired, e.score)}${e.promoted ? ' (promoted)' : ''}`
      : null)).filter(Boolean).join(', ');
    return svg('g', { class: `rung-series${row.wentOn ? ' promoted' : ''}`, dataset: { schedule: row.schedule } },
      svg('title', {}, title),
      svg('path', { d: d || 'M0 0' }),
      points.map((p) => svg('circle', {
        cx: xOf(p.k).toFixed(1), cy: yOf(Number(p.entry.score)).toFixed(1), r: row.wentOn ? 4 : 3,
        class: p.entry.promoted ? 'went-on' : 'stopped', dataset: { step: String(rungs[p.i].step) },
      })));
  });

  const yLabel = anyPaired ? '\u0394 val loss vs baseline' : 'val loss';
  const plot = svg('svg', {
    id: 'asha-plot', class: 'rung-plot', viewBox: `0 0 ${kWidth} ${kHeight}`, role: 'img',
    'aria-label': `${yLabel} of ${rows.length} schedules at ${plotted.length} rungs`,
  },
  svg('g', { class: 'grid' }, grid),
  svg('text', { class: 'y-label', transform: `translate(14 ${kMargin.top + innerH / 2}) rotate(-90)`,
                'text-anchor': 'middle' }, `${yLabel} (lower is better)`),
  xLabels, baseline, svg('g', { class: 'series' }, series), quotas);
  return h('figure', { class: 'rung-figure' }, plot,
    h('figcaption', { class: 'rung-legend muted' },
      h('span', { class: 'key key-promoted' }), ' went on past the last rung it reached  ',
      h('span', { class: 'key key-stopped' }), ' stopped  ',
      h('span', { class: 'key key-quota' }), ' promotion cut-off (quota)',
      left ? `  \u2014 ${left} rung${left === 1 ? '' : 's'} scored by raw val loss (the baseline had not `
             + 'reached it) only in the table' : ''));
}

function rungSummary(rungs) {
  return table({
    id: 'asha-rung-summary',
    columns: [
      { label: 'Rung', render: (r) => `step ${integer(r.step)}` },
      { label: 'Scored by', render: (r) => (r.paired ? 'paired \u0394 vs baseline' : 'raw val loss') },
      { label: 'Reached', class: 'num', render: (r) => `${integer((r.schedules || []).length)} of ${integer(r.members || 0)}` },
      { label: 'Quota', class: 'num', render: (r) => integer(r.promoteQuota || 0) },
      { label: 'Promoted', class: 'num', render: (r) => integer(r.promoted || 0) },
      { label: '', render: (r) => (r.complete ? badge('complete', 'state state-completed') : badge('open', 'state state-running')) },
    ],
    rows: rungs,
    rowAttrs: (r) => ({ class: 'asha-rung', dataset: { step: String(r.step) } }),
  });
}

function outcome(row, rungs) {
  const step = integer(rungs[row.last].step);
  if (!row.wentOn) return badge(`stopped at ${step}`, 'muted');
  return row.last === rungs.length - 1 ? badge('full budget', 'state state-completed')
                                       : badge(`promoted past ${step}`, 'state state-running');
}

function scheduleTable(rungs, rows, showAll) {
  return table({
    id: 'asha-table',
    columns: [
      { label: '#', class: 'num rank', render: (row, i) => integer(i + 1) },
      { label: 'Schedule', render: (row) => h('code', { class: 'schedule' }, row.schedule) },
      ...rungs.map((rung, r) => ({
        label: `Step ${integer(rung.step)}`, class: 'num',
        title: rung.paired ? 'mean paired \u0394 vs the baseline at this step' : 'mean raw val loss at this step',
        render: (row) => {
          const e = row.cells[r];
          if (!e) return '';
          return h('span', { class: `rung-score${e.promoted ? ' went-on' : ''}`, dataset: { step: String(rung.step) },
                             title: `${integer(e.seeds)} seed${Number(e.seeds) === 1 ? '' : 's'}`
                                    + (e.promoted ? '; promoted' : '; not promoted') },
                   scoreText(rung.paired, e.score), e.promoted ? ' \u2191' : '');
        },
      })),
      { label: 'Outcome', render: (row) => outcome(row, rungs) },
    ],
    rows: showAll ? rows : rows.slice(0, topCount(rows)),
    rowAttrs: (row) => ({ class: row.wentOn ? 'promoted' : '', dataset: { schedule: row.schedule } }),
  });
}

// topCount: the schedules promoted past some rung (at most kTop), else the
// kTop best.
function topCount(rows) {
  const promoted = rows.filter((r) => r.promotedAnywhere).length;
  return Math.min(kTop, promoted || rows.length);
}

// ashaCard returns the card, or null for an experiment without rungs. `key`
// names the experiment (the "Show all" choice survives live redraws).
// stagedNote says so when the search screened on fewer seeds than it
// finishes on (the resolved spec's asha.screenSeeds); null otherwise.
function stagedNote(spec) {
  const screen = spec?.asha?.screenSeeds || 0;
  const seeds = (spec?.seeds || []).length;
  if (!screen || screen >= seeds) return null;
  return h('p', { class: 'muted', id: 'asha-staged' },
    `Screened on ${integer(screen)} of ${integer(seeds)} seeds at the first rung; `
    + 'the other seeds start when a schedule goes on from it.');
}

// `spec` (the experiment's resolved spec, optional) adds a line when the
// search screened on fewer seeds than it finishes on (asha.screenSeeds).
export function ashaCard(rungs, { key = '', spec = null } = {}) {
  if (!rungs || !rungs.length) return null;
  const rows = schedulesAcross(rungs);
  const top = topCount(rows);
  const holder = h('div', { class: 'asha-schedules' });
  const draw = () => {
    const showAll = expanded.has(key);
    const toggle = rows.length > top ? h('button', {
      type: 'button', id: 'asha-show-all', class: 'toggle-button', 'aria-expanded': String(showAll),
      onclick: () => {
        if (expanded.has(key)) expanded.delete(key); else expanded.add(key);
        draw();
      },
    }, showAll ? `Show the top ${integer(top)}` : `Show all ${integer(rows.length)} schedules`) : null;
    holder.replaceChildren(
      h('div', { class: 'card-head' },
        h('h3', {}, showAll || rows.length <= top ? `All ${integer(rows.length)} schedules, furthest rung first`
                            : `Top ${integer(top)} of ${integer(rows.length)}, furthest rung first`),
        toggle),
      scheduleTable(rungs, rows, showAll));
  };
  draw();
  const card = h('section', { class: 'card', id: 'asha-rungs' },
    h('div', { class: 'card-head' }, h('h2', {}, 'ASHA rungs'),
      h('span', { class: 'muted' }, `${integer(rows.length)} schedule${rows.length === 1 ? '' : 's'} reached a rung`)),
    stagedNote(spec), rungSummary(rungs), rungPlot(rungs, rows), holder);
  return card;
}
