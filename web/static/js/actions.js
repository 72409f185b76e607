// An experiment's actions for its owner and admins: pause, resume, cancel
// (after a confirmation naming the trials that stop), priority, add seeds
// (ExperimentService.Extend, reusing every trial it has; a dry run first, so
// the confirmation names the trials it queues) and delete (after a
// confirmation naming what goes). Whether the buttons show is cosmetic: the
// coordinator applies the RPCs' rule to every POST (the owner or an admin)
// and says why not, which lands in the banner.

import { api } from './api.js';
import { h } from './dom.js';
import { experimentState, integer, num } from './format.js';

// canAct says whether `identity` (a WhoAmIResponse) may change `experiment`:
// an admin, or its owner with a role that submits.
export function canAct(identity, experiment) {
  if (!identity) return false;
  if (identity.role === 'ROLE_ADMIN') return true;
  return identity.role === 'ROLE_USER' && identity.user === experiment.owner;
}

// cancelQuestion names what a cancel stops: the queued trials that never
// run and the running (or leased) ones stopped where they are.
export function cancelQuestion(experiment) {
  const c = experiment.counts || {};
  const running = num(c.running) + num(c.leased);
  return `Cancel experiment #${experiment.id} "${experiment.name || ''}"? `
    + `This stops ${integer(c.queued)} queued and ${integer(running)} running trials `
    + `(${integer(c.completed)} completed are kept).`;
}

function extendWhat(response) {
  const seeds = (response.seedsAdded || []).map(String);
  const schedules = response.schedulesAdded || [];
  return [seeds.length ? `seed${seeds.length === 1 ? '' : 's'} ${seeds.join(', ')}` : '',
          schedules.length ? `${schedules.length} schedule${schedules.length === 1 ? '' : 's'}` : '']
    .filter(Boolean).join(' and ') || 'nothing';
}

// extendQuestion asks before an Extend, from its dry run: what it adds, the
// trials it queues and those it reuses, and the worker-hours when the plan
// has them.
export function extendQuestion(planned) {
  const hours = num(planned.plan?.workerHours);
  return `Add ${extendWhat(planned)} to experiment #${planned.experiment?.id}? `
    + `This queues ${integer(planned.trialsCreated)} new trials and reuses ${integer(planned.trialsReused)}`
    + `${hours ? ` (about ${hours.toFixed(hours < 10 ? 2 : 1)} worker-hours)` : ''}.`;
}

// extendNote says what an ExtendResponse added.
export function extendNote(response) {
  return `Added ${extendWhat(response)}: ${integer(response.trialsCreated)} trials queued, `
    + `${integer(response.trialsReused)} reused.`;
}

// extendAfterAsking dry-runs `request`, asks with what it would add, and
// then extends; resolves to the ExtendResponse, or null when declined.
export async function extendAfterAsking(id, request) {
  const planned = await api.extend(id, { ...request, dryRun: true });
  if (!window.confirm(extendQuestion(planned))) return null;
  return api.extend(id, request);
}

function button(id, label, onclick, kind = 'action-button') {
  return h('button', { type: 'button', class: kind, id, onclick }, label);
}

// run disables the clicked control while `work` runs; a failure goes to
// onError and re-enables it.
async function run(event, work, onError) {
  const control = event.currentTarget;
  control.disabled = true;
  try {
    await work();
  } catch (err) {
    onError(err);
  } finally {
    control.disabled = false;
  }
}

// actionsPanel returns the controls for what `experiment`'s state allows, or
// null when the viewer may not act. onChanged(message) runs after an action
// changed it (the page reloads and says what happened); onDeleted(response)
// after a delete; onError(err) on a refusal. `kept` holds what the user
// typed across the page's live refreshes.
export function actionsPanel(experiment, identity, { onChanged, onDeleted, onError, kept = {} }) {
  if (!canAct(identity, experiment)) return null;
  const state = experimentState(experiment.state);
  const id = experiment.id;
  const live = state === 'active' || state === 'paused';
  const controls = [];
  if (state === 'active') {
    controls.push(button('pause-experiment', 'Pause', (ev) => run(ev, async () => {
      await api.pause(id);
      onChanged(`Experiment #${id} paused: no new trial starts; running ones finish.`);
    }, onError)));
  }
  if (state === 'paused') {
    controls.push(button('resume-experiment', 'Resume', (ev) => run(ev, async () => {
      await api.resume(id);
      onChanged(`Experiment #${id} resumed.`);
    }, onError)));
  }
  if (live) {
    controls.push(button('cancel-experiment', 'Cancel', (ev) => run(ev, async () => {
      if (!window.confirm(cancelQuestion(experiment))) return;
      const after = await api.cancel(id);
      onChanged(`Experiment #${id} cancelled: ${integer(after.counts?.cancelled)} trials cancelled.`);
    }, onError), 'danger-button'));
    const priority = h('input', { type: 'number', id: 'priority-input', class: 'small-input', step: 1,
                                  value: kept.priority ?? String(num(experiment.priority)), 'aria-label': 'priority',
                                  oninput: (ev) => { kept.priority = ev.target.value; } });
    controls.push(h('span', { class: 'inline-form' }, h('label', { for: 'priority-input' }, 'Priority'), priority,
      button('set-priority', 'Set priority', (ev) => run(ev, async () => {
        const value = Number(priority.value);
        if (!Number.isInteger(value)) throw new Error(`priority '${priority.value}' is not an integer`);
        await api.setPriority(id, value);
        delete kept.priority;
        onChanged(`Experiment #${id} priority set to ${value}.`);
      }, onError))));
  }
  if (state !== 'cancelled') {
    const seeds = h('input', { type: 'number', id: 'add-seeds-input', class: 'small-input', min: 1, step: 1,
                               value: kept.seeds ?? '1', 'aria-label': 'seeds to add',
                               oninput: (ev) => { kept.seeds = ev.target.value; } });
    controls.push(h('span', { class: 'inline-form' }, seeds,
      button('add-seeds', 'Add seeds', (ev) => run(ev, async () => {
        const n = Number(seeds.value);
        if (!Number.isInteger(n) || n < 1) throw new Error(`seeds to add '${seeds.value}' is not a positive integer`);
        const added = await extendAfterAsking(id, { addSeeds: n });
        if (added) onChanged(extendNote(added));
      }, onError))));
  }
  if (state === 'done' || state === 'cancelled') {
    controls.push(button('delete-experiment', 'Delete experiment', (ev) => run(ev, async () => {
      const what = `experiment #${id} "${experiment.name || ''}" of ${experiment.owner || '?'}: `
        + `${integer(experiment.counts?.total)} trials with their attempts and loss curves`;
      if (!window.confirm(`Delete ${what}? This cannot be undone.`)) return;
      onDeleted(await api.deleteExperiment(id));
    }, onError), 'danger-button'));
  }
  return h('div', { class: 'actions', id: 'experiment-actions' }, controls);
}
