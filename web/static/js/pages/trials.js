// An experiment's trials, one server-side page at a time, filterable by
// state: where queued, running and failed trials show (the leaderboard only
// ranks finished ones). Live over the experiment's event stream.

import { api } from '../api.js';
import { h, replace } from '../dom.js';
import { integer, loss, num, relativeTime, timestamp, trialState } from '../format.js';
import { isLive } from '../live.js';
import { layerHeads, staircase } from '../staircase.js';
import { badge, empty, pageQuery, pageState, pager, progressBar, section, stateBadge, table } from '../ui.js';

const kPageSize = 50;
const kStates = ['queued', 'leased', 'running', 'completed', 'failed', 'diverged', 'cancelled', 'stopped_at_rung'];

export async function render(ctx) {
  const id = ctx.params.id;
  const filter = kStates.includes(ctx.query.state) ? ctx.query.state : '';
  const paging = pageState(ctx.query);
  const go = (query) => ctx.navigate(`/experiments/${id}/trials`, query);
  const load = async () => {
    const [experiment, list] = await Promise.all([
      api.experiment(id),
      api.trials(id, { state: filter ? `TRIAL_${filter.toUpperCase()}` : '', page_size: kPageSize, page_token: paging.token }),
    ]);
    if (!ctx.isCurrent()) return;
    const trials = list.trials || [];
    const rows = trials.length ? table({
      id: 'trials-table',
      columns: [
        { label: 'Trial', class: 'num', render: (t) => h('a', { href: `#/trials/${t.id}` }, `#${t.id}`) },
        { label: 'Schedule', render: (t) => h('div', { class: 'schedule-cell' },
          staircase(layerHeads(t.principles, t.schedule)), h('code', {}, t.schedule),
          t.isBaseline ? badge('baseline', 'uniform') : null) },
        { label: 'Seed', class: 'num', render: (t) => String(t.seed || 0) },
        { label: 'State', render: (t) => stateBadge(trialState(t.state)) },
        { label: 'Attempt', class: 'num', render: (t) => integer(t.attempt) },
        { label: 'Progress', class: 'progress-cell', render: (t) => progressBar(num(t.totalSteps) ? num(t.lastStep) / num(t.totalSteps) : 0) },
        { label: 'Final val loss', class: 'num', render: (t) => (t.metrics ? loss(t.metrics.finalValLoss) : '\u2014') },
        { label: 'Worker', render: (t) => (t.workerId ? h('code', {}, t.workerId) : '\u2014') },
        { label: 'Updated', render: (t) => {
          const when = t.finishedUnixMs || t.startedUnixMs || t.createdUnixMs;
          return h('span', { title: timestamp(when) }, relativeTime(when));
        } },
      ],
      rows: trials,
    }) : empty(filter ? `No ${filter} trials.` : 'This experiment has no trials.');
    replace(ctx.view,
            h('div', { class: 'page-head' },
              h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Queue'), ' / ',
                h('a', { href: `#/experiments/${id}` }, experiment.name || `experiment #${id}`), ' / trials'),
              h('h1', {}, `Trials of ${experiment.name || `experiment #${id}`}`)),
            section(`Trials (${integer(list.total)})`,
                    h('div', { class: 'controls' }, h('label', { class: 'select' }, 'State: ',
                      h('select', { id: 'state-select', onchange: (ev) => go({ state: ev.target.value }) },
                        h('option', { value: '' }, 'all'),
                        kStates.map((s) => h('option', { value: s, selected: s === filter }, s))))),
                    rows,
                    trials.length || paging.trail.length ? pager({
                      shown: trials.length, offset: paging.trail.length * kPageSize, total: list.total,
                      hasNext: Boolean(list.nextPageToken),
                      onFirst: () => go({ state: filter, ...pageQuery(paging, 'first') }),
                      onPrev: () => go({ state: filter, ...pageQuery(paging, 'prev') }),
                      onNext: () => go({ state: filter, ...pageQuery(paging, 'next', list.nextPageToken) }),
                    }) : null));
    return experiment;
  };
  const experiment = await load();
  if (isLive(experiment)) ctx.live({ experimentId: id }, load);
}
