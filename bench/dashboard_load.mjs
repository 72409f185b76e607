// Dashboard page-load benchmark at scale: a real coordinator holding one
// finished experiment of ~10,000 trials (filled by dashboard_fill through the
// WorkerService RPCs, synthetic metrics), timed in headless Debian Chromium.
//
//   node bench/dashboard_load.mjs --prism build/prism \
//       --fill build/bench/dashboard_fill [--schedules 2500 --seeds 4] [--runs 5]
//
// A page load is a full reload, timed from navigation start to the
// dashboard's `prism:ready` mark (data fetched and every table and chart
// drawn); an in-app move (next page) by its `prism:route` measure. The first
// leaderboard load after the fill is reported apart (cold ranking cache).

import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const source = path.resolve(args.source || path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const schedules = Number(args.schedules || 2500);
const seeds = Number(args.seeds || 4);
const runs = Number(args.runs || 5);
if (!args.prism || !args.fill) {
  console.error('usage: dashboard_load.mjs --prism BIN --fill BIN [--source REPO] [--schedules N] [--seeds N] [--runs N]');
  process.exit(2);
}
const { chromium } = await import(path.join(source, 'web/node_modules/playwright-core/index.mjs'));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'prism-dashboard-bench-'));
const readyFile = path.join(tmp, 'ready.json');
const tokenFile = path.join(tmp, 'admin.token');
const logFile = path.join(tmp, 'coordinator.log');
const out = fs.openSync(logFile, 'a');
const coordinator = spawn('/usr/bin/setpriv', ['--pdeathsig', 'SIGTERM', '--', args.prism, 'coordinator',
  '--db', path.join(tmp, 'prism.db'), '--listen', '127.0.0.1:0', '--http', '127.0.0.1:0',
  '--ready-file', readyFile, '--admin-token-file', tokenFile,
  ...(args['web-root'] ? ['--web-root', args['web-root']] : [])], { stdio: ['ignore', out, out] });
let context = null;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const stats = (xs) => ({ median: Math.round(median(xs)), max: Math.round(Math.max(...xs)), runs: xs.length });

async function main() {
  let ready = null;
  for (let i = 0; i < 120 && !ready; i += 1) {
    try { ready = JSON.parse(fs.readFileSync(readyFile, 'utf8')); } catch { await sleep(500); }
  }
  if (!ready) throw new Error(`coordinator not ready; log:\n${fs.readFileSync(logFile, 'utf8')}`);
  const token = fs.readFileSync(tokenFile, 'utf8').trim();

  const fillStart = Date.now();
  const { stdout, stderr } = await execFileAsync(args.fill, ['--coordinator', ready.grpc, '--token-file', tokenFile,
    '--schedules', String(schedules), '--seeds', String(seeds)], { maxBuffer: 1 << 24, timeout: 3_600_000 });
  const experimentId = stdout.trim().split('\n').pop();
  console.log(stderr.trim().split('\n').slice(-1)[0]);
  console.log(`filled experiment ${experimentId} in ${((Date.now() - fillStart) / 1000).toFixed(1)} s`);

  const headers = { Authorization: `Bearer ${token}` };
  const base = `http://${ready.http}`;
  const experiment = await (await fetch(`${base}/api/v1/experiments/${experimentId}`, { headers })).json();

  context = await chromium.launchPersistentContext(path.join(tmp, 'profile'), {
    executablePath: '/usr/bin/chromium', headless: true, viewport: { width: 1400, height: 1000 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = await context.newPage();
  await page.goto(`${base}/`);
  await page.evaluate((t) => localStorage.setItem('prism_token', t), token);

  const load = async (hash) => {
    await page.goto(`${base}/#${hash}`);
    await page.reload();
    await page.waitForFunction(() => performance.getEntriesByName('prism:ready').length > 0, null, { timeout: 60_000 });
    return page.evaluate(() => performance.getEntriesByName('prism:ready')[0].startTime);
  };
  const timeLoads = async (hash) => {
    const times = [];
    for (let i = 0; i < runs; i += 1) times.push(await load(hash));
    return times;
  };

  const board = `/experiments/${experimentId}`;
  const cold = await load(board);
  const rows = await page.locator('#leaderboard-table tbody tr').count();
  const total = await page.locator('#rank-total').getAttribute('data-total');
  const warm = await timeLoads(board);
  const filtered = await timeLoads(`${board}?sort=delta&require=smooth,pow2`);
  const filteredTotal = await page.locator('#rank-total').getAttribute('data-total');

  await load(board);
  const nextTimes = [];
  for (let i = 0; i < runs; i += 1) {
    await page.evaluate(() => performance.clearMeasures());
    await page.click('.pager-next');
    const measured = await page.waitForFunction(
      () => performance.getEntriesByName('prism:route')[0]?.duration, null, { timeout: 60_000 });
    nextTimes.push(await measured.jsonValue());
  }
  const deepRank = await page.locator('#leaderboard-table tbody tr td.rank').first().textContent();

  const top = await (await fetch(`${base}/api/v1/experiments/${experimentId}/rank?page_size=1`, { headers })).json();
  const trialId = top.schedules[0].trialIds[0];
  const trialTimes = await timeLoads(`/trials/${trialId}`);
  const queueTimes = await timeLoads('/');

  const apiTimes = async (route) => {
    const times = [];
    for (let i = 0; i < runs; i += 1) {
      const t0 = performance.now();
      const response = await fetch(`${base}${route}`, { headers });
      await response.arrayBuffer();
      times.push(performance.now() - t0);
    }
    return stats(times);
  };
  const result = {
    trials: experiment.counts.total,
    schedules_ranked: Number(total),
    rows_on_page: rows,
    leaderboard_cold_ms: Math.round(cold),
    leaderboard_ms: stats(warm),
    leaderboard_sorted_filtered_ms: { ...stats(filtered), total: Number(filteredTotal) },
    leaderboard_next_page_ms: { ...stats(nextTimes), reached_rank: Number(deepRank) },
    trial_page_ms: stats(trialTimes),
    queue_page_ms: stats(queueTimes),
    api_rank_page_ms: await apiTimes(`/api/v1/experiments/${experimentId}/rank?page_size=50`),
    api_trial_ms: await apiTimes(`/api/v1/trials/${trialId}?with_baseline=1`),
  };
  console.log(JSON.stringify(result, null, 2));
}

try {
  await main();
} finally {
  if (context) await context.close().catch(() => {});
  coordinator.kill('SIGTERM');
  await new Promise((resolve) => { coordinator.once('exit', resolve); setTimeout(resolve, 15_000); });
  fs.rmSync(tmp, { recursive: true, force: true });
}
