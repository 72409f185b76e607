// ASHA rungs: for a STRATEGY_ASHA experiment, every rung (RankResponse's
// ashaRungs) with the schedules that reached it, best first, their score
// there (the mean paired delta vs the baseline at that step, or the raw val
// loss while the baseline has not reached it) and whether they went on.
// Trials stopped at a rung are not in the leaderboard; this is where they
// show.

import { h } from './dom.js';
import { fixed, integer, signed } from './format.js';
import { badge, section, table } from './ui.js';

function rungTable(rung) {
  const paired = Boolean(rung.paired);
  const entries = rung.schedules || [];
  return h('div', { class: 'asha-rung', dataset: { step: String(rung.step) } },
           h('h3', {}, `Step ${integer(rung.step)}: promoted ${integer(rung.promoted || 0)} / `
                       + `quota ${integer(rung.promoteQuota || 0)} / reached ${integer(entries.length)} `
                       + `of ${integer(rung.members || 0)} members`
                       + (rung.complete ? ' (complete)' : '')
                       + (paired ? ' (paired \u0394 vs baseline)' : ' (raw val loss)')),
           table({
             columns: [
               { label: 'Schedule', render: (e) => h('code', { class: 'schedule' }, e.schedule) },
               { label: paired ? '\u0394 vs baseline' : 'Val loss', class: 'num',
                 render: (e) => (paired ? signed(e.score) : fixed(e.score)) },
               { label: 'Seeds', class: 'num', render: (e) => integer(e.seeds) },
               { label: '', render: (e) => (e.promoted ? badge('promoted', 'ok') : badge('stopped', 'muted')) },
             ],
             rows: entries,
             rowAttrs: (e) => ({ class: e.promoted ? 'promoted' : '', dataset: { schedule: e.schedule } }),
           }));
}

// ashaCard returns the card, or null for an experiment without rungs.
export function ashaCard(rungs) {
  if (!rungs || !rungs.length) return null;
  const card = section('ASHA rungs', ...rungs.map(rungTable));
  card.id = 'asha-rungs';
  return card;
}
