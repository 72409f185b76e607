// Number, time and enum formatting shared by every page. Inputs follow the
// proto JSON mapping: absent fields are defaults, int64 arrive as strings and
// non-finite doubles as "NaN" / "Infinity".

export const kDash = '\u2014';

export function num(value) {
  if (value === undefined || value === null || value === '') return 0;
  const n = typeof value === 'number' ? value : Number(value);
  return Number.isNaN(n) ? NaN : n;
}

export function fixed(value, digits = 4) {
  const n = num(value);
  return Number.isFinite(n) ? n.toFixed(digits) : kDash;
}

export function loss(value) {
  return fixed(value, 4);
}

export function signed(value, digits = 4) {
  const n = num(value);
  if (!Number.isFinite(n)) return kDash;
  const text = n.toFixed(digits);
  return n > 0 ? `+${text}` : text;
}

// interval renders "mean ± half-width" of a proto Interval (a line may break
// before the ±, never after it); a single seed has no interval, so it shows
// the mean alone.
export function interval(iv, { digits = 4, sign = false } = {}) {
  if (!iv || num(iv.n) === 0) return kDash;
  const mean = sign ? signed(iv.mean, digits) : fixed(iv.mean, digits);
  const half = (num(iv.high) - num(iv.low)) / 2;
  if (num(iv.n) < 2 || !Number.isFinite(half) || half <= 0) return mean;
  return `${mean} \u00b1\u00a0${half.toFixed(digits)}`;
}

// verdictWord is the ranking's verdict as the CLI prints it ("better",
// "worse", "inconclusive", "needs seeds"); the baseline has none.
export function verdictWord(verdict) {
  if (!verdict || verdict === 'VERDICT_UNSPECIFIED') return kDash;
  return String(verdict).replace(/^VERDICT_/, '').toLowerCase().replace('_', ' ');
}

// deltaClass colours a delta by its verdict, never by the sign of a mean:
// only a difference the multiple-comparison test found is coloured.
export function deltaClass(verdict) {
  if (verdict === 'VERDICT_BETTER') return 'delta-better';
  if (verdict === 'VERDICT_WORSE') return 'delta-worse';
  return verdict ? 'delta-unclear' : 'delta-none';
}

export function ratio(value, digits = 2) {
  const n = num(value);
  return n > 0 && Number.isFinite(n) ? `${n.toFixed(digits)}\u00d7` : kDash;
}

export function integer(value) {
  const n = num(value);
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : kDash;
}

// compact renders large counts as 123.7M / 4.2k.
export function compact(value, digits = 1) {
  const n = num(value);
  if (!Number.isFinite(n)) return kDash;
  const abs = Math.abs(n);
  if (abs >= 1e12) return `${(n / 1e12).toFixed(digits)}T`;
  if (abs >= 1e9) return `${(n / 1e9).toFixed(digits)}G`;
  if (abs >= 1e6) return `${(n / 1e6).toFixed(digits)}M`;
  if (abs >= 1e3) return `${(n / 1e3).toFixed(digits)}k`;
  return n.toFixed(abs >= 100 || Number.isInteger(n) ? 0 : digits);
}

export function percent(value, digits = 1) {
  const n = num(value);
  return Number.isFinite(n) ? `${(n * 100).toFixed(digits)}%` : kDash;
}

export function bytes(value) {
  const n = num(value);
  if (!(n > 0)) return kDash;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

export function duration(seconds) {
  const s = num(seconds);
  if (!(s > 0)) return kDash;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

export function relativeTime(unixMs, now = Date.now()) {
  const t = num(unixMs);
  if (!(t > 0)) return 'never';
  const seconds = Math.round((now - t) / 1000);
  if (seconds < 0) return 'just now';
  if (seconds < 5) return 'just now';
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86400)} d ago`;
}

export function timestamp(unixMs) {
  const t = num(unixMs);
  if (!(t > 0)) return kDash;
  const d = new Date(t);
  const pad = (x) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
         `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// shortTimestamp drops the year and, for today, the date.
export function shortTimestamp(unixMs, now = Date.now()) {
  const t = num(unixMs);
  if (!(t > 0)) return kDash;
  const full = timestamp(t);
  const today = timestamp(now).slice(0, 10);
  return full.startsWith(today) ? full.slice(11) : full.slice(5);
}

// enumLabel turns "TRIAL_COMPLETED" into "completed", "ROLE_ADMIN" into
// "admin": the proto prefix is the type's name, the rest is the value.
export function enumLabel(value, prefix) {
  if (!value) return 'unspecified';
  let text = String(value);
  if (prefix && text.startsWith(prefix)) text = text.slice(prefix.length);
  return text.toLowerCase().replace(/_/g, ' ');
}

export const trialState = (s) => enumLabel(s || 'TRIAL_STATE_UNSPECIFIED', 'TRIAL_');
export const experimentState = (s) =>
  enumLabel(s || 'EXPERIMENT_STATE_UNSPECIFIED', 'EXPERIMENT_');
export const workerState = (s) => enumLabel(s || 'WORKER_STATE_UNSPECIFIED', 'WORKER_');
export const roleName = (s) => enumLabel(s || 'ROLE_UNSPECIFIED', 'ROLE_');
export const principleName = (s) => enumLabel(s || 'PRINCIPLE_UNSPECIFIED', 'PRINCIPLE_');
