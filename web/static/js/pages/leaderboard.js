// Experiment leaderboard: ranked schedules one server-side page at a time
// (sorted and filtered by the coordinator, never all loaded), each drawn as
// its head-count staircase with principle badges, val loss and the paired
// delta vs the uniform baseline with their 95% intervals; plus the principle
// effects (the regression's effect of violating each with its interval, or
// why it is not estimable) and their chart; and the schedules a surrogate
// suggests training next (suggestions.js); for an ASHA experiment, its rungs
// (asha.js). For its owner and admins, the actions (actions.js); for anyone,
// a two-schedule comparison, the leaderboard as CSV and the effects chart as
// PNG. Live over the experiment's event stream.

import { actionsPanel, canAct, extendAfterAsking, extendNote } from '../actions.js';
import { api } from '../api.js';
import { ashaCard } from '../asha.js';
import { barChart, kColors } from '../charts.js';
import { h, replace } from '../dom.js';
import { plotDownloads, saveCsv } from '../download.js';
import {
  compact, deltaClass, experimentState, fixed, integer, interval, kDash, loss, num, percent, principleName, ratio,
  signed, verdictWord,
} from '../format.js';
import { layerHeads, staircase } from '../staircase.js';
import { isLive } from '../live.js';
import { ladderCard } from '../ladder.js';
import { suggestionsCard } from '../suggestions.js';
import {
  badge, empty, keyValues, pageQuery, pageState, pager, progressBar, section, stateBadge, table,
} from '../ui.js';

const kPageSize = 50;
const kCsvPageSize = 1000;
const kPrinciples = ['smooth', 'baseline', 'pow2'];
const kPrincipleTitles = {
  smooth: 'staircase smoothness: every non-baseline run spans min_run..max_run layers',
  baseline: 'baseline preservation: at least half the layers use the baseline head count',
  pow2: 'power-of-two head dimensions in every layer',
};
// The sort's natural direction (RankSort): losses ascend, speed-ups descend.
const kNaturallyDescending = new Set(['speedup', 'throughput']);

// How a schedule's tokens/s were paired with the baseline's (ThroughputPairing).
const kPairingWords = {
  THROUGHPUT_PAIRING_WORKER: 'worker',
  THROUGHPUT_PAIRING_DEVICE: 'device',
  THROUGHPUT_PAIRING_UNPAIRED: 'unpaired',
};
const kPairingTitles = {
  worker: 'each pair ran on the same worker',
  device: 'pairs ran on the same device kind and thread count, some on different workers',
  unpaired: 'no pair ran on matching hardware: the ratio mixes hardware',
};

// speedupCell: the mean paired speed-up with its 95% CI over the m seeds that
// reached the baseline's final val loss, and "m/n" of the paired seeds, so a
// reader sees the seeds that never got there. The baseline's is 1 by definition.
function speedupCell(r) {
  const n = num(r.speedupSeeds);
  if (!n) return kDash;
  if (r.isBaseline) return ratio(r.speedup?.mean);
  const m = num(r.speedup?.n);
  return h('span', { class: 'speedup', title: `reached the baseline\u2019s final val loss on ${m} of ${n} paired `
                                              + `seeds; mean and 95% CI over those ${m}` },
           h('span', { class: 'nowrap' }, m ? interval(r.speedup, { digits: 2 }) : kDash), ' ',
           h('span', { class: 'muted reached' }, `${m}/${n}`));
}

// throughputCell: the mean paired tokens/s ratio with its 95% CI, and how the
// pairs were matched on hardware (hardware named in the tooltip).
function throughputCell(r) {
  const pairs = num(r.throughputPairs);
  if (!pairs) return kDash;
  if (r.isBaseline) return ratio(r.throughputRatio?.mean);
  const used = num(r.throughputRatio?.n);
  const word = kPairingWords[r.throughputPairing] || kDash;
  return h('span', { class: 'throughput', title: `${compact(r.tokensPerSecond)} tokens/s; ${used} of ${pairs} seed pairs, `
                                                 + `${kPairingTitles[word] || ''}: ${r.throughputHardware || 'unknown'}` },
           h('span', { class: 'nowrap' }, interval(r.throughputRatio, { digits: 2 })), ' ',
           badge(word, `pairing pairing-${word}`, kPairingTitles[word]));
}

// adjustedDelta is the family-adjusted interval of the delta, a line under
// it (nothing for the baseline or while there is none).
function adjustedDelta(r) {
  if (r.isBaseline || !r.adjustedDelta || r.adjustedDelta.low === undefined) return null;
  return h('span', { class: 'sub adjusted-delta', title: 'family-adjusted interval (Holm or Benjamini-Hochberg)' },
           `adj. [${signed(r.adjustedDelta.low)}, ${signed(r.adjustedDelta.high)}]`);
}

function principleBadges(report = {}) {
  return h('span', { class: 'badges' }, kPrinciples.map((p) => (report[p]
    ? badge(p, `principle on principle-${p}`, `satisfies ${kPrincipleTitles[p]}`)
    : badge(p, `principle off principle-${p}`, `violates ${kPrincipleTitles[p]}`))));
}

// schedulePath is the schedule's page: every seed's trial and its paired
// delta against the baseline over steps.
export const schedulePath = (experimentId, schedule) =>
  `#/experiments/${experimentId}/schedules/${encodeURIComponent(schedule)}`;

function scheduleCell(row, experimentId) {
  const heads = layerHeads(row.principles, row.schedule);
  const text = h('a', { href: schedulePath(experimentId, row.schedule), class: 'schedule-link' }, row.schedule);
  return h('div', { class: 'schedule-cell' }, staircase(heads, { label: `${row.schedule}: heads per layer ${heads.join(' ')}` }),
           h('code', { class: 'schedule' }, text), row.isBaseline ? badge('baseline', 'uniform') : null);
}

function header(experiment, actions = null) {
  const spec = experiment.spec || {};
  const model = spec.model || {};
  const budget = spec.budget || {};
  const policy = spec.seedsPolicy;
  // Under a seeds policy spec.seeds is the whole sequence the coordinator
  // may draw from; say how much of it it used and why.
  const seeds = policy
    ? `adaptive ${policy.min}..${policy.max} per schedule from ${(spec.seeds || []).join(', ')}; `
      + `${integer(experiment.seedsAdded || 0)} trials added${experiment.seedsNote ? ` (${experiment.seedsNote})` : ''}`
    : (spec.seeds || []).join(', ');
  return h('div', { class: 'page-head' },
           h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Queue'), ' / ', `experiment #${experiment.id}`),
           h('h1', {}, experiment.name || `Experiment #${experiment.id}`, ' ', stateBadge(experimentState(experiment.state))),
           h('div', { class: 'head-grid' },
             keyValues([
               ['Owner', experiment.owner || '\u2014'],
               ['Priority', integer(experiment.priority)],
               ['Model', `${model.preset || 'custom'}${model.dModel ? ` d=${model.dModel}` : ''}${model.layers ? ` L=${model.layers}` : ''}`],
               ['Budget', `${budget.steps ? `${integer(budget.steps)} steps` : 'preset steps'}${budget.batchSize ? `, batch ${budget.batchSize}` : ''}`],
               ['Seeds', seeds || '\u2014'],
               ['Trials', `${integer(experiment.counts?.completed)} of ${integer(experiment.counts?.total)} completed`],
               ['Steps trained', searchCost(experiment)],
               ['Queue order', `shuffled by sample_seed ${spec.sampleSeed || 0}`],
             ]),
             h('div', { class: 'head-progress' }, progressBar(experiment.progress),
               h('a', { href: `#/experiments/${experiment.id}/trials`, class: 'button-link', id: 'trials-link' }, 'All trials \u203a'),
               actions)));
}

// searchCost: the steps trained so far against a grid search of the same
// space (Experiment.steps_trained, grid_steps).
function searchCost(experiment) {
  const trained = num(experiment.stepsTrained || 0);
  const grid = num(experiment.gridSteps || 0);
  if (!(grid > 0)) return compact(trained);
  return `${compact(trained)} of the grid's ${compact(grid)} (${percent(trained / grid)})`;
}

function baselineCard(baseline) {
  if (!baseline || !baseline.schedule) {
    return section('Baseline', empty('The uniform baseline has no finished trial yet.',
                                     'Deltas and speed-ups appear once it does.'));
  }
  return section('Baseline',
                 h('div', { class: 'baseline-row' },
                   staircase(layerHeads(baseline.principles, baseline.schedule), { width: 120, height: 32 }),
                   keyValues([
                     ['Schedule', h('code', {}, baseline.schedule)],
                     ['Val loss', interval(baseline.finalValLoss)],
                     ['Min val loss', loss(baseline.minValLoss)],
                     ['Tokens/s', compact(baseline.tokensPerSecond)],
                     ['Seeds', integer(baseline.seedsCompleted)],
                   ])));
}

// effectCell is the regression effect of violating a principle with its 95%
// interval, or why it is not estimable, in the CLI's words.
function effectCell(e) {
  if (e.status === 'EFFECT_ESTIMATED' && e.effect) {
    return h('span', { class: 'effect', title: `${integer(e.effect.n)} schedules, ${integer(e.dof)} dof, `
                                               + `standard error ${fixed(e.standardError)}` },
             interval(e.effect, { sign: true }));
  }
  if (!e.status || e.status === 'EFFECT_STATUS_UNSPECIFIED') return h('span', { class: 'effect' }, kDash);
  const reason = e.note || e.status.replace(/^EFFECT_/, '').toLowerCase();
  return h('span', { class: 'effect not-estimable muted' }, `not estimable (${reason})`);
}

function effectsCard(effects, onError, experimentId) {
  const usable = (effects || []).filter((e) => num(e.satisfied) + num(e.violated) > 0);
  if (!usable.length) {
    return section('Principle effects', empty('No finished trials yet.', 'The chart compares schedules that satisfy each principle with those that violate it.'));
  }
  const holder = h('div', { class: 'chart', id: 'principle-chart' });
  const card = section('Principle effects: \u0394 val loss from violating each (lower is better)',
                       table({
                         id: 'effects-table',
                         columns: [
                           { label: 'Principle', render: (e) => principleName(e.principle) },
                           { label: 'Effect of violating', class: 'num',
                             title: 'regression coefficient with its 95% CI, the other principles held fixed',
                             render: effectCell },
                           { label: 'p', class: 'num', title: 'two-sided t-test of the effect, not adjusted across principles',
                             render: (e) => (e.pValue === undefined ? kDash
                               : (num(e.pValue) < 0.001 ? '<0.001' : fixed(e.pValue, 3))) },
                           { label: 'Satisfy / violate', class: 'num',
                             title: 'schedules with a paired \u0394 that satisfy / violate it (their plain means are the bars)',
                             render: (e) => h('span', {
                               title: `mean \u0394 satisfied ${num(e.satisfied) ? signed(e.meanDeltaSatisfied) : kDash}, `
                                      + `violated ${num(e.violated) ? signed(e.meanDeltaViolated) : kDash}`,
                             }, `${integer(e.satisfied)} / ${integer(e.violated)}`) },
                         ],
                         rows: usable,
                         rowAttrs: (e) => ({ dataset: { principle: principleName(e.principle) } }),
                       }),
                       h('p', { class: 'muted', id: 'effects-method' },
                         'Effect: the coefficient of violating the principle in a regression of each schedule\u2019s '
                         + 'mean paired \u0394 on all the principles\u2019 violations, weighted by paired seeds, '
                         + 'baseline left out. Bars: plain mean \u0394 of the schedules that satisfy or violate it, '
                         + 'not adjusted for the other principles.'),
                       holder,
                       plotDownloads(`experiment-${experimentId}-principle-effects`,
                                     () => holder.querySelector('canvas'), onError,
                                     { idPrefix: 'effects-download', withSvg: false }));
  // The chart needs its container in the document to know its width.
  card.drawChart = () => barChart(holder, {
    categories: usable.map((e) => principleName(e.principle)),
    yLabel: 'mean \u0394 val loss',
    series: [
      { label: 'satisfied', color: kColors.satisfied, values: usable.map((e) => (num(e.satisfied) ? num(e.meanDeltaSatisfied) : NaN)) },
      { label: 'violated', color: kColors.violated, values: usable.map((e) => (num(e.violated) ? num(e.meanDeltaViolated) : NaN)) },
    ],
  });
  return card;
}

// verdictTitle says how the verdicts were reached: the method the
// coordinator used, the family and alpha.
function verdictTitle(v) {
  if (!v) return 'verdict vs the uniform baseline';
  const family = v.family === 'VERDICT_FAMILY_HOLM' ? 'Holm (familywise error)' : 'Benjamini-Hochberg (FDR)';
  return `${v.methodDescription || 'paired t'}; ${family} at ${num(v.alpha) || 0.05}; `
         + 'inconclusive = no difference found, which does not mean equal';
}

function verdictDetail(r) {
  if (r.isBaseline) return 'the baseline';
  if (r.verdict === 'VERDICT_NEEDS_SEEDS') return 'fewer than 2 seeds paired with the baseline';
  const p = r.adjustedPValue === undefined ? '' : `adjusted p ${Number(r.adjustedPValue).toPrecision(2)}`;
  if (r.verdict === 'VERDICT_INCONCLUSIVE' && num(r.seedsNeeded) > 0) {
    return `${p}; about ${integer(r.seedsNeeded)} paired seeds would detect this delta at 80% power`;
  }
  return num(r.decidedAtSeeds) ? `${p}; decided at ${integer(r.decidedAtSeeds)} seeds` : p;
}

// raceLine says how racing settled the best (RankResponse.race), or
// nothing when the experiment does not race.
function raceLine(race) {
  if (!race || !race.state) return null;
  const pct = (x) => `${(100 * (num(x) || 0)).toFixed(1)}%`;
  return h('p', { id: 'race' }, `Racing: ${race.note} — ${pct(race.gridShare)} of the grid’s steps in all, `
                                + `${pct(race.raceShare)} added by racing (budget ${pct(race.budget)}, `
                                + `at most ${integer(race.maxSeeds)} seeds each).`);
}

// verdictSummary is the line over the leaderboard: the counts, the method,
// racing's word and the best-set.
function verdictSummary(v, race) {
  if (!v) return null;
  const best = v.bestSet || [];
  return h('div', { class: 'verdict-summary', id: 'verdict-summary' },
    h('p', {}, `Verdicts: ${integer(v.better)} better, ${integer(v.worse)} worse, `
               + `${integer(v.inconclusive)} inconclusive, ${integer(v.needsSeeds)} need seeds \u2014 `
               + verdictTitle(v)),
    raceLine(race),
    h('p', { id: 'best-set' }, best.length
      ? `Best-set (${Math.round(100 * (1 - (num(v.alpha) || 0.05)))}% confidence, Hsu\u2019s MCB): `
        + `${integer(best.length)} schedule${best.length === 1 ? '' : 's'}: `
        + best.slice(0, 8).join('  ') + (best.length > 8 ? ` and ${best.length - 8} more` : '')
      : 'Best-set: needs 2 paired seeds per schedule.'));
}

function controls(state, apply) {
  const boxes = kPrinciples.map((p) => h('label', { class: 'check', title: kPrincipleTitles[p] },
    h('input', { type: 'checkbox', name: 'require', value: p, checked: state.require.includes(p),
                 onchange: (ev) => {
                   const next = state.require.filter((x) => x !== p);
                   if (ev.target.checked) next.push(p);
                   apply({ require: kPrinciples.filter((x) => next.includes(x)).join(','), page: '', trail: '' });
                 } }), ` ${p}`));
  return h('div', { class: 'controls' }, h('span', { class: 'controls-label' }, 'Require:'), boxes,
           h('label', { class: 'select' }, 'Sort: ',
             h('select', { id: 'sort-select', onchange: (ev) => apply({ sort: ev.target.value, desc: '', page: '', trail: '' }) },
               [['rank', 'rank (paired \u0394)'], ['val_loss', 'val loss'], ['delta', '\u0394 vs baseline'],
                ['min_val_loss', 'min val loss'],
                ['speedup', 'speed-up'], ['throughput', 'tokens/s']].map(([v, label]) =>
                 h('option', { value: v, selected: state.sort === v }, label)))),
           h('label', { class: 'check' }, h('input', { type: 'checkbox', id: 'desc-toggle', checked: state.desc,
             onchange: (ev) => apply({ desc: ev.target.checked ? '1' : '', page: '', trail: '' }) }), ' reverse'));
}

// iv lists an Interval's mean, low and high as CSV columns named
// `name`_mean, _low, _high (absent values empty).
const ivCsv = (name, get) => [[`${name}_mean`, (r) => get(r)?.mean], [`${name}_low`, (r) => get(r)?.low],
                              [`${name}_high`, (r) => get(r)?.high]];

// leaderboardColumns: the table's columns, each with what it exports to CSV
// (`csv`: [name, value(row)] pairs, the numbers unrounded), so the export
// has the columns shown and cannot drift from them.
function leaderboardColumns(verdicts, experimentId) {
  return [
    { label: 'Rank', class: 'num rank', sort: 'rank', title: 'by the paired delta vs the baseline',
      render: (r) => integer(r.rank), csv: [['rank', (r) => r.rank]] },
    { label: 'Schedule', render: (r) => (r.inBestSet
      ? h('span', { class: 'best-set-cell' }, scheduleCell(r, experimentId),
          h('span', { class: 'badge best-set', title: 'in the 95% confidence set for the best (Hsu\u2019s MCB)' },
            'best-set'))
      : scheduleCell(r, experimentId)),
      csv: [['schedule', (r) => r.schedule], ['baseline', (r) => (r.isBaseline ? 1 : 0)],
            ['best_set', (r) => (r.inBestSet ? 1 : 0)]] },
    { label: 'Principles', render: (r) => principleBadges(r.principles),
      csv: [['principles', (r) => kPrinciples.filter((p) => r.principles?.[p]).join(' ')]] },
    { label: 'Val loss', class: 'num', sort: 'val_loss',
      title: 'final val loss, mean \u00b1 95% CI half-width over seeds; under it the min val loss (mean over seeds)',
      render: (r) => [h('span', { class: 'val-loss' }, interval(r.finalValLoss)),
                      h('span', { class: 'sub min-val-loss', title: 'min val loss, mean over seeds' },
                        `min ${loss(r.minValLoss)}`)],
      csv: [...ivCsv('val_loss', (r) => r.finalValLoss), ['min_val_loss', (r) => r.minValLoss]] },
    { label: '\u0394 vs baseline', class: 'num', sort: 'delta',
      title: 'paired per-seed delta vs the uniform baseline (negative is better); under it the family-adjusted '
             + 'interval of the delta: it lies below 0 exactly when the verdict is better, above 0 when worse',
      render: (r) => [h('span', { class: `delta ${r.isBaseline ? 'delta-none' : deltaClass(r.verdict)}` },
                        r.isBaseline ? '\u2014' : interval(r.deltaVsBaseline, { sign: true })),
                      adjustedDelta(r)],
      csv: [...ivCsv('delta', (r) => (r.isBaseline ? null : r.deltaVsBaseline)),
            ['adjusted_delta_low', (r) => r.adjustedDelta?.low], ['adjusted_delta_high', (r) => r.adjustedDelta?.high]] },
    { label: 'Verdict', title: verdictTitle(verdicts),
      render: (r) => h('span', { class: `verdict ${deltaClass(r.isBaseline ? '' : r.verdict)}`,
                                 title: verdictDetail(r) },
                       verdictWord(r.verdict)),
      csv: [['verdict', (r) => (r.isBaseline ? '' : verdictWord(r.verdict))]] },
    { label: 'Speed-up', class: 'num', sort: 'speedup',
      title: 'per seed: baseline steps / steps to reach the baseline\u2019s final val loss (interpolated between '
             + 'evals); mean \u00b1 95% CI over the seeds that reached it, reached/paired seeds',
      render: speedupCell,
      csv: [...ivCsv('speedup', (r) => r.speedup), ['speedup_reached_seeds', (r) => r.speedup?.n],
            ['speedup_paired_seeds', (r) => r.speedupSeeds]] },
    { label: 'Tokens/s', class: 'num', sort: 'throughput',
      title: 'tokens/s ratio vs the baseline per seed, mean \u00b1 95% CI, paired on the same worker, else the '
             + 'same device, else unpaired',
      render: throughputCell,
      csv: [...ivCsv('throughput_ratio', (r) => r.throughputRatio),
            ['throughput_pairing', (r) => kPairingWords[r.throughputPairing] || '']] },
    { label: 'Seeds', class: 'num', title: 'completed seeds (paired with the baseline); diverged and failed ones',
      render: (r) => h('span', { class: num(r.seedsDiverged) + num(r.seedsFailed) > 0 ? 'seeds-lost' : '' },
                       `${integer(r.seedsCompleted)} (${integer(r.pairedSeeds)})`
                       + (num(r.seedsDiverged) ? `, ${integer(r.seedsDiverged)} diverged` : '')
                       + (num(r.seedsFailed) ? `, ${integer(r.seedsFailed)} failed` : '')),
      csv: [['seeds_completed', (r) => r.seedsCompleted], ['paired_seeds', (r) => r.pairedSeeds],
            ['seeds_diverged', (r) => r.seedsDiverged], ['seeds_failed', (r) => r.seedsFailed]] },
  ];
}

// csvColumns flattens the columns' CSV pairs.
function csvColumns(columns) {
  return columns.flatMap((c) => (c.csv || []).map(([name, value]) => ({ name, value })));
}

// exportLeaderboard saves every ranked schedule (all pages, under the
// page's filter and sort) as CSV, the columns the table shows.
async function exportLeaderboard(id, state, verdicts) {
  const rows = [];
  let token = '';
  do {
    const page = await api.rank(id, { require: state.require.join(','), sort: state.sort,
                                      descending: state.desc ? 1 : '', page_size: kCsvPageSize, page_token: token });
    rows.push(...(page.schedules || []));
    token = page.nextPageToken || '';
  } while (token);
  saveCsv(`experiment-${id}-leaderboard.csv`, csvColumns(leaderboardColumns(verdicts, id)), rows);
}

// compareView is ResultsService.Compare's answer: b - a over their common
// seeds, its 95% interval and the verdict of one planned paired t-test.
function compareView(c, a, b) {
  const d = c.delta || {};
  const n = num(d.n);
  const verdict = verdictWord(c.verdict);
  const ci = n >= 2 && d.low !== undefined ? `[${signed(d.low)}, ${signed(d.high)}]` : 'no interval from one seed';
  return h('div', { id: 'compare-result', dataset: { mean: String(num(d.mean)), low: String(d.low ?? ''),
                                                     high: String(d.high ?? ''), n: String(n), verdict: c.verdict || '' } },
           h('p', {}, h('code', {}, b), ' − ', h('code', {}, a), ': ',
             h('strong', { class: `delta ${deltaClass(c.verdict)}` }, signed(d.mean)), ` ${ci}, over ${integer(n)} `
             + `common seed${n === 1 ? '' : 's'}.`),
           h('p', {}, 'Verdict: ', h('span', { class: `verdict ${deltaClass(c.verdict)}`, id: 'compare-verdict' }, verdict),
             c.pValue === undefined ? '' : ` (p ${num(c.pValue) < 0.001 ? '< 0.001' : fixed(c.pValue, 3)})`),
           h('p', { class: 'muted' }, 'A two-sided paired t-test of the per-seed differences against 0 over the seeds '
             + 'both trained; one planned comparison, so not adjusted for multiplicity (the leaderboard’s '
             + 'verdicts are). Negative: b’s val loss is lower.'));
}

// compareCard picks two of the page's schedules and compares them.
function compareCard(id, rows, kept, onError) {
  const names = rows.map((r) => r.schedule);
  const baseline = rows.find((r) => r.isBaseline)?.schedule || names[0];
  kept.compareA = names.includes(kept.compareA) ? kept.compareA : baseline;
  kept.compareB = names.includes(kept.compareB) ? kept.compareB : names.find((x) => x !== kept.compareA);
  const select = (key, elementId, label) => h('label', { class: 'select' }, `${label} `,
    h('select', { id: elementId, onchange: (ev) => { kept[key] = ev.target.value; } },
      names.map((x) => h('option', { value: x, selected: x === kept[key] }, x))));
  const result = h('div', { class: 'compare-out' },
                   kept.compareAnswer ? compareView(...kept.compareAnswer) : null);
  const run = async (event) => {
    const button = event.currentTarget;
    const [a, b] = [kept.compareA, kept.compareB];
    button.disabled = true;
    try {
      kept.compareAnswer = [await api.compare(id, a, b), a, b];
      replace(result, compareView(...kept.compareAnswer));
    } catch (err) {
      onError(err);
    } finally {
      button.disabled = false;
    }
  };
  const card = section('Compare two schedules',
                       h('div', { class: 'controls' }, select('compareA', 'compare-a', 'a:'),
                         select('compareB', 'compare-b', 'b:'),
                         h('button', { type: 'button', class: 'action-button', id: 'compare-button', onclick: run },
                           'Compare')),
                       result);
  card.id = 'compare';
  return card;
}

export async function render(ctx) {
  const id = ctx.params.id;
  const state = {
    sort: ctx.query.sort || 'rank',
    desc: ctx.query.desc === '1',
    require: (ctx.query.require || '').split(',').filter((p) => kPrinciples.includes(p)),
  };
  const paging = pageState(ctx.query);
  const base = { sort: ctx.query.sort, desc: ctx.query.desc, require: ctx.query.require };
  const apply = (changes) => ctx.navigate(`/experiments/${id}`, { ...base, page: paging.token,
                                                                   trail: ctx.query.trail, ...changes });
  // What the user typed or chose survives the live refreshes: the action
  // inputs, the comparison's schedules and its answer.
  const kept = {};
  // trainButton queues the suggested schedules on every seed the
  // experiment has (ExperimentService.Extend), once the owner confirmed
  // what its dry run says it adds.
  const trainButton = (schedules) => h('button', {
    type: 'button', class: 'action-button', id: 'train-suggestions',
    onclick: async (event) => {
      const button = event.currentTarget;
      button.disabled = true;
      try {
        const added = await extendAfterAsking(id, { schedules });
        if (added) {
          ctx.notify(extendNote(added));
          ctx.reload();
        }
      } catch (err) {
        ctx.fail(err);
      } finally {
        button.disabled = false;
      }
    },
  }, `Train these ${schedules.length} suggestions`);
  const load = async () => {
    const [rank, suggestions] = await Promise.all([api.rank(id, {
      require: state.require.join(','), sort: state.sort, descending: state.desc ? 1 : '',
      page_size: kPageSize, page_token: paging.token,
    }), suggestionsCard(id)]);
    if (!ctx.isCurrent()) return;
    const experiment = rank.experiment || { id };
    const ladder = await ladderCard(experiment);
    if (!ctx.isCurrent()) return;
    const rows = rank.schedules || [];
    const total = num(rank.total);
    const actualDescending = kNaturallyDescending.has(state.sort) !== state.desc;
    const onSort = (sort) => apply(sort === state.sort ? { desc: state.desc ? '' : '1', page: '', trail: '' }
                                                       : { sort, desc: '', page: '', trail: '' });
    const go = (where) => apply(pageQuery(paging, where, rank.nextPageToken));
    const board = rows.length ? table({
      id: 'leaderboard-table',
      sort: state.sort,
      descending: actualDescending,
      onSort,
      columns: leaderboardColumns(rank.verdicts, id),
      rows,
      rowAttrs: (r) => ({ class: [r.isBaseline ? 'is-baseline' : '', r.inBestSet ? 'in-best-set' : ''].join(' ').trim(),
                          dataset: { schedule: r.schedule } }),
    }) : (state.require.length
      ? empty('No finished schedule satisfies the chosen principles.', 'Clear a filter to see more.')
      : empty('No finished trials yet.', 'Schedules are ranked as soon as their trials complete.'));
    const effects = effectsCard(rank.principleEffects, ctx.fail, id);
    const onDeleted = (deleted) => {
      ctx.notify(`Experiment #${deleted.id} deleted: ${integer(deleted.trials)} trials, `
                 + `${integer(deleted.attempts)} attempts, ${integer(deleted.points)} points.`);
      ctx.navigate('/', {});
    };
    // After an action the page loads afresh (its state, and whether it is
    // live, may have changed) and says what happened.
    const onChanged = (message) => {
      ctx.notify(message);
      ctx.reload();
    };
    const actions = actionsPanel(experiment, ctx.identity, { onChanged, onDeleted, onError: ctx.fail, kept });
    if (suggestions.suggested?.length && canAct(ctx.identity, experiment)
        && experimentState(experiment.state) !== 'cancelled') {
      suggestions.appendChild(trainButton(suggestions.suggested));
    }
    const exportCsv = h('button', { type: 'button', class: 'tool-button', id: 'export-csv',
                                    onclick: () => exportLeaderboard(id, state, rank.verdicts).catch(ctx.fail) },
                        'Export CSV');
    replace(ctx.view,
            header(experiment, actions),
            h('div', { class: 'two-col effects-row' }, baselineCard(rank.baseline), effects),
            h('section', { class: 'card' },
              h('div', { class: 'card-head' }, h('h2', {}, 'Leaderboard'),
                h('span', { class: 'card-tools' }, exportCsv,
                  h('span', { class: 'muted', id: 'rank-total', dataset: { total: String(total) } },
                    `${integer(total)} schedule${total === 1 ? '' : 's'}`))),
              verdictSummary(rank.verdicts, rank.race),
              controls(state, apply),
              board,
              rows.length || paging.trail.length ? pager({
                shown: rows.length, offset: paging.trail.length * kPageSize, total,
                hasNext: Boolean(rank.nextPageToken), onFirst: () => go('first'),
                onPrev: () => go('prev'), onNext: () => go('next'),
              }) : null),
            rows.length >= 2 ? compareCard(id, rows, kept, ctx.fail) : null,
            ashaCard(rank.ashaRungs, { key: id, spec: experiment.spec }),
            ladder,
            suggestions);
    if (effects.drawChart) effects.drawChart();
    return experiment;
  };
  const experiment = await load();
  // A finished experiment never changes: no stream to hold open.
  if (isLive(experiment)) ctx.live({ experimentId: id }, load);
}
