// The queue page's worker filter (web/static/js/workers.js) in Node, no
// browser: a worker stopped or lost over an hour ago is left out and
// counted, the rest are listed by id. Exit 0 when every check holds.
import assert from 'node:assert/strict';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const source = process.argv[process.argv.indexOf('--source') + 1];
const { recentWorkers, kGoneWorkerShownMs } = await import(
  pathToFileURL(path.join(source, 'web/static/js/workers.js')).href);

const now = 1_800_000_000_000;
const hour = kGoneWorkerShownMs;
assert.equal(hour, 3600 * 1000);
// As the coordinator's JSON sends them: int64 as strings, states by name.
const workers = [
  { id: 'w-stopped-old', state: 'WORKER_STOPPED', stoppedUnixMs: String(now - hour - 1), lastHeartbeatUnixMs: String(now - 3 * hour) },
  { id: 'w-busy', state: 'WORKER_BUSY', lastHeartbeatUnixMs: String(now - 1000) },
  { id: 'w-lost-new', state: 'WORKER_LOST', lastHeartbeatUnixMs: String(now - hour + 1) },
  { id: 'w-lost-old', state: 'WORKER_LOST', lastHeartbeatUnixMs: String(now - hour - 1) },
  { id: 'w-idle', state: 'WORKER_IDLE', lastHeartbeatUnixMs: String(now - 5 * hour) },
  { id: 'w-stopped-new', state: 'WORKER_STOPPED', stoppedUnixMs: String(now - 1000) },
];
const { shown, hidden } = recentWorkers(workers, now);
assert.equal(hidden, 2);
assert.deepEqual(shown.map((w) => w.id), ['w-busy', 'w-idle', 'w-lost-new', 'w-stopped-new']);
assert.deepEqual(recentWorkers(undefined, now), { shown: [], hidden: 0 });
console.log('workers module: 3 checks passed');
