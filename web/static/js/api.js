// The dashboard's only way to the coordinator: its JSON API (protobuf's JSON
// mapping of prism.proto messages: lowerCamelCase names, int64 as strings,
// enums as names, default values omitted), read-only but for deleting an
// experiment and logging out (POSTs the coordinator answers only from this
// origin).
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

// postJson is getJson for the state-changing routes (no body).
export function postJson(path) {
  return requestJson('POST', path, {});
}

async function requestJson(method, path, params) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') {
      url.searchParams.set(key, String(value));
    }
  }
  const headers = { Accept: 'application/json' };
  const token = storedToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch(url, { method, headers, credentials: 'same-origin' });
  } catch (err) {
    throw new ApiError(0, `cannot reach the coordinator (${err.message})`);
  }
  let body = null;
  const text = await response.text();
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
  }
  if (response.status === 401) {
    throw new AuthError((body && body.error) || 'the token was not accepted');
  }
  if (!response.ok) {
    const reason = (body && body.error) || text || response.statusText;
    throw new ApiError(response.status, `${url.pathname}: ${reason} (HTTP ${response.status})`, reason);
  }
  if (body === null) {
    throw new ApiError(response.status, `${url.pathname}: the response is not JSON`);
  }
  return body;
}

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
  // deleteExperiment resolves to the DeleteExperimentResponse (what went).
  deleteExperiment: (id) => postJson(`/api/v1/experiments/${encodeURIComponent(id)}/delete`),
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
