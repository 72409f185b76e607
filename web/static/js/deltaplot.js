// The curve that shows a difference: a schedule's val loss minus the
// uniform baseline's, paired (same seed, same step), per seed and as the
// mean across seeds with its t-based 95% interval, drawn as an SVG (so it
// downloads as SVG or PNG). Raw losses fall from ~5 to ~2.6 while the
// differences that matter are 0.001-0.005: plotted raw they overlap.
// Points carry their numbers in data- attributes for the browser test.

import { svg } from './dom.js';
import { num, signed } from './format.js';
import { meanInterval } from './stats.js';

const kWidth = 760;
const kHeight = 340;
const kMargin = { left: 72, right: 16, top: 14, bottom: 42 };

function valByStep(points) {
  const out = new Map();
  for (const p of points || []) {
    if (p.split === 'SPLIT_VAL') out.set(num(p.step), num(p.loss));
  }
  return out;
}

// pairedDeltas turns GetTrial answers (with_baseline) of one schedule's
// trials into { seeds: [{ seed, trialId, steps, deltas }], steps:
// [{ step, n, mean, low, high }] }: each seed's val loss minus its
// baseline's at every step both reported, then per step the mean across the
// seeds that have it.
export function pairedDeltas(responses) {
  const seeds = [];
  for (const r of responses) {
    const trial = r.trial || {};
    if (!r.baseline || r.baseline.id === trial.id) continue;
    const mine = valByStep(r.points);
    const theirs = valByStep(r.baselinePoints);
    const steps = [...mine.keys()].filter((s) => theirs.has(s)).sort((a, b) => a - b);
    if (!steps.length) continue;
    seeds.push({ seed: num(trial.seed), trialId: trial.id, steps,
                 deltas: steps.map((s) => mine.get(s) - theirs.get(s)) });
  }
  const all = [...new Set(seeds.flatMap((s) => s.steps))].sort((a, b) => a - b);
  const steps = all.map((step) => {
    const values = seeds.map((s) => s.deltas[s.steps.indexOf(step)]).filter((v) => v !== undefined);
    return { step, ...meanInterval(values) };
  });
  return { seeds, steps };
}

function extent(values) {
  const finite = values.filter(Number.isFinite);
  let low = Math.min(0, ...finite);
  let high = Math.max(0, ...finite);
  const pad = (high - low) * 0.08 || 0.001;
  low -= pad;
  high += pad;
  return [low, high];
}

function ticks(low, high, count) {
  const raw = (high - low) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(low / step) * step; v <= high + step * 1e-9; v += step) out.push(v);
  return out;
}

function linePath(xs, ys, xOf, yOf) {
  return xs.map((x, i) => `${i ? 'L' : 'M'}${xOf(x).toFixed(1)},${yOf(ys[i]).toFixed(1)}`).join('');
}

// deltaPlot draws pairedDeltas' result; null when no seed has a paired step.
export function deltaPlot({ seeds, steps }) {
  if (!steps.length) return null;
  const xs = steps.map((s) => s.step);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs) > Math.min(...xs) ? Math.max(...xs) : Math.min(...xs) + 1];
  const [y0, y1] = extent([...seeds.flatMap((s) => s.deltas), ...steps.flatMap((s) => [s.low, s.high])]);
  const innerW = kWidth - kMargin.left - kMargin.right;
  const innerH = kHeight - kMargin.top - kMargin.bottom;
  const xOf = (v) => kMargin.left + innerW * (v - x0) / (x1 - x0);
  const yOf = (v) => kMargin.top + innerH * (1 - (v - y0) / (y1 - y0));
  const banded = steps.filter((s) => s.n >= 2);
  const band = banded.length >= 2
    ? `${linePath(banded.map((s) => s.step), banded.map((s) => s.high), xOf, yOf)}`
      + `${banded.slice().reverse().map((s) => `L${xOf(s.step).toFixed(1)},${yOf(s.low).toFixed(1)}`).join('')}Z`
    : '';
  const text = (x, y, anchor, value, extra = {}) => svg('text', { x, y, 'text-anchor': anchor, ...extra }, value);
  return svg('svg', { class: 'delta-plot', viewBox: `0 0 ${kWidth} ${kHeight}`, width: kWidth, height: kHeight,
                      role: 'img', 'aria-label': 'paired delta of val loss against the baseline over steps' },
    svg('rect', { x: 0, y: 0, width: kWidth, height: kHeight, fill: '#ffffff' }),
    svg('g', { class: 'axes', 'font-size': 12, fill: '#475569' },
      ticks(y0, y1, 5).map((v) => svg('g', { class: 'tick' },
        svg('line', { x1: kMargin.left, x2: kWidth - kMargin.right, y1: yOf(v), y2: yOf(v), stroke: '#e2e8f0' }),
        text(kMargin.left - 6, yOf(v) + 4, 'end', signed(v, 4)))),
      ticks(x0, x1, 6).filter((v) => Number.isInteger(v)).map((v) => text(xOf(v), kHeight - kMargin.bottom + 16, 'middle', String(v))),
      text(kMargin.left + innerW / 2, kHeight - 6, 'middle', 'step'),
      text(14, kMargin.top + innerH / 2, 'middle', '\u0394 val loss vs baseline',
           { transform: `rotate(-90 14 ${kMargin.top + innerH / 2})` })),
    svg('line', { class: 'zero-line', x1: kMargin.left, x2: kWidth - kMargin.right, y1: yOf(0), y2: yOf(0),
                  stroke: '#9a3412', 'stroke-dasharray': '6 4' }),
    band ? svg('path', { class: 'delta-band', d: band, fill: '#a5b4fc', 'fill-opacity': 0.45, stroke: 'none' }) : null,
    seeds.map((s) => svg('path', { class: 'delta-seed', d: linePath(s.steps, s.deltas, xOf, yOf), fill: 'none',
                                   stroke: '#94a3b8', 'stroke-width': 1, dataset: { seed: String(s.seed) } })),
    svg('path', { class: 'delta-mean-line', d: linePath(xs, steps.map((s) => s.mean), xOf, yOf), fill: 'none',
                  stroke: '#4f46e5', 'stroke-width': 2.2 }),
    steps.map((s) => svg('circle', {
      class: 'delta-mean', cx: xOf(s.step).toFixed(1), cy: yOf(s.mean).toFixed(1), r: 3, fill: '#4f46e5',
      dataset: { step: String(s.step), n: String(s.n), mean: String(s.mean), low: String(s.low), high: String(s.high) },
    }, svg('title', {}, `step ${s.step}: ${signed(s.mean, 5)}`
                        + (s.n >= 2 ? ` [${signed(s.low, 5)}, ${signed(s.high, 5)}]` : '') + ` over ${s.n} seed${s.n === 1 ? '' : 's'}`))));
}
