// The dashboard's shell: hash routing, the login gate, the error banner and
// live refresh. Pages live in pages/*.js; each exports
// `render(ctx) -> Promise<void>` that fills ctx.view from the JSON API and
// may call ctx.live(...) to be re-rendered while data changes.
//
// Routes:
//   #/                          queue (experiments + workers)
//   #/experiments/ID?sort=..    leaderboard
//   #/experiments/ID/trials     the experiment's trials
//   #/experiments/ID/schedules/SCHEDULE
//                               one schedule: every seed's trial, the
//                               paired delta vs the baseline over steps
//   #/trials/ID                 one trial against its baseline
//   #/submit                    plan (dry run) and submit a spec

import { api, AuthError, clearToken, saveToken, storedToken, subscribe } from './api.js';
import { h, replace } from './dom.js';
import { roleName } from './format.js';
import * as login from './pages/login.js';
import * as queue from './pages/queue.js';
import * as leaderboard from './pages/leaderboard.js';
import * as trials from './pages/trials.js';
import * as trial from './pages/trial.js';
import * as schedule from './pages/schedule.js';
import * as submit from './pages/submit.js';

// Live views refresh at most this often, whether driven by events or polling.
const kRefreshMs = 2000;

const view = document.getElementById('view');
const banner = document.getElementById('banner');
const nav = document.getElementById('nav');
const whoamiBox = document.getElementById('whoami');

let generation = 0;  // bumps on every navigation; stale renders stop early
let stopLive = () => {};
let identity = null;

let notice = '';  // shown once by the next page (e.g. "experiment deleted")

export function showError(message, { isNotice = false } = {}) {
  if (!message) {
    banner.hidden = true;
    replace(banner);
    return;
  }
  banner.classList.toggle('banner-notice', isNotice);
  replace(banner, h('span', {}, message),
          h('button', { class: 'banner-close', type: 'button', 'aria-label': 'dismiss',
                        onclick: () => showError('') }, '\u00d7'));
  banner.hidden = false;
}

function parseHash() {
  const raw = window.location.hash.replace(/^#/, '') || '/';
  const [path, search = ''] = raw.split('?');
  const query = Object.fromEntries(new URLSearchParams(search));
  const parts = path.split('/').filter(Boolean);
  if (parts.length === 0) return { page: queue, params: {}, query, name: 'queue' };
  if (parts[0] === 'experiments' && parts[1] && parts.length === 2) {
    return { page: leaderboard, params: { id: parts[1] }, query, name: 'leaderboard' };
  }
  if (parts[0] === 'experiments' && parts[1] && parts[2] === 'schedules' && parts[3] && parts.length === 4) {
    return { page: schedule, params: { id: parts[1], schedule: decodeURIComponent(parts[3]) }, query, name: 'schedule' };
  }
  if (parts[0] === 'submit' && parts.length === 1) return { page: submit, params: {}, query, name: 'submit' };
  if (parts[0] === 'experiments' && parts[1] && parts[2] === 'trials') {
    return { page: trials, params: { id: parts[1] }, query, name: 'trials' };
  }
  if (parts[0] === 'trials' && parts[1]) {
    return { page: trial, params: { id: parts[1] }, query, name: 'trial' };
  }
  return null;
}

export function navigate(path, query = {}) {
  const search = new URLSearchParams(
      Object.entries(query).filter(([, v]) => v !== undefined && v !== null && v !== ''));
  const text = search.toString();
  window.location.hash = text ? `${path}?${text}` : path;
}

function showLogin(message) {
  stopLive();
  stopLive = () => {};
  identity = null;
  nav.hidden = true;
  whoamiBox.hidden = true;
  showError('');
  document.body.dataset.auth = 'out';
  login.render({
    view,
    message,
    onToken: async () => {
      identity = null;
      await route();
    },
  });
}

function showIdentity() {
  nav.hidden = false;
  whoamiBox.hidden = false;
  document.body.dataset.auth = 'in';
  replace(whoamiBox,
          h('span', { class: 'who' }, identity.user || 'unknown'),
          h('span', { class: 'role' }, roleName(identity.role)),
          h('button', {
            type: 'button', class: 'link-button', id: 'sign-out',
            onclick: () => {
              clearToken();
              showLogin('Signed out.');
            },
          }, 'Sign out'));
}

// live keeps the current page fresh: server-sent events for one experiment
// when given (falling back to polling if the stream breaks), polling
// otherwise; either way at most one refresh per kRefreshMs, never two at once.
function makeLive(gen, refresh) {
  return ({ experimentId } = {}) => {
    stopLive();
    let pending = false;
    let running = false;
    // The page has just loaded its data: the first refresh (e.g. for the
    // snapshot event a new stream sends) waits its turn like any other.
    let last = Date.now();
    let timer = null;
    let poll = null;
    let closeStream = () => {};
    const run = async () => {
      if (gen !== generation) return;
      if (running) {
        pending = true;
        return;
      }
      const wait = last + kRefreshMs - Date.now();
      if (wait > 0) {
        if (!timer) timer = setTimeout(() => { timer = null; run(); }, wait);
        return;
      }
      running = true;
      pending = false;
      last = Date.now();
      try {
        await refresh();
        if (gen === generation) showError('');
      } catch (err) {
        handleError(err);
      } finally {
        running = false;
      }
      if (pending) run();
    };
    const startPolling = () => {
      if (!poll) poll = setInterval(() => { if (!document.hidden) run(); }, kRefreshMs);
    };
    if (experimentId) {
      closeStream = subscribe(experimentId, () => run(), startPolling);
    } else {
      startPolling();
    }
    stopLive = () => {
      closeStream();
      if (poll) clearInterval(poll);
      if (timer) clearTimeout(timer);
      poll = null;
      timer = null;
    };
  };
}

function handleError(err) {
  if (err instanceof AuthError) {
    clearToken();
    showLogin(`Sign in again: ${err.message}.`);
    return;
  }
  showError(err.message || String(err));
}

async function route() {
  generation += 1;
  const gen = generation;
  // Timing marks for bench/dashboard_load.mjs: a reload is timed from
  // navigation start to `prism:ready`, an in-app move by `prism:route`.
  performance.clearMarks();
  performance.clearMeasures();
  performance.mark('prism:route-start');
  stopLive();
  stopLive = () => {};
  const match = parseHash();
  try {
    if (!identity) {
      if (!storedToken() && !document.cookie.includes('prism_token=')) {
        showLogin('');
        return;
      }
      identity = await api.whoami();
      if (gen !== generation) return;
      // The cookie (which the event stream needs) lasts one browser session;
      // the stored token outlives it, so renew the cookie from it.
      if (storedToken()) saveToken(storedToken());
      showIdentity();
    }
    showError(notice, { isNotice: true });
    notice = '';
    for (const link of nav.querySelectorAll('a')) {
      link.classList.toggle('active', match && link.dataset.nav === match.name);
    }
    if (!match) {
      replace(view, h('section', { class: 'empty' }, h('h1', {}, 'Not found'),
                      h('p', {}, 'No page lives at this address.'), h('a', { href: '#/' }, 'Back to the queue')));
      view.dataset.state = 'ready';
      return;
    }
    document.body.dataset.page = match.name;
    view.dataset.state = 'loading';
    const ctx = {
      view,
      params: match.params,
      query: match.query,
      navigate,
      isCurrent: () => gen === generation,
      live: null,
      // Who is signed in (WhoAmIResponse): pages show actions only to
      // those the coordinator would let act (it checks every one anyway).
      identity,
      // notify leaves a message for the next page; fail shows an error.
      notify: (message) => { notice = message; },
      // reload renders the page afresh (after an action changed its data).
      reload: () => { route(); },
      fail: handleError,
    };
    let refresh = async () => {};
    ctx.live = (options, refresher) => {
      refresh = refresher;
      makeLive(gen, () => refresh())(options);
    };
    await match.page.render(ctx);
    if (gen === generation) {
      view.dataset.state = 'ready';
      performance.mark('prism:ready');
      performance.measure('prism:route', 'prism:route-start', 'prism:ready');
    }
  } catch (err) {
    if (gen !== generation) return;
    view.dataset.state = 'error';
    if (!(err instanceof AuthError)) {
      replace(view, h('section', { class: 'empty' }, h('h1', {}, 'This page could not be loaded'),
                      h('p', { class: 'muted' }, 'The reason is in the banner above.'),
                      h('a', { href: '#/' }, 'Back to the queue')));
    }
    handleError(err);
  }
}

window.addEventListener('hashchange', route);
document.addEventListener('visibilitychange', () => {
  if (!document.hidden && document.body.dataset.auth === 'in') route();
});
route();
