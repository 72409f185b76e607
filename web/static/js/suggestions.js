// Suggestions: the untried schedules a surrogate, fitted on the experiment's
// finished schedules, proposes to train next (ResultsService.Suggest over
// GET /api/v1/experiments/{id}/suggest), each with its predicted paired delta
// vs the baseline ± the surrogate's uncertainty, in the order of the lower
// confidence bound. Until the surrogate can be fitted (too few finished
// schedules) the card says why, in the coordinator's words. The card's
// `suggested` lists the schedules shown, for the page's "train these".

import { api, ApiError } from './api.js';
import { h } from './dom.js';
import { fixed, signed } from './format.js';
import { layerHeads, staircase } from './staircase.js';
import { empty, section, table } from './ui.js';

const kSuggestions = 10;

function scheduleCell(s) {
  const heads = layerHeads(s.principles, s.schedule);
  return h('div', { class: 'schedule-cell' },
           staircase(heads, { label: `${s.schedule}: heads per layer ${heads.join(' ')}` }),
           h('code', { class: 'schedule' }, s.schedule));
}

// suggestionsCard resolves to the card; a 400 (the surrogate cannot be fitted
// yet) becomes its text, any other failure rejects as the page's would.
export async function suggestionsCard(experimentId) {
  let response;
  try {
    response = await api.suggest(experimentId, { n: kSuggestions });
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 400) throw err;
    const card = section('Suggested next schedules',
                         empty('No suggestions yet.', h('span', { id: 'suggestions-reason' }, err.reason || err.message)));
    card.id = 'suggestions';
    return card;
  }
  const rows = response.suggestions || [];
  const card = section('Suggested next schedules',
                       rows.length ? table({
                         id: 'suggestions-table',
                         columns: [
                           { label: 'Schedule', render: scheduleCell },
                           { label: 'Predicted \u0394 \u00b1 uncertainty', class: 'num',
                             title: 'the surrogate\u2019s predicted paired delta of final val loss vs the baseline '
                                    + '(negative is better) \u00b1 the sd of its bootstrap ensemble',
                             render: (s) => h('span', { class: 'prediction' },
                                              `${signed(s.predictedDelta)} \u00b1 ${fixed(s.uncertainty)}`) },
                           { label: 'Lower bound', class: 'num', title: 'predicted \u0394 \u2212 uncertainty: the rank order',
                             render: (s) => signed(s.acquisition) },
                         ],
                         rows,
                         rowAttrs: (s) => ({ dataset: { schedule: s.schedule } }),
                       }) : empty('Every schedule of the space has been tried.'),
                       h('p', { class: 'muted', id: 'suggestions-method' }, response.method || ''));
  card.id = 'suggestions';
  card.suggested = rows.map((row) => row.schedule);
  return card;
}
