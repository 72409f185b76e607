// Queue: every experiment (owner, priority, trial state counts, progress) and
// every worker (device, host, current trial, last heartbeat, tokens/s).
// Polls while shown.

import { api } from '../api.js';
import { h, replace } from '../dom.js';
import { compact, experimentState, integer, num, relativeTime, timestamp, workerState } from '../format.js';
import { empty, pageQuery, pageState, pager, progressBar, section, stateBadge, table } from '../ui.js';
import { recentWorkers } from '../workers.js';

const kPageSize = 50;

function countsCell(counts = {}) {
  const parts = [
    ['queued', counts.queued], ['leased', counts.leased], ['running', counts.running],
    ['completed', counts.completed], ['failed', counts.failed], ['diverged', counts.diverged],
    ['cancelled', counts.cancelled], ['at-rung', counts.stoppedAtRung],
  ].filter(([, n]) => num(n) > 0);
  if (!parts.length) return h('span', { class: 'muted' }, 'no trials');
  return h('span', { class: 'counts' },
           parts.map(([name, n]) => h('span', { class: `count count-${name}`, title: name }, `${integer(n)} ${name}`)));
}

function experimentsTable(experiments) {
  return table({
    id: 'experiments-table',
    columns: [
      { label: 'ID', class: 'num', render: (e) => h('a', { href: `#/experiments/${e.id}` }, `#${e.id}`) },
      { label: 'Name', render: (e) => h('a', { href: `#/experiments/${e.id}`, class: 'strong' }, e.name || '(unnamed)') },
      { label: 'Owner', render: (e) => e.owner || '\u2014' },
      { label: 'State', render: (e) => stateBadge(experimentState(e.state)) },
      { label: 'Priority', class: 'num', render: (e) => integer(e.priority) },
      { label: 'Trials', render: (e) => countsCell(e.counts) },
      { label: 'Progress', class: 'progress-cell', render: (e) => progressBar(e.progress) },
      { label: 'Waiting', render: (e) => (e.queueReason
        ? h('span', { class: 'queue-reason', title: e.queueReason },
            num(e.queuePosition) > 0 ? `#${integer(e.queuePosition)} ${e.queueReason}` : e.queueReason)
        : h('span', { class: 'muted' }, '\u2014')) },
      { label: 'Created', render: (e) => h('span', { title: timestamp(e.createdUnixMs) }, relativeTime(e.createdUnixMs)) },
    ],
    rows: experiments,
    rowAttrs: (e) => ({ dataset: { experiment: e.id } }),
  });
}

function workersTable(workers) {
  return table({
    id: 'workers-table',
    columns: [
      { label: 'Worker', render: (w) => h('code', {}, w.id) },
      { label: 'Host', render: (w) => w.host || '\u2014' },
      { label: 'Device', render: (w) => w.device || '\u2014' },
      { label: 'Threads', class: 'num', render: (w) => integer(w.threads) },
      { label: 'State', render: (w) => stateBadge(workerState(w.state)) },
      { label: 'Current trial', render: (w) => (num(w.currentTrialId) > 0
        ? h('a', { href: `#/trials/${w.currentTrialId}` }, `#${w.currentTrialId}`) : h('span', { class: 'muted' }, 'idle')) },
      { label: 'Last heartbeat', render: (w) => h('span', { title: timestamp(w.lastHeartbeatUnixMs) }, relativeTime(w.lastHeartbeatUnixMs)) },
      { label: 'Tokens/s', class: 'num', render: (w) => (num(w.tokensPerSecond) > 0 ? compact(w.tokensPerSecond) : '\u2014') },
      { label: 'User', render: (w) => w.user || '\u2014' },
    ],
    rows: workers,
  });
}

export async function render(ctx) {
  const paging = pageState(ctx.query);
  const load = async () => {
    const [list, workers] = await Promise.all([
      api.experiments({ page_size: kPageSize, page_token: paging.token, owner: ctx.query.owner }),
      api.workers(),
    ]);
    if (!ctx.isCurrent()) return;
    const experiments = list.experiments || [];
    const { shown: workerRows, hidden } = recentWorkers(workers.workers, Date.now());
    const go = (where) => ctx.navigate('/', { owner: ctx.query.owner, ...pageQuery(paging, where, list.nextPageToken) });
    replace(ctx.view,
            h('div', { class: 'page-head' }, h('h1', {}, 'Queue'),
              h('p', { class: 'muted' }, 'Experiments by priority and the workers training them. Updates live.')),
            section('Experiments',
                    experiments.length ? experimentsTable(experiments)
                      : empty('No experiments yet.', ['Submit one with ', h('code', {}, 'prism submit spec.textproto'), '.']),
                    (experiments.length || paging.trail.length) ? pager({
                      shown: experiments.length, offset: paging.trail.length * kPageSize, total: null,
                      hasNext: Boolean(list.nextPageToken), onFirst: () => go('first'),
                      onPrev: () => go('prev'), onNext: () => go('next'),
                    }) : null),
            section(`Workers (${workerRows.length})`,
                    workerRows.length ? workersTable(workerRows)
                      : empty(hidden ? 'No live workers.' : 'No workers registered.', ['Start one with ', h('code', {}, 'prism worker --coordinator HOST:PORT'), '.']),
                    hidden ? h('p', { class: 'muted', id: 'workers-hidden' },
                               `${hidden} worker${hidden === 1 ? '' : 's'} stopped or lost over an hour ago not shown (`,
                               h('code', {}, 'prism workers --all'), ' lists them).') : null));
  };
  await load();
  ctx.live({}, load);
}
