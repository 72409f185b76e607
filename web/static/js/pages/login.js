// The login gate: a token prompt shown whenever no token is stored or the
// coordinator answered 401. No data is fetched or shown until a token works.

import { api, AuthError, clearToken, saveToken } from '../api.js';
import { h, replace } from '../dom.js';

export function render({ view, message, onToken }) {
  const input = h('input', {
    id: 'token-input', name: 'token', type: 'password', autocomplete: 'current-password',
    placeholder: 'paste your token', required: true, spellcheck: 'false',
  });
  const status = h('p', { class: message ? 'login-message' : 'login-message hidden', id: 'login-message',
                          role: 'status' }, message || '');
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h('form', {
    class: 'login-card', id: 'login-form',
    onsubmit: async (event) => {
      event.preventDefault();
      const token = input.value.trim();
      if (!token) {
        status.textContent = 'Enter a token.';
        status.classList.remove('hidden');
        return;
      }
      button.disabled = true;
      saveToken(token);
      try {
        await api.whoami();
        await onToken();
      } catch (err) {
        clearToken();
        status.textContent = err instanceof AuthError ? `The token was rejected: ${err.message}.`
                                                      : err.message;
        status.classList.remove('hidden');
        button.disabled = false;
        input.select();
      }
    },
  },
  h('h1', {}, 'Sign in to Prism Search'),
  h('p', { class: 'muted' },
    'Paste a token (any role, viewer is enough). It is kept in this browser only.'),
  h('p', { class: 'muted', id: 'token-help' },
    'Where the token is: ', h('code', {}, 'prism run'), ' writes the admin token to ',
    h('code', {}, 'prism-data/admin.token'), ' (under its ', h('code', {}, '--data-dir'), '); ',
    h('code', {}, 'prism coordinator'), ' to the file its ', h('code', {}, '--admin-token-file'),
    ' names. For anyone else an admin runs ', h('code', {}, 'prism token create --user NAME --role user'),
    ' (or viewer) and hands over the token it prints.'),
  h('label', { for: 'token-input' }, 'Token'),
  input,
  status,
  button);
  document.body.dataset.page = 'login';
  view.dataset.state = 'login';
  replace(view, h('section', { class: 'login' }, form));
  input.focus();
}
