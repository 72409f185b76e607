// The dashboard's only way to the coordinator: its JSON API (protobuf's JSON
// mapping of prism.proto messages: lowerCamelCase names, int64 as strings,
// enums as names, default values omitted). Its writes (submit, cancel,
// pause, resume, priority, extend, delete, logout) are POSTs the coordinator
// answers only from this origin, as the caller: the owner or an admin, the
// RPCs' rule, whatever the page shows.
//
// The token lives in localStorage and in the `prism_token` cookie
// (SameSite=Strict): fetch sends it as a bearer header, EventSource (which
// cannot set headers) relies on the cookie. Over HTTPS the coordinator sets
// the cookie itself in its whoami answer (HttpOnly, Secure), so no script
// can read it, and /api/v1/logout expires it. Any 401 raises AuthError, which
// the router turns into the login prompt.

const kStorageKey = 'prism_token';
const kServerCookie = window.location.protocol === 'https:';

export class AuthError extends Error {
  constructor(message) {
    super(message);
    this.name = 'AuthError';
  }
}

export class ApiError extends Error {
  // reason is the coordinator's own error text, without the path and status.
  constructor(status, message, reason = '') {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.reason = reason;
  }
}

export function storedToken() {
  try {
    return localStorage.getItem(kStorageKey) || '';
  } catch {
    return '';
  }
}

// Cookie values may not hold spaces, quotes, commas, semicolons or
// backslashes; a token with any of those travels in the header only.
function cookieSafe(token) {
  return /^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+$/.test(token);
}

export function saveToken(token) {
  try {
    localStorage.setItem(kStorageKey, token);
  } catch {
    // Private browsing without storage: the cookie still carries the token.
  }
  if (!kServerCookie && cookieSafe(token)) {
    document.cookie = `${kStorageKey}=${token}; Path=/; SameSite=Strict`;
  }
}

export function clearToken() {
  try {
    localStorage.removeItem(kStorageKey);
  } catch {
    // Nothing stored.
  }
  if (kServerCookie) {
    fetch('/api/v1/logout', { method: 'POST', credentials: 'same-origin' }).catch(() => {});
  } else {
    document.cookie = `${kStorageKey}=; Path=/; Max-Age=0; SameSite=Strict`;
  }
}

// getJson fetches an API path with the stored token; resolves to the parsed
// body, rejects with AuthError on 401 and ApiError on any other failure.
export function getJson(path, params = {}) {
  return requestJson('GET', path, params);
}

// postJson is getJson for the state-changing routes: `body` is an object
// (sent as JSON) or a string (sent as text: a spec's textproto).
export function postJson(path, body = undefined) {
  return requestJson('POST', path, {}, body);
}

async function requestJson(method, path, params, body = undefined) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') {
      url.searchParams.set(key, String(value));
    }
  }
  const headers = { Accept: 'application/json' };
  const token = storedToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers, credentials: 'same-origin' };
  if (body !== undefined) {
    const isText = typeof body === 'string';
    headers['Content-Type'] = isText ? 'text/plain; charset=utf-8' : 'application/json';
    init.body = isText ? body : JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    throw new ApiError(0, `cannot reach the coordinator (${err.message})`);
  }
  let answer = null;
  const text = await response.text();
  if (text) {
    try {
      answer = JSON.parse(text);
    } catch {
      answer = null;
    }
  }
  if (response.status === 401) {
    throw new AuthError((answer && answer.error) || 'the token was not accepted');
  }
  if (!response.ok) {
    const reason = (answer && answer.error) || text || response.statusText;
    throw new ApiError(response.status, `${url.pathname}: ${reason} (HTTP ${response.status})`, reason);
  }
  if (answer === null) {
    throw new ApiError(response.status, `${url.pathname}: the response is not JSON`);
  }
  return answer;
}

const experimentPath = (id, rest = '') => `/api/v1/experiments/${encodeURIComponent(id)}${rest}`;

export const api = {
  whoami: () => getJson('/api/v1/whoami'),
  experiments: (params) => getJson('/api/v1/experiments', params),
  experiment: (id) => getJson(`/api/v1/experiments/${encodeURIComponent(id)}`),
  rank: (id, params) => getJson(`/api/v1/experiments/${encodeURIComponent(id)}/rank`, params),
  ladder: (id) => getJson(`/api/v1/experiments/${encodeURIComponent(id)}/ladder`),
  suggest: (id, params) => getJson(`/api/v1/experiments/${encodeURIComponent(id)}/suggest`, params),
  trials: (id, params) => getJson(`/api/v1/experiments/${encodeURIComponent(id)}/trials`, params),
  trial: (id) => getJson(`/api/v1/trials/${encodeURIComponent(id)}`, { with_baseline: 1 }),
  workers: () => getJson('/api/v1/workers'),
  // compare: ResultsService.Compare of schedules a and b (b - a, paired).
  compare: (id, a, b) => getJson(experimentPath(id, '/compare'), { a, b }),
  // deleteExperiment resolves to the DeleteExperimentResponse (what went).
  deleteExperiment: (id) => postJson(experimentPath(id, '/delete')),
  // cancel, pause, resume and setPriority resolve to the stored Experiment.
  cancel: (id) => postJson(experimentPath(id, '/cancel')),
  pause: (id) => postJson(experimentPath(id, '/pause')),
  resume: (id) => postJson(experimentPath(id, '/resume')),
  setPriority: (id, priority) => postJson(experimentPath(id, '/priority'), { priority }),
  // extend takes an ExtendRequest's fields ({ addSeeds } or { schedules });
  // resolves to the ExtendResponse.
  extend: (id, request) => postJson(experimentPath(id, '/extend'), request),
  // plan and submit take the spec's textproto; resolve to a SubmitResponse
  // (plan's a dry run: nothing stored).
  plan: (specText) => postJson('/api/v1/plan', specText),
  submit: (specText) => postJson('/api/v1/submit', specText),
};

// subscribe opens the experiment's server-sent event stream and calls onEvent
// with each parsed ExperimentEvent; onError fires when the stream breaks (the
// caller falls back to polling). Returns a function that closes the stream.
export function subscribe(experimentId, onEvent, onError) {
  if (typeof EventSource === 'undefined') {
    onError(new Error('no EventSource'));
    return () => {};
  }
  const url = `/api/v1/events?experiment=${encodeURIComponent(experimentId)}`;
  const source = new EventSource(url, { withCredentials: true });
  source.onmessage = (message) => {
    try {
      onEvent(JSON.parse(message.data));
    } catch {
      // A malformed event is dropped; the next poll or event resynchronises.
    }
  };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) onError(new Error('event stream closed'));
  };
  return () => source.close();
}
