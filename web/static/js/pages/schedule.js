// One schedule of an experiment: every seed's trial (each links to its
// trial page), and the curve that shows its difference from the baseline:
// the paired delta of val loss over steps per seed, their mean and its
// t-based 95% interval across seeds (deltaplot.js), downloadable as SVG or
// PNG. Live over the experiment's event stream while trials run.

import { api } from '../api.js';
import { deltaPlot, pairedDeltas } from '../deltaplot.js';
import { h, replace } from '../dom.js';
import { plotDownloads } from '../download.js';
import { integer, kDash, loss, num, signed, trialState } from '../format.js';
import { isLive } from '../live.js';
import { layerHeads, staircase } from '../staircase.js';
import { badge, empty, section, stateBadge, table } from '../ui.js';

const kTrialPage = 1000;

// scheduleTrials lists the experiment's trials of `schedule`, every page.
async function scheduleTrials(id, schedule) {
  const out = [];
  let token = '';
  do {
    const page = await api.trials(id, { page_size: kTrialPage, page_token: token });
    out.push(...(page.trials || []).filter((t) => t.schedule === schedule));
    token = page.nextPageToken || '';
  } while (token);
  return out.sort((a, b) => num(a.seed) - num(b.seed));
}

const kCaption = 'Paired \u0394 of val loss against the uniform baseline: at each eval step, this schedule\u2019s '
  + 'val loss minus the baseline\u2019s on the same seed (negative is better; the dashed line is the baseline). '
  + 'Thin grey lines: each seed. Thick line: the mean across seeds. Band: its 95% interval across seeds, '
  + 'mean \u00b1 t(0.975, n\u22121)\u00b7sd/\u221an, where at least 2 seeds reported the step. '
  + 'Not adjusted for looking at many steps or schedules: the leaderboard\u2019s verdict is the test.';

export async function render(ctx) {
  const id = ctx.params.id;
  const schedule = ctx.params.schedule;
  const load = async () => {
    const [experiment, trials] = await Promise.all([api.experiment(id), scheduleTrials(id, schedule)]);
    if (!ctx.isCurrent()) return null;
    const started = trials.filter((t) => num(t.lastStep) > 0 || t.state === 'TRIAL_COMPLETED');
    const responses = await Promise.all(started.map((t) => api.trial(t.id)));
    if (!ctx.isCurrent()) return null;
    const baselineOf = new Map(responses.map((r) => [r.trial?.id, r.baseline]));
    const isBaseline = trials.some((t) => t.isBaseline);
    const deltas = pairedDeltas(responses);
    const plot = isBaseline ? null : deltaPlot(deltas);
    const holder = h('div', { class: 'chart', id: 'delta-chart' },
                     plot || empty(isBaseline ? 'This is the uniform baseline: its deltas are zero by definition.'
                                              : 'No eval step reported by both a trial and its baseline yet.'));
    const name = `experiment-${id}-${schedule.replace(/[^0-9a-z]+/gi, '_')}-delta`;
    const final = (t) => (t.metrics ? num(t.metrics.finalValLoss) : NaN);
    const heads = layerHeads(trials[0]?.principles, schedule);
    replace(ctx.view,
            h('div', { class: 'page-head' },
              h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Queue'), ' / ',
                h('a', { href: `#/experiments/${id}` }, experiment.name || `experiment #${id}`), ' / schedule'),
              h('h1', {}, h('code', { class: 'schedule' }, schedule), ' ', isBaseline ? badge('baseline', 'uniform') : null),
              h('div', { class: 'trial-summary' }, staircase(heads, { width: 180, height: 40 }),
                h('span', {}, `heads per layer: ${heads.join(' ')}`),
                h('span', {}, `${integer(trials.length)} trial${trials.length === 1 ? '' : 's'}, one per seed`))),
            section('\u0394 val loss vs the baseline over steps, paired by seed',
                    holder,
                    h('p', { class: 'muted caption', id: 'delta-caption' }, kCaption),
                    plot ? plotDownloads(name, () => holder.querySelector('svg.delta-plot'), ctx.fail,
                                         { idPrefix: 'delta-download' }) : null),
            section('Trials, one per seed', trials.length ? table({
              id: 'schedule-trials',
              columns: [
                { label: 'Seed', class: 'num', render: (t) => String(t.seed || 0) },
                { label: 'Trial', class: 'num',
                  render: (t) => h('a', { href: `#/trials/${t.id}`, class: 'trial-link' }, `#${t.id}`) },
                { label: 'State', render: (t) => stateBadge(trialState(t.state)) },
                { label: 'Steps', class: 'num', render: (t) => `${integer(t.lastStep)} / ${integer(t.totalSteps)}` },
                { label: 'Final val loss', class: 'num', render: (t) => (Number.isFinite(final(t)) ? loss(final(t)) : kDash) },
                { label: '\u0394 vs baseline (same seed)', class: 'num', render: (t) => {
                  const base = baselineOf.get(t.id);
                  const theirs = base && base.id !== t.id && base.metrics ? num(base.metrics.finalValLoss) : NaN;
                  return Number.isFinite(final(t)) && Number.isFinite(theirs) ? signed(final(t) - theirs) : kDash;
                } },
              ],
              rows: trials,
              rowAttrs: (t) => ({ dataset: { seed: String(t.seed || 0), trial: String(t.id) } }),
            }) : empty('No trial of this schedule in the experiment.')));
    return experiment;
  };
  const experiment = await load();
  if (experiment && isLive(experiment)) ctx.live({ experimentId: id }, load);
}
