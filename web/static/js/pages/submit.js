// Submit: paste a spec (textproto, as `prism submit FILE` takes) or pick a
// file; "Plan" asks the coordinator for a dry run (POST /api/v1/plan:
// SubmitRequest.spec_text with dry_run, nothing stored) and shows the trials,
// the caller's headroom against each limit and the bill (PlanEstimate: every
// field the coordinator set); a spec that does not parse shows the
// coordinator's "spec_text:LINE:COL: ..." with the line it points at. Then
// "Submit" stores it (POST /api/v1/submit) and opens the experiment.

import { api, ApiError } from '../api.js';
import { h, replace } from '../dom.js';
import { compact, duration, integer, num, percent } from '../format.js';
import { empty, keyValues, section } from '../ui.js';

// parseLocation finds "spec_text:LINE:COL" in a coordinator error; null when
// the error names no place in the text.
export function parseLocation(message) {
  const match = /spec_text:(\d+):(\d+)/.exec(message || '');
  return match ? { line: Number(match[1]), column: Number(match[2]) } : null;
}

// workerTime renders worker-hours as a duration (9.0 s, 3 min 12 s, 40 h
// 5 min): a tiny spec's bill is seconds.
const workerTime = (hours) => duration(num(hours) * 3600);

// planRows lists the PlanEstimate fields that are set, each in words.
function planRows(plan = {}) {
  const rows = [
    ['Schedules', plan.schedules, integer],
    ['Trials queued now', plan.trials, integer],
    ['Seeds per schedule', plan.seeds, integer],
    ['Steps (expected)', plan.steps, compact],
    ['Steps (at most)', plan.maxSteps, compact],
    ['Grid steps', plan.gridSteps, compact],
    ['Share of the grid (expected)', plan.expectedShare, (v) => percent(v)],
    ['Share of the grid (at most)', plan.maxShare, (v) => percent(v)],
    ['Share from', plan.shareSource, String],
    ['Tokens per step', plan.tokensPerStep, integer],
    ['Tokens (expected)', plan.tokens, compact],
    ['Tokens (at most)', plan.maxTokens, compact],
    ['Corpus tokens', plan.corpusTokens, compact],
    ['Parameters', plan.parameters, (v) => compact(v, 2)],
    ['FLOPs per token', plan.flopsPerToken, (v) => compact(v, 2)],
    ['FLOPs (expected)', plan.flops, (v) => compact(v, 2)],
    ['Tokens/s per worker', plan.tokensPerSecond, compact],
    ['Throughput from', plan.throughputSource, String],
    ['Worker time (expected)', plan.workerHours, workerTime],
    ['Worker time (at most)', plan.maxWorkerHours, workerTime],
  ];
  return rows.filter(([, value]) => value !== undefined && value !== null && value !== '')
    .map(([label, value, format]) => [label, h('span', { dataset: { field: label } }, format(value))]);
}

function headroomRows(r = {}) {
  const of = (used, max) => (num(max) ? `${integer(used)} of ${integer(max)}` : `${integer(used)} (no limit)`);
  return [
    ['This experiment\u2019s trials', of(r.trials, r.maxTrialsPerExperiment)],
    ['Your queued trials, with these', of(r.queuedTrials, r.maxQueuedTrials)],
    ['Your active experiments, with this', of(r.activeExperiments, r.maxActiveExperiments)],
    ['Spec size (bytes)', of(r.specBytes, r.maxStoredSpecBytes)],
  ];
}

function planView(response) {
  const plan = response.plan || {};
  const warnings = plan.warnings || [];
  const rows = planRows(plan);
  return h('div', { id: 'plan-result' },
           h('p', { id: 'plan-trials', dataset: { trials: String(num(response.trialsCreated)) } },
             `A submit would queue ${integer(response.trialsCreated)} trials. Nothing is stored yet.`),
           warnings.length ? h('ul', { class: 'plan-warnings', id: 'plan-warnings' },
                               warnings.map((w) => h('li', {}, w))) : null,
           h('div', { class: 'two-col' },
             section('The bill', rows.length ? keyValues(rows)
                                             : empty('The coordinator sent no estimate for this spec.')),
             section('Your headroom', keyValues(headroomRows(response.headroom)))));
}

// errorView shows the coordinator's reason and, when it names a place in
// the spec, that line with a caret under the column.
function errorView(message, text) {
  const where = parseLocation(message);
  const line = where ? (text.split('\n')[where.line - 1] ?? '') : null;
  return h('div', { class: 'submit-error', id: 'submit-error',
                    dataset: where ? { line: String(where.line), column: String(where.column) } : {} },
           h('p', { class: 'error-text' }, message),
           where ? h('p', {}, `Line ${where.line}, column ${where.column}:`) : null,
           where ? h('pre', { class: 'error-line' }, `${line}\n${' '.repeat(Math.max(0, where.column - 1))}^`) : null);
}

export async function render(ctx) {
  const text = h('textarea', { id: 'spec-text', rows: 18, spellcheck: 'false', class: 'spec-text',
                               placeholder: 'name: "my search"\nmodel { preset: "tiny" }\nschedules: "2x2,4x4"\nseeds: [1, 2]' });
  const file = h('input', { type: 'file', id: 'spec-file', accept: '.textproto,.txtpb,.pbtxt,.txt,text/plain' });
  const result = h('div', { id: 'submit-result' });
  const planButton = h('button', { type: 'button', id: 'plan-button', class: 'primary' }, 'Plan');
  const submitButton = h('button', { type: 'button', id: 'submit-button', class: 'action-button', disabled: true },
                         'Submit');
  let planned = null;  // the text the last successful plan was for
  const changed = () => {
    planned = null;
    submitButton.disabled = true;
  };
  text.addEventListener('input', changed);
  file.addEventListener('change', async () => {
    const picked = file.files && file.files[0];
    if (!picked) return;
    text.value = await picked.text();
    changed();
  });
  const attempt = async (button, work) => {
    button.disabled = true;
    try {
      await work();
    } catch (err) {
      if (!(err instanceof ApiError) || err.status === 0 || err.status >= 500) throw err;
      replace(result, errorView(err.reason || err.message, text.value));
    } finally {
      button.disabled = false;
      submitButton.disabled = planned !== text.value;
    }
  };
  planButton.addEventListener('click', () => attempt(planButton, async () => {
    const spec = text.value;
    replace(result);
    const response = await api.plan(spec);
    planned = spec;
    replace(result, planView(response));
  }).catch(ctx.fail));
  submitButton.addEventListener('click', () => attempt(submitButton, async () => {
    const response = await api.submit(text.value);
    const id = response.experiment?.id;
    ctx.notify(`Experiment #${id} submitted: ${integer(response.trialsCreated)} trials queued.`);
    ctx.navigate(`/experiments/${id}`, {});
  }).catch(ctx.fail));
  replace(ctx.view,
          h('div', { class: 'page-head' },
            h('div', { class: 'crumbs' }, h('a', { href: '#/' }, 'Queue'), ' / submit'),
            h('h1', {}, 'Submit an experiment')),
          section('Spec (textproto)',
                  h('p', { class: 'muted' }, 'Paste an ExperimentSpec as ', h('code', {}, 'prism submit FILE'),
                    ' takes it, or pick a file. Plan first: it checks everything and shows the bill; nothing is '
                    + 'stored until Submit.'),
                  h('div', { class: 'controls' }, file),
                  text,
                  h('div', { class: 'controls' }, planButton, submitButton)),
          result);
}
