// Shared building blocks of the pages: tables, badges, progress bars, pagers
// and empty states.

import { h } from './dom.js';
import { num, percent } from './format.js';

// table builds a <table> from columns [{ label, class, sort, render(row) }]
// and rows. A column with `sort` gets a clickable header: onSort(sort) fires
// and the active sort shows an arrow.
export function table({ columns, rows, rowAttrs = () => ({}), sort = null, descending = false,
                        onSort = null, caption = null, id = null }) {
  const head = h('tr', {}, columns.map((col) => {
    if (!col.sort || !onSort) return h('th', { class: col.class, scope: 'col', title: col.title }, col.label);
    const active = sort === col.sort;
    const arrow = active ? (descending ? ' \u25bc' : ' \u25b2') : '';
    return h('th', { class: `${col.class || ''} sortable${active ? ' sorted' : ''}`, scope: 'col',
                     title: col.title, 'aria-sort': active ? (descending ? 'descending' : 'ascending') : 'none' },
             h('button', { type: 'button', class: 'sort-button', dataset: { sort: col.sort },
                           onclick: () => onSort(col.sort) }, col.label, arrow));
  }));
  const body = rows.map((row, i) => h('tr', rowAttrs(row, i),
                                      columns.map((col) => h('td', { class: col.class }, col.render(row, i)))));
  return h('div', { class: 'table-wrap' },
           h('table', { class: 'data', id }, caption ? h('caption', {}, caption) : null,
             h('thead', {}, head), h('tbody', {}, body)));
}

export function badge(text, kind = '', title = '') {
  return h('span', { class: `badge ${kind}`, title: title || undefined }, text);
}

export function stateBadge(label) {
  return badge(label, `state state-${label.replace(/\s+/g, '-')}`);
}

export function progressBar(fraction) {
  const f = Math.max(0, Math.min(1, num(fraction)));
  return h('div', { class: 'progress', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': 100,
                    'aria-valuenow': Math.round(f * 100) },
           h('div', { class: 'progress-fill', style: { width: `${(f * 100).toFixed(1)}%` } }),
           h('span', { class: 'progress-text' }, percent(f, 0)));
}

// empty is a page section's "nothing here" message; hint is text or nodes.
export function empty(text, hint = null) {
  const hasHint = Array.isArray(hint) ? hint.length > 0 : Boolean(hint);
  return h('div', { class: 'empty-state' }, h('p', {}, text), hasHint ? h('p', { class: 'muted' }, hint) : null);
}

// pager renders "first / previous / next" over token-based pages. The page
// tokens already visited live in the URL (`trail`), so the back button and a
// reload keep the place.
export function pager({ shown, offset, total, hasNext, onFirst, onPrev, onNext }) {
  const first = shown ? offset + 1 : 0;
  const last = offset + shown;
  const totalText = total !== undefined && total !== null ? ` of ${num(total).toLocaleString('en-US')}` : '';
  return h('div', { class: 'pager' },
           h('span', { class: 'pager-range' }, shown ? `${first.toLocaleString('en-US')}\u2013${last.toLocaleString('en-US')}${totalText}` : `0${totalText}`),
           h('button', { type: 'button', disabled: offset === 0, onclick: onFirst, class: 'pager-first' }, '\u00ab First'),
           h('button', { type: 'button', disabled: offset === 0, onclick: onPrev, class: 'pager-prev' }, '\u2039 Previous'),
           h('button', { type: 'button', disabled: !hasNext, onclick: onNext, class: 'pager-next' }, 'Next \u203a'));
}

export function section(title, ...children) {
  return h('section', { class: 'card' }, h('h2', {}, title), ...children);
}

export function keyValues(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// Paging state in the URL: `page` is the current token, `trail` the tokens of
// the pages before it (the first page's token is empty), so the back button
// and a reload keep the place. Tokens are opaque: each is URI-encoded before
// joining so a comma inside one cannot split it, and prefixed with `t` so
// the first page's empty token still counts.
export function pageState(query) {
  const trail = query.trail ? query.trail.split(',').map((t) => decodeURIComponent(t.slice(1))) : [];
  return { token: query.page || '', trail };
}

// pageQuery returns the query keys for moving to `where` ('first', 'prev' or
// 'next' with nextToken) from the current paging state.
export function pageQuery({ token, trail }, where, nextToken = '') {
  let nextTrail = trail;
  let page = '';
  if (where === 'next') {
    nextTrail = [...trail, token];
    page = nextToken;
  } else if (where === 'prev') {
    nextTrail = trail.slice(0, -1);
    page = trail[trail.length - 1] || '';
  } else {
    nextTrail = [];
  }
  return { page, trail: nextTrail.length ? nextTrail.map((t) => `t${encodeURIComponent(t)}`).join(',') : '' };
}
