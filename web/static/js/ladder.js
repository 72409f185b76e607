// Ladder: on a ladder rung's page, whether the ranking transferred between
// sizes (ResultsService.LadderTransfer over GET /api/v1/experiments/{id}/
// ladder): per pair of consecutive rungs, a scatter of every carried
// schedule's mean paired delta at the smaller size (x) against the larger
// (y), the baseline at 0,0, with Spearman and Kendall and their 95%
// bootstrap intervals in the caption. Points carry their numbers in data-
// attributes, so the browser test checks them against the RPC's.

import { api } from './api.js';
import { h, svg } from './dom.js';
import { signed } from './format.js';
import { empty, section } from './ui.js';

const kSize = 360;
const kMargin = { left: 64, right: 16, top: 14, bottom: 44 };

function range(values) {
  let low = Math.min(...values);
  let high = Math.max(...values);
  const pad = (high - low) * 0.08 || 0.01;
  return [low - pad, high + pad];
}

function scatter(pair) {
  const points = pair.points || [];
  const xs = points.map((p) => Number(p.smallDelta || 0));
  const ys = points.map((p) => Number(p.largeDelta || 0));
  const [x0, x1] = range(xs.concat([0]));
  const [y0, y1] = range(ys.concat([0]));
  const inner = kSize - kMargin.left - kMargin.right;
  const innerH = kSize - kMargin.top - kMargin.bottom;
  const xOf = (v) => kMargin.left + inner * (v - x0) / (x1 - x0);
  const yOf = (v) => kMargin.top + innerH * (1 - (v - y0) / (y1 - y0));
  const dots = points.map((p, i) => svg('circle', {
    class: `ladder-point role-${p.role}`, cx: xOf(xs[i]).toFixed(1), cy: yOf(ys[i]).toFixed(1), r: 4,
    fill: p.role === 'baseline' ? '#94a3b8' : (p.role === 'best-set' ? '#16a34a' : '#4f46e5'),
    dataset: { schedule: p.smallSchedule, large: p.largeSchedule, role: p.role,
               x: String(xs[i]), y: String(ys[i]) },
  }, svg('title', {}, `${p.smallSchedule} \u2192 ${p.largeSchedule} (${p.role}): `
                      + `${signed(xs[i])} / ${signed(ys[i])}`)));
  return svg('svg', { class: 'ladder-scatter', viewBox: `0 0 ${kSize} ${kSize}`, width: kSize, height: kSize,
                      role: 'img', 'aria-label': `paired delta at ${pair.smallSize} vs at ${pair.largeSize}` },
    // The zero lines: the baseline's delta at each size.
    svg('g', { class: 'axes', stroke: '#94a3b8', 'stroke-dasharray': '4 3' },
      svg('line', { x1: kMargin.left, x2: kSize - kMargin.right, y1: yOf(0), y2: yOf(0) }),
      svg('line', { x1: xOf(0), x2: xOf(0), y1: kMargin.top, y2: kSize - kMargin.bottom })),
    svg('text', { class: 'x-label', x: kMargin.left + inner / 2, y: kSize - 12, 'text-anchor': 'middle' },
        `\u0394 at ${pair.smallSize}`),
    svg('text', { class: 'y-label', x: 14, y: kMargin.top + innerH / 2, 'text-anchor': 'middle',
                  transform: `rotate(-90 14 ${kMargin.top + innerH / 2})` }, `\u0394 at ${pair.largeSize}`),
    ...dots);
}

function correlation(name, e) {
  const v = e || {};
  return `${name} ${signed(Number(v.estimate || 0), 2)} [${signed(Number(v.low || 0), 2)}, `
         + `${signed(Number(v.high || 0), 2)}]`;
}

function pairFigure(pair) {
  const title = `rung ${Number(pair.smallRung || 0) + 1} \u2192 ${Number(pair.smallRung || 0) + 2}: `
                + `${pair.smallSize} \u2192 ${pair.largeSize}`;
  if (pair.note) {
    return h('figure', { class: 'ladder-pair' }, h('figcaption', {}, `${title}: ${pair.note}`));
  }
  const holds = pair.bestSetHoldsLargeBest === undefined ? ''
    : (pair.bestSetHoldsLargeBest ? '; the small best-set holds the large best' : '; the small best-set misses the large best');
  return h('figure', { class: 'ladder-pair', dataset: { small: String(pair.smallExperimentId) } },
           scatter(pair),
           h('figcaption', { class: 'ladder-caption' },
             `${title}; n ${pair.schedules || 0}; `,
             h('span', { class: 'spearman' }, correlation('Spearman', pair.spearman)), '; ',
             h('span', { class: 'kendall' }, correlation('Kendall', pair.kendall)),
             ` (95% bootstrap over seeds)${holds}`));
}

// ladderCard resolves to the card for a ladder rung's experiment, null for
// any other experiment.
export async function ladderCard(experiment) {
  if (!experiment.ladderId || String(experiment.ladderId) === '0') return null;
  const response = await api.ladder(experiment.id);
  const pairs = response.pairs || [];
  const card = section('Transfer across the ladder',
                       pairs.length ? h('div', { class: 'ladder-pairs' }, ...pairs.map(pairFigure))
                         : empty('One rung so far.', 'The transfer is measured once the next rung is done.'));
  card.id = 'ladder';
  return card;
}
