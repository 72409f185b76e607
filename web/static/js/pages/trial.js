// One trial against the uniform baseline of the same seed: train and val loss
// curves overlaid, the learning rate, per-layer mean attention distance (the
// paper's mechanistic figure), final metrics and the attempt history. Live
// over the experiment's event stream while the trial runs.

import { api } from '../api.js';
import { kColors, lineChart } from '../charts.js';
import { h, replace } from '../dom.js';
import {
  bytes, compact, duration, integer, kDash, loss, num, percent, shortTimestamp, signed, trialState,
} from '../format.js';
import { layerHeads, staircase } from '../staircase.js';
import { badge, empty, section, stateBadge, table } from '../ui.js';

const kFinished = new Set(['TRIAL_COMPLETED', 'TRIAL_FAILED', 'TRIAL_DIVERGED', 'TRIAL_CANCELLED']);

function curve(points, split) {
  const rows = (points || []).filter((p) => (p.split || 'SPLIT_UNSPECIFIED') === split)
    .map((p) => [num(p.step), num(p.loss), num(p.learningRate)])
    .sort((a, b) => a[0] - b[0]);
  return { x: rows.map((r) => r[0]), loss: rows.map((r) => r[1]), lr: rows.map((r) => r[2]) };
}

function chartCard(title, id, draw, emptyText) {
  const holder = h('div', { class: 'chart', id });
  const card = section(title, holder);
  card.draw = () => {
    if (!draw(holder)) replace(holder, empty(emptyText));
  };
  return card;
}

// An absent proto field reads as zero; show a dash rather than a fake 0.
const orDash = (format) => (value, ...rest) => (num(value) === 0 ? kDash : format(value, ...rest));
const lossOr = orDash(loss);
const compactOr = orDash(compact);
const integerOr = orDash(integer);

// A trial whose model FLOP/s beat the measured matmul peak is reported at
// 100% of its own rate; older trials carry no separate measurement.
const peakRaised = (m) => num(m.measuredPeakMatmulFlops) > 0
  && num(m.measuredPeakMatmulFlops) < num(m.peakMatmulFlops);
// attentionText is "fused (avx512)": the kernel the trial trained with and
// the fused kernel's instruction set (trials from before it was recorded: a dash).
// The share of its cores a CPU trial got while stepping (TrialMetrics.cpu_share).
const shareText = (m) => (num(m.cpuShare) ? num(m.cpuShare).toFixed(2) : '\u2014');
const attentionText = (m) => (m.attentionKernel ? `${m.attentionKernel}${m.isa ? ` (${m.isa})` : ''}` : '\u2014');
const mfuText = (m) => (num(m.mfu) ? `${percent(m.mfu, 2)}${peakRaised(m) ? ' (above the measured peak)' : ''}` : kDash);
const measuredPeakText = (m) => {
  const peak = num(m.measuredPeakMatmulFlops) || num(m.peakMatmulFlops);
  return peak ? `${compact(peak)}FLOP/s` : kDash;
};

function metricsTable(trial, baseline) {
  const m = trial.metrics || {};
  const b = baseline ? baseline.metrics || {} : null;
  const row = (label, value, baseValue, delta = null) => ({ label, value, baseValue, delta });
  const rows = [
    row('Final val loss', lossOr(m.finalValLoss), b && lossOr(b.finalValLoss),
        b && num(m.finalValLoss) && num(b.finalValLoss) ? signed(num(m.finalValLoss) - num(b.finalValLoss)) : null),
    row('Min val loss', lossOr(m.minValLoss), b && lossOr(b.minValLoss),
        b && num(m.minValLoss) && num(b.minValLoss) ? signed(num(m.minValLoss) - num(b.minValLoss)) : null),
    row('Final train loss', lossOr(m.finalTrainLoss), b && lossOr(b.finalTrainLoss)),
    row('Steps', integerOr(m.steps || trial.lastStep), b && integerOr(b.steps || baseline.lastStep)),
    row('Tokens/s', compactOr(m.tokensPerSecond), b && compactOr(b.tokensPerSecond),
        b && num(b.tokensPerSecond) && num(m.tokensPerSecond) ? `${(num(m.tokensPerSecond) / num(b.tokensPerSecond)).toFixed(2)}\u00d7` : null),
    row('MFU', mfuText(m), b && mfuText(b)),
    row('Measured matmul peak', measuredPeakText(m), b && measuredPeakText(b)),
    row('Parameters', compactOr(m.parameters, 2), b && compactOr(b.parameters, 2)),
    row('Parameters (nanoGPT count)', compactOr(m.parametersNanogpt, 2), b && compactOr(b.parametersNanogpt, 2)),
    row('FLOPs/token', compactOr(m.flopsPerToken, 2), b && compactOr(b.flopsPerToken, 2)),
    row('Peak memory', bytes(m.peakMemoryBytes), b && bytes(b.peakMemoryBytes)),
    row('Wall time', duration(m.wallSeconds), b && duration(b.wallSeconds)),
    row('Device', m.device || '\u2014', b && (b.device || '\u2014')),
    row('CPU share', shareText(m), b && shareText(b)),
    row('Attention kernel', attentionText(m), b && attentionText(b)),
    m.diverged ? row('Diverged at step', integer(m.divergedStep), null) : null,
  ].filter(Boolean);
  const columns = [
    { label: 'Metric', render: (r) => r.label },
    { label: 'This trial', class: 'num', render: (r) => r.value },
  ];
  if (b) {
    columns.push({ label: 'Baseline', class: 'num', render: (r) => r.baseValue ?? '' });
    columns.push({ label: 'Difference', class: 'num', render: (r) => r.delta ?? '' });
  }
  return table({ id: 'metrics-table', columns, rows });
}

function milestonesTable(trial, baseline) {
  const mine = (trial.metrics && trial.metrics.milestones) || [];
  if (!mine.length) return null;
  const theirs = new Map(((baseline && baseline.metrics && baseline.metrics.milestones) || [])
    .map((ms) => [num(ms.target).toFixed(6), ms]));
  const stepText = (ms) => (!ms ? '\u2014' : num(ms.step) < 0 ? 'never' : integer(ms.step));
  return table({
    id: 'milestones-table',
    columns: [
      { label: 'Val loss target', class: 'num', render: (ms) => loss(ms.target) },
      { label: 'First step (this)', class: 'num', render: (ms) => stepText(ms) },
      { label: 'First step (baseline)', class: 'num', render: (ms) => stepText(theirs.get(num(ms.target).toFixed(6))) },
    ],
    rows: mine,
  });
}

function attemptsTable(trial) {
  const attempts = trial.attempts || [];
  if (!attempts.length) return empty('Not leased yet.');
  return table({
    id: 'attempts-table',
    columns: [
      { label: 'Attempt', class: 'num', render: (a) => integer(a.attempt) },
      { label: 'Worker', render: (a) => (a.workerId ? h('code', {}, a.workerId) : '\u2014') },
      { label: 'Started', render: (a) => shortTimestamp(a.startedUnixMs) },
      { label: 'Ended', render: (a) => (num(a.endedUnixMs) ? shortTimestamp(a.endedUnixMs) : 'open') },
      { label: 'Outcome', render: (a) => stateBadge(trialState(a.outcome)) },
      { label: 'Resumed at', class: 'num', title: 'resumed_from_step: the checkpoint step this attempt started from', render: (a) => integer(a.resumedFromStep) },
      attempts.some((a) => a.message) ? { label: 'Message', class: 'wrap', render: (a) => a.message || '' } : null,
    ].filter(Boolean),
    rows: attempts,
  });
}

export async function render(ctx) {
  const load = async () => {
    const response = await api.trial(ctx.params.id);
    if (!ctx.isCurrent()) return;
    const trial = response.trial || {};
    const isSelf = trial.isBaseline || (response.baseline && response.baseline.id === trial.id);
    const baseline = isSelf ? null : response.baseline || null;
    const mineTrain = curve(response.points, 'SPLIT_TRAIN');
    const mineVal = curve(response.points, 'SPLIT_VAL');
    const baseTrain = curve(baseline ? response.baselinePoints : [], 'SPLIT_TRAIN');
    const baseVal = curve(baseline ? response.baselinePoints : [], 'SPLIT_VAL');
    const heads = layerHeads(trial.principles, trial.schedule);

    const lossTitle = baseline ? 'Loss vs the baseline (same seed)'
                              : trial.isBaseline ? 'Loss (this is the uniform baseline)' : 'Loss';
    const lossCard = chartCard(lossTitle, 'loss-chart', (holder) => {
      const series = [];
      if (baseline && baseTrain.x.length) series.push({ label: `baseline train`, x: baseTrain.x, y: baseTrain.loss, color: kColors.baselineLight, width: 1 });
      if (mineTrain.x.length) series.push({ label: 'train', x: mineTrain.x, y: mineTrain.loss, color: kColors.prismLight, width: 1 });
      if (baseline && baseVal.x.length) series.push({ label: `baseline val`, x: baseVal.x, y: baseVal.loss, color: kColors.baseline, width: 2, dash: [6, 4], points: true });
      if (mineVal.x.length) series.push({ label: 'val', x: mineVal.x, y: mineVal.loss, color: kColors.prism, width: 2, points: true });
      if (!series.length) return false;
      lineChart(holder, { xLabel: 'step', yLabel: 'loss', series, height: 320 });
      return true;
    }, 'No loss points reported yet.');

    const lrCard = chartCard('Learning rate', 'lr-chart', (holder) => {
      const lr = mineTrain.x.length ? mineTrain : mineVal;
      if (!lr.x.length || !lr.lr.some((v) => v > 0)) return false;
      lineChart(holder, { xLabel: 'step', yLabel: 'learning rate', series: [{ label: 'lr', x: lr.x, y: lr.lr, color: kColors.lr }], height: 200, yDigits: 5,
                          yFormat: (v) => (v === 0 ? '0' : v.toExponential(1)) });
      return true;
    }, 'No learning-rate points yet.');

    const mine = ((trial.metrics && trial.metrics.attentionDistance) || []).map(num);
    const theirs = ((baseline && baseline.metrics && baseline.metrics.attentionDistance) || []).map(num);
    const distanceCard = chartCard('Mean attention distance per layer (tokens)', 'distance-chart', (holder) => {
      if (!mine.length) return false;
      const series = [{ label: trial.schedule, x: mine.map((_, i) => i + 1), y: mine, color: kColors.prism, width: 2, points: true }];
      if (theirs.length) series.push({ label: `baseline ${baseline.schedule}`, x: theirs.map((_, i) => i + 1), y: theirs, color: kColors.baseline, width: 2, dash: [6, 4], points: true });
      lineChart(holder, { xLabel: 'layer', yLabel: 'tokens', series, height: 240, yDigits: 1 });
      return true;
    }, 'Measured when the trial completes.');

    const milestones = milestonesTable(trial, baseline);
    const progress = num(trial.totalSteps) ? `${integer(trial.lastStep)} / ${integer(trial.totalSteps)} steps` : '';
    replace(ctx.view,
            h('div', { class: 'page-head' },
              h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Queue'), ' / ',
                h('a', { href: `#/experiments/${trial.experimentId}` }, `experiment #${trial.experimentId}`), ' / ', `trial #${trial.id}`),
              h('h1', {}, h('code', { class: 'schedule' }, trial.schedule), ' ', stateBadge(trialState(trial.state)),
                trial.isBaseline ? badge('baseline', 'uniform') : null),
              h('div', { class: 'trial-summary' },
                staircase(heads, { width: 180, height: 40 }),
                h('span', {}, `seed ${trial.seed || 0}`),
                progress ? h('span', {}, progress) : null,
                h('span', {}, `heads per layer: ${heads.join(' ')}`),
                baseline ? h('a', { href: `#/trials/${baseline.id}` }, `baseline trial #${baseline.id} (${baseline.schedule})`) : null),
              trial.error ? h('p', { class: 'error-text' }, trial.error) : null),
            lossCard,
            h('div', { class: 'two-col' }, lrCard, distanceCard),
            h('div', { class: 'two-col' },
              section('Metrics', trial.metrics ? metricsTable(trial, baseline) : empty('No metrics until the trial completes.'),
                      milestones ? [h('h3', {}, 'Convergence milestones'), milestones] : null),
              section('Attempts', attemptsTable(trial))));
    lossCard.draw();
    lrCard.draw();
    distanceCard.draw();
    const open = (t) => t && !kFinished.has(t.state || 'TRIAL_STATE_UNSPECIFIED');
    return { experimentId: trial.experimentId, live: open(trial) || open(baseline) };
  };
  const first = await load();
  // Finished trials do not change; running ones follow the event stream.
  if (first && first.live) ctx.live({ experimentId: first.experimentId }, load);
}
