// Browser test of the dashboard against a real coordinator and real workers.
//
// It starts `prism coordinator` (temp dir, port 0, --ready-file, an admin
// token file) and two `prism worker`s, submits a tiny experiment (3 trials of
// 30 steps), waits until the experiment is done through the JSON API, then
// drives Debian's Chromium through playwright-core:
//   * a missing token and a bad token show the login prompt and no data;
//   * the leaderboard's row count equals the rank total of `prism results`
//     over RPC, each row's verdict, speed-up seed counts and tokens/s pairing
//     are the RPC's, and the principle-effects chart drew its bars (canvas
//     pixels of the series colours, not just a canvas element); each principle's
//     effect (or "not estimable" and why) is the RPC's; the suggestion card
//     gives the coordinator's reason for having none yet (too few schedules);
//   * a click on a schedule opens its trial: loss, learning-rate and
//     attention-distance curves drawn against the baseline's, metrics shown;
//   * over HTTPS (a second coordinator with deploy/tls/make-certs.sh's
//     certificates) signing in leaves the token cookie to the server:
//     HttpOnly, Secure, SameSite=Strict, unseen by scripts; signing out
//     expires it.
//   * at 1280x800 and 1920x1080 neither the page nor the leaderboard's
//     table scrolls sideways (scrollWidth <= clientWidth); a screenshot of
//     each, and dashboard.png (the 1280x800 window over the finished
//     experiment's leaderboard, which `make screenshot` copies to
//     docs/dashboard.png);
//   * a second, ASHA experiment's page summarises its rung, plots one series
//     per schedule that reached it (the promoted ones highlighted, the
//     rung's quota cut-off drawn), and tables the top rows: the promoted
//     ones, "Show all" for every schedule, each score the RPC's.
//   * a ladder's (issue #30) page plots the transfer: one point per carried
//     schedule at the LadderTransfer RPC's two deltas, the baseline at 0,0,
//     the RPC's Spearman and Kendall in the caption.
//   * issue #40: every page above loads without a Content-Security-Policy
//     violation; a page served from another origin (a second HTTP server on
//     another loopback port: same site, so the SameSite cookie travels)
//     cannot frame the dashboard, and its cross-origin POSTs to logout and
//     to delete the finished experiment are refused (403): the user is still
//     signed in and the experiment still there, through the API; the
//     experiment page's Delete button asks first (dismissed: nothing
//     happens) and, confirmed, deletes it: the API answers 404 after.
//   * issue #41, what a user does from the dashboard, each checked through
//     the API or the CLI's RPCs after it: at 1024x768 the principle-effects
//     table fits its card; the leaderboard's CSV export holds every ranked
//     schedule with the RPC's numbers; the comparison card shows `prism
//     compare`'s delta, interval and verdict; a schedule's link opens its
//     page: every seed's trial, and the paired delta vs the baseline over
//     steps whose mean and t-interval across seeds the test recomputes from
//     the trials' curves, downloaded as SVG (its points) and PNG (drawn);
//     on a finished experiment, "train these suggestions" queues the RPC's
//     suggested schedules and "add seeds" a seed for the trained ones, every
//     trial it had kept as it was;
//     on a second coordinator without workers, as a user: pause, resume,
//     priority, a cross-origin page's forged pause (form), cancel and
//     submit (fetch with the cookie) refused with nothing changed, cancel
//     (its confirmation naming the queued and running trials; dismissed
//     first), a cancelled experiment at 0% progress, and the submit page:
//     a spec with an unknown field shows the coordinator's line and column
//     and stores nothing, a good one shows the dry run's trials, then
//     submits them.
// Screenshots go to --artifacts (printed). Every process it started is
// stopped on success and on failure.
//
// Exit: 0 pass, 1 fail, 77 skipped (no Chromium or no web/node_modules; the
// README's setup installs both).
//
//   node dashboard_test.mjs --prism build/prism --source . --artifacts DIR

import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const kSkip = 77;
const kOverallDeadlineMs = 540_000;  // below the ctest TIMEOUT, so cleanup runs
const kChromiumArgs = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];
// The dashboard's series colours (web/static/js/charts.js kColors).
const kPrism = [0x4f, 0x46, 0xe5];
const kBaseline = [0x9a, 0x34, 0x12];
const kSatisfied = [0x15, 0x80, 0x3d];
const kViolated = [0xb9, 0x1c, 0x1c];

const execFileAsync = promisify(execFile);

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 1) {
    const key = argv[i].replace(/^--/, '');
    args[key] = argv[i + 1];
    i += 1;
  }
  for (const required of ['prism', 'source', 'artifacts']) {
    if (!args[required]) {
      console.error(`usage: dashboard_test.mjs --prism BIN --source DIR --artifacts DIR (missing --${required})`);
      process.exit(2);
    }
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
args.prism = path.resolve(args.prism);
const chromiumPath = process.env.PRISM_CHROMIUM || '/usr/bin/chromium';
const playwrightEntry = path.join(args.source, 'web/node_modules/playwright-core/index.mjs');

if (!fs.existsSync(chromiumPath)) {
  console.log(`SKIPPED: no Chromium at ${chromiumPath} (deploy/setup.sh installs Debian's chromium)`);
  process.exit(kSkip);
}
if (!fs.existsSync(playwrightEntry)) {
  console.log(`SKIPPED: ${playwrightEntry} is missing (deploy/setup.sh runs npm ci in web/)`);
  process.exit(kSkip);
}
const { chromium } = await import(playwrightEntry);

const children = [];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'prism-browser-'));
const artifacts = path.resolve(args.artifacts);
fs.mkdirSync(artifacts, { recursive: true });
let browserContext = null;
let passed = 0;

function log(message) {
  console.log(`[${new Date().toISOString().slice(11, 19)}] ${message}`);
}

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
  passed += 1;
  log(`ok - ${message}`);
}

// start runs a prism subcommand with its output in a log file. Under setpriv
// the child gets SIGTERM if this script dies (e.g. killed by ctest), so no
// coordinator or worker outlives the test.
function start(name, argv) {
  const logPath = path.join(tmp, `${name}.log`);
  const out = fs.openSync(logPath, 'a');
  const setpriv = '/usr/bin/setpriv';
  const [command, commandArgs] = fs.existsSync(setpriv)
    ? [setpriv, ['--pdeathsig', 'SIGTERM', '--', args.prism, ...argv]]
    : [args.prism, argv];
  // cwd: the worker builds the demo corpus under ./prism-data.
  const child = spawn(command, commandArgs, { cwd: tmp, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  const entry = { name, child, logPath, exited: null };
  child.on('exit', (code, signal) => { entry.exited = { code, signal }; });
  children.push(entry);
  log(`started ${name} (pid ${child.pid}): prism ${argv.join(' ')}`);
  return entry;
}

async function stopAll() {
  for (const entry of children.slice().reverse()) {
    if (entry.exited) continue;
    entry.child.kill('SIGTERM');
    const stopped = await Promise.race([
      new Promise((resolve) => entry.child.once('exit', () => resolve(true))),
      new Promise((resolve) => setTimeout(() => resolve(false), 15_000)),
    ]);
    if (!stopped && !entry.exited) {
      log(`${entry.name} ignored SIGTERM for 15 s: SIGKILL`);
      entry.child.kill('SIGKILL');
    }
  }
}

function tail(file, lines = 40) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(what, timeoutMs, probe) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const entry of children) {
      if (entry.exited) throw new Error(`${entry.name} exited (${JSON.stringify(entry.exited)}) while waiting for ${what}`);
    }
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(500);
  }
}

async function prism(argv) {
  const { stdout } = await execFileAsync(args.prism, argv, { timeout: 60_000 });
  return stdout;
}

async function api(httpAddress, token, route) {
  const response = await fetch(`http://${httpAddress}${route}`, {
    headers: token ? { Authorization: `Bearer ${token}` } : {},
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

// canvasColourPixels counts the pixels of the canvases under `selector` within
// a small distance of `rgb`: a chart whose series were drawn has many, axes
// and grid alone have none.
async function canvasColourPixels(page, selector, rgb) {
  return page.evaluate(({ selector, rgb }) => {
    let count = 0;
    for (const canvas of document.querySelectorAll(`${selector} canvas`)) {
      if (!canvas.width || !canvas.height) continue;
      const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] > 200 && Math.abs(data[i] - rgb[0]) < 40 && Math.abs(data[i + 1] - rgb[1]) < 40 &&
            Math.abs(data[i + 2] - rgb[2]) < 40) {
          count += 1;
        }
      }
    }
    return count;
  }, { selector, rgb });
}

async function waitForView(page, states = ['ready']) {
  await page.waitForFunction((wanted) => wanted.includes(document.getElementById('view').dataset.state),
                             states, { timeout: 30_000 });
}

async function screenshot(page, name, { fullPage = true } = {}) {
  const file = path.join(artifacts, `${name}.png`);
  await page.screenshot({ path: file, fullPage });
  log(`screenshot: ${file}`);
}

// The window sizes the dashboard must fit without sideways scrolling.
const kViewports = [{ width: 1280, height: 800 }, { width: 1920, height: 1080 }];

// horizontalOverflow measures the page's and `selector`'s scroll widths
// against their client widths, once the charts followed the new width.
async function horizontalOverflow(page, selector) {
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  return page.evaluate((sel) => {
    const doc = document.documentElement;
    const box = document.querySelector(sel);
    return { page: [doc.scrollWidth, doc.clientWidth], box: box ? [box.scrollWidth, box.clientWidth] : null };
  }, selector);
}

const kSpec = `
name: "browser-test"
model { preset: "tiny" }
budget { steps: 30 batch_size: 4 eval_every: 10 eval_batches: 2 log_every: 5 loss_targets: 4.0 }
schedules: "1x2,4x4"
schedules: "2x3,4x3"
seeds: [1, 2]
priority: 1
`;
// An ASHA experiment (after the first: lower priority): three schedules
// screened on seed 1 (the baseline on seeds 1 and 2), one rung at step 10
// where floor(3 / 3) = 1 goes on, on both seeds.
const kAshaSpec = `
name: "browser-asha"
model { preset: "tiny" }
budget { steps: 20 batch_size: 4 eval_every: 10 eval_batches: 2 log_every: 5 }
schedules: ["1x2,4x4", "2x2,4x4", "2x3,4x3"]
seeds: [1, 2]
strategy: STRATEGY_ASHA
asha { rungs: 10 screen_seeds: 1 }
`;

// A ladder (issue #30): three tiny schedules and the baseline on two seeds,
// then what it carries (its best-set, the worst and the median: here all
// three) at twice the width.
const kLadderSpec = `
name: "browser-ladder"
budget { steps: 20 batch_size: 4 eval_every: 10 eval_batches: 2 log_every: 5 }
schedules: ["1x2,4x4", "2x2,4x4", "2x3,4x3"]
seeds: [1, 2]
ladder {
  rungs { model { preset: "tiny" } }
  rungs { model { preset: "tiny" d_model: 256 base_heads: 8 } }
}
`;

// Six random schedules and the baseline on one seed, 10 steps each: enough
// finished schedules for the surrogate's suggestions (issue #41: "train
// these suggestions", then add a seed).
const kSuggestSpec = `
name: "browser-suggest"
model { preset: "tiny" }
budget { steps: 10 batch_size: 4 eval_every: 5 eval_batches: 2 log_every: 5 }
strategy: STRATEGY_RANDOM
samples: 6
sample_seed: 41
seeds: [1]
`;

// startCoordinator starts `prism coordinator` on a new database named after
// `name`, with `extra` flags; resolves to its ready file's endpoints, its
// admin token and the token's file once it serves.
async function startCoordinator(name, extra = []) {
  const readyFile = path.join(tmp, `${name}.ready.json`);
  const tokenFile = path.join(tmp, `${name}.admin.token`);
  start(name, ['coordinator', '--db', path.join(tmp, `${name}.db`), '--listen', '127.0.0.1:0',
               '--http', '127.0.0.1:0', '--ready-file', readyFile, '--admin-token-file', tokenFile,
               ...(args['web-root'] ? ['--web-root', args['web-root']] : []), ...extra]);
  const ready = await waitFor(`the ${name} ready file`, 60_000, async () => {
    try {
      return JSON.parse(fs.readFileSync(readyFile, 'utf8'));
    } catch {
      return null;
    }
  });
  return { ready, token: fs.readFileSync(tokenFile, 'utf8').trim(), tokenFile };
}

async function run() {
  const { ready, token, tokenFile } = await startCoordinator('coordinator');
  check(ready.grpc && ready.http, `coordinator ready: grpc ${ready.grpc}, http ${ready.http}`);
  const client = ['--coordinator', ready.grpc, '--token-file', tokenFile];

  for (const i of [1, 2]) {
    start(`worker-${i}`, ['worker', ...client, '--threads', '1',
                          '--checkpoint-dir', path.join(tmp, `checkpoints-${i}`)]);
  }
  const specFile = path.join(tmp, 'spec.textproto');
  fs.writeFileSync(specFile, kSpec);
  const submitted = JSON.parse(await prism(['submit', specFile, ...client, '--format', 'json']));
  const experimentId = String(submitted.experiment?.id);
  check(/^\d+$/.test(experimentId), `submitted experiment #${experimentId}`);
  const ashaFile = path.join(tmp, 'asha.textproto');
  fs.writeFileSync(ashaFile, kAshaSpec);
  const ashaId = String(JSON.parse(await prism(['submit', ashaFile, ...client, '--format', 'json'])).experiment?.id);
  check(/^\d+$/.test(ashaId), `submitted ASHA experiment #${ashaId}`);
  const ladderFile = path.join(tmp, 'ladder.textproto');
  fs.writeFileSync(ladderFile, kLadderSpec);
  const ladderId = String(JSON.parse(await prism(['submit', ladderFile, ...client, '--format', 'json'])).experiment?.id);
  check(/^\d+$/.test(ladderId), `submitted ladder #${ladderId}`);
  const suggestFile = path.join(tmp, 'suggest.textproto');
  fs.writeFileSync(suggestFile, kSuggestSpec);
  const suggestId = String(JSON.parse(await prism(['submit', suggestFile, ...client, '--format', 'json'])).experiment?.id);
  check(/^\d+$/.test(suggestId), `submitted the suggestions' experiment #${suggestId}`);

  const experiment = await waitFor('the experiment to finish', 420_000, async () => {
    const { status, body } = await api(ready.http, token, `/api/v1/experiments/${experimentId}`);
    if (status !== 200) throw new Error(`GET experiment: HTTP ${status} ${JSON.stringify(body)}`);
    return body.state === 'EXPERIMENT_DONE' ? body : null;
  });
  check(experiment.counts.completed === experiment.counts.total,
        `experiment done: ${experiment.counts.completed}/${experiment.counts.total} trials completed`);

  // The RPC's view of the ranking, through the CLI.
  const rankRpc = JSON.parse(await prism(['results', '--experiment', experimentId, ...client, '--format', 'json']));
  const rpcRows = (rankRpc.schedules || []).length;
  const rankJson = (await api(ready.http, token, `/api/v1/experiments/${experimentId}/rank?page_size=50`)).body;
  check(rpcRows === rankJson.total && rpcRows >= 3,
        `rank total: RPC ${rpcRows} rows, JSON API total ${rankJson.total}`);

  const profile = path.join(tmp, 'chromium-profile');
  browserContext = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath, headless: true, args: kChromiumArgs, viewport: { width: 1400, height: 1000 },
  });
  const page = await browserContext.newPage();
  const pageErrors = [];
  page.on('pageerror', (err) => pageErrors.push(err.message));
  const cspViolations = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  const base = `http://${ready.http}`;

  // Missing token: the login prompt, no data.
  await page.goto(`${base}/#/experiments/${experimentId}`);
  await waitForView(page, ['login']);
  check(await page.isVisible('#login-form'), 'missing token: login prompt shown');
  check(await page.locator('#leaderboard-table, #experiments-table, #principle-chart').count() === 0,
        'missing token: no data shown');
  check(!(await page.content()).includes('browser-test'), 'missing token: the experiment name is not in the page');
  await screenshot(page, 'login-missing-token');

  // Bad token through the form: rejected, still the prompt, no data.
  await page.fill('#token-input', 'not-a-real-token');
  await page.click('#login-form button[type=submit]');
  await page.waitForFunction(() => /rejected/.test(document.getElementById('login-message')?.textContent || ''),
                             null, { timeout: 15_000 });
  check(await page.isVisible('#login-form'), 'bad token: login prompt still shown with a message');
  check(await page.locator('#leaderboard-table, #experiments-table').count() === 0, 'bad token: no data shown');
  await screenshot(page, 'login-bad-token');

  // A bad token already stored (e.g. revoked) also lands on the prompt.
  await page.evaluate(() => localStorage.setItem('prism_token', 'revoked-token'));
  await page.goto(`${base}/#/`);
  await page.reload();
  await waitForView(page, ['login']);
  check(await page.isVisible('#login-form'), 'stored bad token: login prompt shown');
  check(await page.locator('#experiments-table').count() === 0, 'stored bad token: no data shown');

  // The real token: the queue, then the leaderboard.
  await page.fill('#token-input', token);
  await page.click('#login-form button[type=submit]');
  await waitForView(page);
  check(await page.locator('#experiments-table tbody tr').count() >= 1, 'queue lists the experiment');
  check(await page.locator('#workers-table tbody tr').count() === 2, 'queue lists both workers');
  await screenshot(page, 'queue');

  await page.click(`#experiments-table a[href="#/experiments/${experimentId}"] >> nth=0`);
  await page.waitForURL(new RegExp(`#/experiments/${experimentId}$`));
  await waitForView(page);
  await page.waitForSelector('#leaderboard-table');
  const rows = await page.locator('#leaderboard-table tbody tr').count();
  check(rows === rpcRows, `leaderboard shows ${rows} rows, the RPC ranks ${rpcRows}`);
  const totalText = await page.locator('#rank-total').getAttribute('data-total');
  check(Number(totalText) === rpcRows, `leaderboard total ${totalText} matches the RPC`);
  const effectPixels = (await canvasColourPixels(page, '#principle-chart', kSatisfied)) +
                       (await canvasColourPixels(page, '#principle-chart', kViolated));
  check(effectPixels > 200, `principle-effects chart drew its bars (${effectPixels} bar pixels)`);
  // Each principle's effect is the RPC's: its signed mean (and interval), or
  // "not estimable" with the coordinator's reason (here both schedules
  // satisfy every principle: "nothing violates it").
  const rpcEffects = new Map((rankRpc.principleEffects || []).map((e) => [
    String(e.principle).replace(/^PRINCIPLE_/, '').toLowerCase(), e]));
  const shownEffects = await page.$$eval('#effects-table tbody tr', (trs) =>
    trs.map((tr) => [tr.dataset.principle, tr.querySelector('.effect').textContent]));
  check(shownEffects.length === rpcEffects.size && shownEffects.length === 3,
        `effects table shows ${shownEffects.length} principles, the RPC ${rpcEffects.size}`);
  for (const [principle, text] of shownEffects) {
    const e = rpcEffects.get(principle) || {};
    const mean = Number(e.effect?.mean);
    const expected = e.status === 'EFFECT_ESTIMATED'
      ? `${mean > 0 ? '+' : ''}${mean.toFixed(4)}` : `not estimable (${e.note})`;
    check(e.status === 'EFFECT_ESTIMATED' ? text.startsWith(expected) : text === expected,
          `effect of violating ${principle}: dashboard '${text}', RPC '${expected}'`);
  }
  // Each row's verdict is the RPC's, word for word (the baseline has none),
  // and only a verdict of better or worse colours a delta.
  const rpcVerdict = new Map((rankRpc.schedules || []).map((s) => [
    s.schedule, s.verdict && s.verdict !== 'VERDICT_UNSPECIFIED'
      ? s.verdict.replace(/^VERDICT_/, '').toLowerCase().replace('_', ' ') : '\u2014']));
  const shownVerdicts = await page.$$eval('#leaderboard-table tbody tr', (trs) =>
    trs.map((tr) => [tr.dataset.schedule, tr.querySelector('.verdict').textContent]));
  for (const [schedule, word] of shownVerdicts) {
    check(word === rpcVerdict.get(schedule),
          `verdict of ${schedule}: dashboard '${word}', RPC '${rpcVerdict.get(schedule)}'`);
  }
  const findings = [...rpcVerdict.values()].filter((w) => w === 'better' || w === 'worse').length;
  const coloured = await page.locator('#leaderboard-table span.delta.delta-better, ' +
                                      '#leaderboard-table span.delta.delta-worse').count();
  check(coloured === findings, `${coloured} coloured deltas for ${findings} significant verdicts`);
  // The best-set is the RPC's: its rows highlighted, and named above the
  // table with the method that made the verdicts.
  const rpcBest = new Set(rankRpc.verdicts?.bestSet || []);
  const highlighted = await page.$$eval('#leaderboard-table tbody tr.in-best-set',
                                        (trs) => trs.map((tr) => tr.dataset.schedule));
  check(highlighted.length === [...rpcVerdict.keys()].filter((s) => rpcBest.has(s)).length &&
        highlighted.every((s) => rpcBest.has(s)),
        `best-set rows highlighted ${JSON.stringify(highlighted)}, RPC ${JSON.stringify([...rpcBest])}`);
  const summaryText = await page.locator('#verdict-summary').textContent();
  check(summaryText.includes(rankRpc.verdicts?.methodDescription || 'paired t') &&
        summaryText.includes(rpcBest.size ? 'Best-set (95% confidence' : 'Best-set: needs 2'),
        `verdict summary names the method and the best-set: '${summaryText}'`);
  // Each non-baseline row's speed-up counts (reached/paired seeds) and
  // tokens/s pairing are the RPC's; both workers report "cpu (1 thread)", so
  // every pair is matched on a worker or the device, never unpaired.
  const rpcBySchedule = new Map((rankRpc.schedules || []).map((s) => [s.schedule, s]));
  const shownRatios = await page.$$eval('#leaderboard-table tbody tr:not(.is-baseline)', (trs) =>
    trs.map((tr) => [tr.dataset.schedule, tr.querySelector('.speedup .reached')?.textContent,
                     tr.querySelector('.throughput .pairing')?.textContent]));
  check(shownRatios.length === rpcRows - 1, `${shownRatios.length} non-baseline rows show speed-up and tokens/s`);
  for (const [schedule, reached, pairing] of shownRatios) {
    const s = rpcBySchedule.get(schedule) || {};
    const want = `${s.speedup?.n || 0}/${s.speedupSeeds || 0}`;
    check(reached === want, `speed-up seeds of ${schedule}: dashboard '${reached}', RPC '${want}'`);
    const rpcPairing = String(s.throughputPairing || '').replace(/^THROUGHPUT_PAIRING_/, '').toLowerCase();
    check(pairing === rpcPairing && (pairing === 'worker' || pairing === 'device'),
          `tokens/s pairing of ${schedule}: dashboard '${pairing}', RPC '${rpcPairing}' (${s.throughputHardware})`);
  }
  const glyphs = await page.locator('#leaderboard-table canvas.staircase').count();
  check(glyphs === rows, `every row draws its staircase (${glyphs})`);
  // The suggestion card: with fewer finished schedules than the surrogate
  // needs it shows the coordinator's reason, the JSON API's error verbatim.
  const suggestApi = await api(ready.http, token, `/api/v1/experiments/${experimentId}/suggest`);
  check(suggestApi.status === 400 && /needs at least 5 finished schedules .*\(there (is|are) \d\)/
    .test(suggestApi.body?.error || ''), `suggest API: HTTP ${suggestApi.status} ${suggestApi.body?.error}`);
  const reason = await page.locator('#suggestions #suggestions-reason').textContent();
  check(reason === suggestApi.body.error, `suggestion card says why it has none: '${reason}'`);
  await screenshot(page, 'leaderboard');
  // No sideways scrolling at either window size: not the page, not the
  // leaderboard's table (its .table-wrap would scroll).
  for (const viewport of kViewports) {
    const size = `${viewport.width}x${viewport.height}`;
    await page.setViewportSize(viewport);
    const overflow = await horizontalOverflow(page, '.table-wrap:has(> #leaderboard-table)');
    check(overflow.page[0] <= overflow.page[1], `${size}: the page does not scroll sideways `
          + `(scrollWidth ${overflow.page[0]}, clientWidth ${overflow.page[1]})`);
    check(overflow.box && overflow.box[0] <= overflow.box[1], `${size}: the leaderboard fits its card `
          + `(scrollWidth ${overflow.box?.[0]}, clientWidth ${overflow.box?.[1]})`);
    await screenshot(page, `leaderboard-${size}`);
    if (viewport.width === 1280) {
      // The README's picture: the window scrolled to the leaderboard.
      await page.evaluate(() => document.getElementById('leaderboard-table').closest('section').scrollIntoView());
      await screenshot(page, 'dashboard', { fullPage: false });
      await page.evaluate(() => window.scrollTo(0, 0));
    }
  }

  await checkEffectsFit(page);
  await checkCsvExport(page, rankRpc);
  await checkCompare(page, experimentId, client, rankRpc);

  // Into a non-baseline schedule's page, then its seed-1 trial.
  const link = page.locator('#leaderboard-table tr:not(.is-baseline) a.schedule-link').first();
  const schedule = await link.textContent();
  await link.click();
  await page.waitForURL(/#\/experiments\/\d+\/schedules\//);
  await waitForView(page);
  await checkSchedulePage(page, ready.http, token, experimentId, schedule);
  await page.click('#schedule-trials tbody tr[data-seed="1"] a.trial-link');
  await page.waitForURL(/#\/trials\/\d+$/);
  await waitForView(page);
  await page.waitForSelector('#loss-chart canvas');
  const trialId = page.url().split('#/trials/')[1];
  const trial = (await api(ready.http, token, `/api/v1/trials/${trialId}?with_baseline=1`)).body;
  check(trial.trial.schedule === schedule, `trial page opened for ${schedule} (trial #${trialId})`);
  const lossPrism = await canvasColourPixels(page, '#loss-chart', kPrism);
  check(lossPrism > 100, `loss chart drew the trial's val curve (${lossPrism} pixels)`);
  // The baseline's curves may lie under the trial's: hide the trial's through
  // the chart legend (as a user would) to see them.
  const legendEntry = (label) => page.locator('#loss-chart .u-legend .u-series')
    .filter({ has: page.locator('.u-label', { hasText: new RegExp(`^${label}$`) }) });
  for (const label of ['train', 'val']) await legendEntry(label).click();
  const lossBaseline = await canvasColourPixels(page, '#loss-chart', kBaseline);
  check(lossBaseline > 100, `loss chart drew the baseline's val curve (${lossBaseline} pixels)`);
  for (const label of ['train', 'val']) await legendEntry(label).click();
  const lrPixels = await canvasColourPixels(page, '#lr-chart', [0x0e, 0x74, 0x90]);
  check(lrPixels > 50, `learning-rate chart drew its curve (${lrPixels} pixels)`);
  const distancePixels = await canvasColourPixels(page, '#distance-chart', kPrism);
  check(distancePixels > 50, `attention-distance chart drew its curve (${distancePixels} pixels)`);
  const metricsText = await page.locator('#metrics-table').textContent();
  const finalVal = Number(trial.trial.metrics.finalValLoss).toFixed(4);
  check(metricsText.includes(finalVal), `metrics table shows the final val loss ${finalVal}`);
  check(await page.locator('#attempts-table tbody tr').count() >= 1, 'attempt history shown');
  await screenshot(page, 'trial');

  // The ASHA experiment's rung view: the RPC's rungs, row for row.
  await waitFor('the ASHA experiment to finish', 300_000, async () => {
    const { body } = await api(ready.http, token, `/api/v1/experiments/${ashaId}`);
    return body.state === 'EXPERIMENT_DONE' ? body : null;
  });
  const ashaRpc = JSON.parse(await prism(['results', '--experiment', ashaId, ...client, '--format', 'json']));
  const rpcRung = (ashaRpc.ashaRungs || [])[0] || {};
  const rpcPromoted = (rpcRung.schedules || []).filter((e) => e.promoted).map((e) => e.schedule);
  check(rpcRung.step === '10' && (rpcRung.schedules || []).length === 3 && rpcPromoted.length >= 1,
        `ASHA rung over RPC: step ${rpcRung.step}, ${(rpcRung.schedules || []).length} reached, `
        + `promoted ${rpcPromoted.join(', ')}`);
  await page.goto(`${base}/#/experiments/${ashaId}`);
  await waitForView(page);
  await page.waitForSelector('#asha-rungs #asha-rung-summary tr.asha-rung[data-step="10"]');
  const summary = await page.locator('#asha-rung-summary tr.asha-rung[data-step="10"]').textContent();
  check(summary.includes(`3 of ${rpcRung.members}`), `ASHA rung summary: '${summary}'`);
  const staged = await page.locator('#asha-rungs #asha-staged').textContent();
  check(staged.startsWith('Screened on 1 of 2 seeds at the first rung'), `ASHA staged note: '${staged}'`);
  // The plot: one series (a path and a point) per schedule that reached a
  // rung, the promoted ones highlighted, the rung's quota cut-off drawn
  // (floor(3 / 3) = 1 of 3 go on).
  const rpcSchedules = (rpcRung.schedules || []).map((e) => e.schedule);
  const series = await page.$$eval('#asha-plot .rung-series', (gs) => gs.map((g) => ({
    schedule: g.dataset.schedule, promoted: g.classList.contains('promoted'),
    paths: g.querySelectorAll('path').length, points: g.querySelectorAll('circle').length,
  })));
  check(series.length === rpcSchedules.length
        && JSON.stringify(series.map((x) => x.schedule).sort()) === JSON.stringify(rpcSchedules.slice().sort())
        && series.every((x) => x.paths === 1 && x.points === 1),
        `ASHA plot: ${series.length} series, one path and point each, for ${rpcSchedules.length} schedules`);
  const plotPromoted = series.filter((x) => x.promoted).map((x) => x.schedule);
  check(JSON.stringify(plotPromoted.slice().sort()) === JSON.stringify(rpcPromoted.slice().sort()),
        `ASHA plot highlights the promoted: ${plotPromoted.join(', ')}`);
  const quotaLines = await page.locator('#asha-plot .quota-line[data-step="10"] line').count();
  check(quotaLines === (Number(rpcRung.promoteQuota) < rpcSchedules.length ? 1 : 0),
        `ASHA plot draws the quota cut-off (quota ${rpcRung.promoteQuota}): ${quotaLines} line`);
  // The table: the promoted rows first and alone, then "Show all" lists
  // every schedule with the RPC's score.
  const tableRows = () => page.$$eval('#asha-table tbody tr', (trs) => trs.map((tr) => ({
    schedule: tr.dataset.schedule, promoted: tr.classList.contains('promoted'),
    score: tr.querySelector('.rung-score[data-step="10"]')?.textContent,
  })));
  const top = await tableRows();
  check(top.length === rpcPromoted.length && top.every((r) => r.promoted && rpcPromoted.includes(r.schedule)),
        `ASHA table shows the ${top.length} promoted rows before "Show all"`);
  await page.click('#asha-show-all');
  const all = await tableRows();
  check(all.length === rpcSchedules.length, `"Show all" lists all ${all.length} schedules`);
  for (const e of rpcRung.schedules || []) {
    const shown = all.find((r) => r.schedule === e.schedule) || {};
    const mean = Number(e.score || 0);
    const want = rpcRung.paired ? `${mean > 0 ? '+' : ''}${mean.toFixed(4)}` : mean.toFixed(4);
    check(shown.promoted === Boolean(e.promoted) && (shown.score || '').startsWith(want),
          `ASHA table row ${e.schedule}: '${shown.score}', promoted ${shown.promoted}; RPC ${want}, `
          + `promoted ${Boolean(e.promoted)}`);
  }
  const ashaOverflow = await horizontalOverflow(page, '#asha-rungs');
  check(ashaOverflow.page[0] <= ashaOverflow.page[1] && ashaOverflow.box[0] <= ashaOverflow.box[1],
        `ASHA page does not scroll sideways (${JSON.stringify(ashaOverflow)})`);
  await screenshot(page, 'asha-rungs');

  // The ladder's scatter: one point per carried schedule at the RPC's
  // deltas (size A on x, size B on y), the baseline at 0,0, and the RPC's
  // correlations in the caption.
  const ladderRpc = await waitFor('the ladder\'s second rung to finish', 420_000, async () => {
    const l = JSON.parse(await prism(['results', '--ladder', ladderId, ...client, '--format', 'json']));
    const pair = (l.pairs || [])[0];
    return pair && !pair.note ? l : null;
  });
  const pair = ladderRpc.pairs[0];
  await page.goto(`${base}/#/experiments/${ladderId}`);
  await page.waitForSelector('#ladder .ladder-point');
  const shownPoints = await page.$$eval('#ladder .ladder-point', (cs) => cs.map((c) => ({
    schedule: c.dataset.schedule, role: c.dataset.role, x: Number(c.dataset.x), y: Number(c.dataset.y),
  })));
  check(shownPoints.length === (pair.points || []).length && shownPoints.length === Number(pair.schedules) + 1,
        `ladder scatter: ${shownPoints.length} points for ${pair.schedules} schedules and the baseline`);
  for (const p of pair.points || []) {
    const shown = shownPoints.find((s) => s.schedule === p.smallSchedule) || {};
    const x = Number(p.smallDelta || 0);
    const y = Number(p.largeDelta || 0);
    check(Math.abs(shown.x - x) < 1e-12 && Math.abs(shown.y - y) < 1e-12 && shown.role === p.role,
          `ladder point ${p.smallSchedule} (${p.role}): shown ${shown.x}, ${shown.y}; RPC ${x}, ${y}`);
  }
  const baselinePoint = shownPoints.find((s) => s.role === 'baseline') || {};
  check(baselinePoint.x === 0 && baselinePoint.y === 0, 'ladder scatter: the baseline at 0,0');
  const caption = await page.locator('#ladder .ladder-caption').first().textContent();
  const two = (v) => { const n = Number(v || 0); return `${n > 0 ? '+' : ''}${n.toFixed(2)}`; };
  check(caption.includes(`Spearman ${two(pair.spearman.estimate)} [${two(pair.spearman.low)}, ${two(pair.spearman.high)}]`)
        && caption.includes(`Kendall ${two(pair.kendall.estimate)}`),
        `ladder caption '${caption}' has the RPC's correlations`);
  await screenshot(page, 'ladder');

  check(cspViolations.length === 0,
        `no Content-Security-Policy violation on the pages (${cspViolations.join('; ') || 'none'})`);
  await checkCrossOrigin(page, base, ready.http, token, experimentId);
  await checkDeleteButton(page, base, ready.http, token, experimentId);
  await checkExtend(page, base, ready.http, token, suggestId, client);
  check(pageErrors.length === 0, `no JavaScript errors (${pageErrors.join('; ') || 'none'})`);
  await checkActions();
  await checkHttpsSession();
}

// startOtherOrigin serves `pages` (path -> HTML) on another loopback port:
// another origin than the dashboard's, on the same site.
async function startOtherOrigin(pages) {
  const server = http.createServer((req, res) => {
    const body = pages[req.url.split('?')[0]];
    res.writeHead(body ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(body || 'not found');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

// checkCrossOrigin: the signed-in user opens a page of another origin that
// frames the dashboard, and one that POSTs to logout (a form) and to the
// finished experiment's delete route (fetch with the cookie).
async function checkCrossOrigin(page, base, httpAddress, token, experimentId) {
  const head = await fetch(`${base}/`);
  check(/frame-ancestors 'none'/.test(head.headers.get('content-security-policy') || '')
        && head.headers.get('x-content-type-options') === 'nosniff',
        `the dashboard's page says frame-ancestors 'none' and nosniff (${head.headers.get('content-security-policy')})`);
  const whoami = await fetch(`${base}/api/v1/whoami`, { headers: { Authorization: `Bearer ${token}` } });
  check(whoami.headers.get('cache-control') === 'no-store', 'API answers are Cache-Control: no-store');

  const deleteRoute = `${base}/api/v1/experiments/${experimentId}/delete`;
  const { server, origin } = await startOtherOrigin({
    '/frame.html': `<!doctype html><title>framing</title><iframe id="target" src="${base}/"></iframe>`,
    '/csrf.html': `<!doctype html><title>csrf</title>
      <iframe name="sink"></iframe>
      <form id="logout" method="POST" action="${base}/api/v1/logout" target="sink"></form>
      <script>
        fetch('${deleteRoute}', { method: 'POST', credentials: 'include', mode: 'no-cors' })
          .catch(() => {}).finally(() => document.getElementById('logout').submit());
      </script>`,
  });
  const attacker = await browserContext.newPage();
  try {
    const framingErrors = [];
    attacker.on('console', (message) => framingErrors.push(message.text()));
    await attacker.goto(`${origin}/frame.html`, { waitUntil: 'load' });
    const frame = attacker.frames().find((f) => f !== attacker.mainFrame());
    const framed = frame ? await frame.$('#view').catch(() => null) : null;
    check(frame && framed === null,
          `another origin cannot frame the dashboard (frame url ${frame && frame.url()}; `
          + `${framingErrors.filter((t) => /frame/i.test(t)).join('; ') || 'no console message'})`);

    const cookieBefore = (await browserContext.cookies(base)).find((c) => c.name === 'prism_token');
    check(cookieBefore?.value === token, 'signed in before the cross-origin POSTs (prism_token cookie set)');
    const deleted = attacker.waitForResponse((r) => r.url() === deleteRoute);
    const loggedOut = attacker.waitForResponse((r) => r.url() === `${base}/api/v1/logout`);
    await attacker.goto(`${origin}/csrf.html`);
    const [deleteAnswer, logoutAnswer] = await Promise.all([deleted, loggedOut]);
    check(deleteAnswer.status() === 403 && logoutAnswer.status() === 403,
          `cross-origin POSTs refused: delete ${deleteAnswer.status()}, logout ${logoutAnswer.status()}`);
  } finally {
    await attacker.close();
    server.close();
  }
  const cookieAfter = (await browserContext.cookies(base)).find((c) => c.name === 'prism_token');
  check(cookieAfter?.value === token, 'after the cross-origin logout the token cookie is still there');
  await page.goto(`${base}/#/`);
  await page.reload();
  await waitForView(page);
  check(await page.locator('#experiments-table tbody tr').count() >= 1,
        'after the cross-origin logout the dashboard still shows the queue (signed in)');
  const still = await api(httpAddress, token, `/api/v1/experiments/${experimentId}`);
  check(still.status === 200 && still.body.state === 'EXPERIMENT_DONE',
        `after the cross-origin delete experiment #${experimentId} is still there (HTTP ${still.status})`);
}

// checkDeleteButton: the finished experiment's page offers Delete; the
// confirm() names what goes; dismissed nothing happens, accepted the
// experiment is gone and the queue says what was removed.
async function checkDeleteButton(page, base, httpAddress, token, experimentId) {
  await page.goto(`${base}/#/experiments/${experimentId}`);
  await waitForView(page);
  await page.waitForSelector('#delete-experiment');
  let question = '';
  page.once('dialog', (dialog) => { question = dialog.message(); dialog.dismiss(); });
  await page.click('#delete-experiment');
  await waitFor('the delete confirmation', 10_000, async () => question);
  check(question.includes(`experiment #${experimentId}`) && /\d+ trials with their attempts and loss curves/.test(question),
        `the delete confirmation names what goes: '${question}'`);
  check((await api(httpAddress, token, `/api/v1/experiments/${experimentId}`)).status === 200,
        'dismissed: the experiment is still there');
  page.once('dialog', (dialog) => dialog.accept());
  await page.click('#delete-experiment');
  await page.waitForURL(/#\/$/);
  await waitForView(page);
  const notice = await page.locator('#banner.banner-notice').textContent();
  check(notice.includes(`Experiment #${experimentId} deleted`), `the queue says what was deleted: '${notice}'`);
  const gone = await api(httpAddress, token, `/api/v1/experiments/${experimentId}`);
  check(gone.status === 404, `confirmed: experiment #${experimentId} is gone (HTTP ${gone.status})`);
}

// download clicks `selector` and resolves to the file the page saved:
// { name, bytes }.
async function download(page, selector) {
  const [saved] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  return { name: saved.suggestedFilename(), bytes: fs.readFileSync(await saved.path()) };
}

// parseCsv reads RFC 4180 text into rows of fields.
function parseCsv(text) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 1;
      } else if (c === '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c === '"') {
      quoted = true;
    } else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i += 1;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else {
      field += c;
    }
  }
  if (field || row.length) rows.push([...row, field]);
  return rows;
}

// At 1024x768 the principle-effects table fits its card (issue #41: it
// was cut), and the page does not scroll sideways.
async function checkEffectsFit(page) {
  await page.setViewportSize({ width: 1024, height: 768 });
  const overflow = await horizontalOverflow(page, '.table-wrap:has(> #effects-table)');
  check(overflow.page[0] <= overflow.page[1] && overflow.box && overflow.box[0] <= overflow.box[1],
        `1024x768: the principle-effects table fits its card (${JSON.stringify(overflow)})`);
  await screenshot(page, 'leaderboard-1024x768');
  await page.setViewportSize({ width: 1400, height: 1000 });
}

// The leaderboard's CSV: one row per ranked schedule, the RPC's numbers
// unrounded, under the columns the table shows.
async function checkCsvExport(page, rankRpc) {
  const { name, bytes } = await download(page, '#export-csv');
  const [header, ...rows] = parseCsv(bytes.toString('utf8'));
  const want = ['rank', 'schedule', 'principles', 'val_loss_mean', 'delta_mean', 'delta_low', 'delta_high', 'verdict',
                'speedup_mean', 'throughput_ratio_mean', 'seeds_completed', 'paired_seeds'];
  check(name.endsWith('leaderboard.csv') && want.every((c) => header.includes(c)),
        `CSV export ${name}: columns ${header.join(',')}`);
  const rpc = new Map((rankRpc.schedules || []).map((s) => [s.schedule, s]));
  check(rows.length === rpc.size, `CSV export has ${rows.length} rows, the RPC ranks ${rpc.size}`);
  const col = (row, c) => row[header.indexOf(c)];
  for (const row of rows) {
    const s = rpc.get(col(row, 'schedule')) || {};
    const delta = s.isBaseline ? '' : String(Number(s.deltaVsBaseline?.mean));
    const verdict = s.isBaseline || !s.verdict ? '' : s.verdict.replace(/^VERDICT_/, '').toLowerCase().replace('_', ' ');
    check(col(row, 'rank') === String(s.rank) && (col(row, 'delta_mean') === '' ? delta === '' : Number(col(row, 'delta_mean')) === Number(delta))
          && Number(col(row, 'val_loss_mean')) === Number(s.finalValLoss?.mean) && col(row, 'verdict') === verdict,
          `CSV row ${col(row, 'schedule')}: rank ${col(row, 'rank')}, delta ${col(row, 'delta_mean')}, `
          + `verdict '${col(row, 'verdict')}'; RPC ${s.rank}, ${delta}, '${verdict}'`);
  }
}

// The comparison card: the baseline against a schedule, as `prism compare`.
async function checkCompare(page, experimentId, client, rankRpc) {
  const baseline = (rankRpc.schedules || []).find((s) => s.isBaseline).schedule;
  const other = (rankRpc.schedules || []).find((s) => !s.isBaseline).schedule;
  await page.selectOption('#compare-a', baseline);
  await page.selectOption('#compare-b', other);
  await page.click('#compare-button');
  await page.waitForSelector('#compare-result');
  const shown = await page.$eval('#compare-result', (el) => ({ ...el.dataset }));
  const rpc = JSON.parse(await prism(['compare', '--experiment', experimentId, baseline, other, ...client,
                                      '--format', 'json']));
  check(Number(shown.mean) === Number(rpc.delta?.mean) && Number(shown.low) === Number(rpc.delta?.low)
        && Number(shown.high) === Number(rpc.delta?.high) && Number(shown.n) === Number(rpc.delta?.n)
        && shown.verdict === rpc.verdict,
        `compare ${other} - ${baseline}: shown ${JSON.stringify(shown)}, RPC delta ${JSON.stringify(rpc.delta)} `
        + `${rpc.verdict}`);
  const verdict = await page.locator('#compare-verdict').textContent();
  check(verdict === rpc.verdict.replace(/^VERDICT_/, '').toLowerCase().replace('_', ' '),
        `compare verdict '${verdict}'`);
}

// Student's t 0.975 quantiles for 1..10 degrees of freedom (scipy), the
// test's own.
const kT975 = [12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139];

// The schedule's page: every seed's trial, and the paired delta's mean and
// 95% t-interval across seeds at each eval step, recomputed here from the
// trials' and their baselines' val curves (GET /api/v1/trials/{id}).
async function checkSchedulePage(page, httpAddress, token, experimentId, schedule) {
  const trials = ((await api(httpAddress, token, `/api/v1/experiments/${experimentId}/trials?page_size=1000`))
    .body.trials || []).filter((t) => t.schedule === schedule);
  const rowsShown = await page.$$eval('#schedule-trials tbody tr', (trs) => trs.map((tr) => tr.dataset.trial));
  check(trials.length === 2 && JSON.stringify(rowsShown.slice().sort())
        === JSON.stringify(trials.map((t) => String(t.id)).sort()),
        `schedule page of ${schedule} lists its ${rowsShown.length} trials, one per seed (API: ${trials.length})`);
  const perSeed = [];
  for (const t of trials) {
    const r = (await api(httpAddress, token, `/api/v1/trials/${t.id}?with_baseline=1`)).body;
    const val = (points) => new Map((points || []).filter((p) => p.split === 'SPLIT_VAL')
      .map((p) => [Number(p.step || 0), Number(p.loss)]));
    const mine = val(r.points);
    const theirs = val(r.baselinePoints);
    perSeed.push(new Map([...mine].filter(([step]) => theirs.has(step)).map(([step, v]) => [step, v - theirs.get(step)])));
  }
  const steps = [...new Set(perSeed.flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
  const shown = await page.$$eval('#delta-chart circle.delta-mean', (cs) => cs.map((c) => ({
    step: Number(c.dataset.step), n: Number(c.dataset.n), mean: Number(c.dataset.mean),
    low: Number(c.dataset.low), high: Number(c.dataset.high) })));
  check(steps.length >= 3 && shown.length === steps.length,
        `delta plot: ${shown.length} mean points for the ${steps.length} eval steps both curves have`);
  for (const [i, step] of steps.entries()) {
    const values = perSeed.map((m) => m.get(step)).filter((v) => v !== undefined);
    const n = values.length;
    const mean = values.reduce((a, b) => a + b, 0) / n;
    const sd = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1));
    const half = kT975[n - 2] * sd / Math.sqrt(n);
    const p = shown[i];
    check(p.step === step && p.n === n && Math.abs(p.mean - mean) < 1e-12 && Math.abs(p.low - (mean - half)) < 1e-9
          && Math.abs(p.high - (mean + half)) < 1e-9,
          `delta at step ${step}: shown ${p.mean} [${p.low}, ${p.high}] over ${p.n} seeds; recomputed ${mean} `
          + `\u00b1 ${half} over ${n}`);
  }
  const seedLines = await page.locator('#delta-chart path.delta-seed').count();
  check(seedLines === trials.length, `delta plot draws one line per seed (${seedLines})`);
  const caption = await page.locator('#delta-caption').textContent();
  check(/Paired \u0394 of val loss against the uniform baseline/.test(caption) && caption.includes('95% interval across seeds'),
        `delta plot caption says what it is: '${caption.slice(0, 80)}...'`);
  await screenshot(page, 'schedule-delta');
  const svgFile = await download(page, '#delta-download-svg');
  const svgText = svgFile.bytes.toString('utf8');
  check(svgFile.name.endsWith('.svg') && svgText.includes('<svg') && svgText.includes('xmlns="http://www.w3.org/2000/svg"')
        && (svgText.match(/class="delta-mean"/g) || []).length === steps.length,
        `SVG download ${svgFile.name}: ${svgText.length} bytes, ${steps.length} mean points`);
  const pngFile = await download(page, '#delta-download-png');
  const magic = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  check(pngFile.name.endsWith('.png') && pngFile.bytes.subarray(0, 8).equals(magic),
        `PNG download ${pngFile.name}: a PNG of ${pngFile.bytes.readUInt32BE(16)}x${pngFile.bytes.readUInt32BE(20)}`);
  // The PNG holds the plot: the mean line's colour, drawn.
  const meanPixels = await page.evaluate(async ({ data, rgb }) => {
    const image = new Image();
    image.src = `data:image/png;base64,${data}`;
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = image.width;
    canvas.height = image.height;
    const g = canvas.getContext('2d');
    g.drawImage(image, 0, 0);
    const px = g.getImageData(0, 0, canvas.width, canvas.height).data;
    let count = 0;
    for (let i = 0; i < px.length; i += 4) {
      if (Math.abs(px[i] - rgb[0]) < 40 && Math.abs(px[i + 1] - rgb[1]) < 40 && Math.abs(px[i + 2] - rgb[2]) < 40) count += 1;
    }
    return count;
  }, { data: pngFile.bytes.toString('base64'), rgb: kPrism });
  check(meanPixels > 200, `the PNG shows the mean line (${meanPixels} pixels of its colour)`);
}

// checkExtend: on a finished experiment, "train these suggestions" queues
// the surrogate's schedules (the RPC's) on its seed, and "add seeds" one more
// seed for every schedule it trained and the baseline; every trial it had
// is kept, as it was (ExperimentService.Extend reuses them).
async function checkExtend(page, base, httpAddress, token, id, client) {
  await waitFor('the suggestions\' experiment to finish', 300_000, async () =>
    (await api(httpAddress, token, `/api/v1/experiments/${id}`)).body.state === 'EXPERIMENT_DONE');
  const trials = async () =>
    (await api(httpAddress, token, `/api/v1/experiments/${id}/trials?page_size=1000`)).body.trials || [];
  const before = await trials();
  const kept = (now) => before.every((t) => now.some((n) => n.id === t.id && n.state === t.state
                                                         && n.schedule === t.schedule && n.seed === t.seed));
  await page.goto(`${base}/#/experiments/${id}`);
  await waitForView(page);
  await page.waitForSelector('#train-suggestions');
  const shown = await page.$$eval('#suggestions-table tbody tr', (trs) => trs.map((tr) => tr.dataset.schedule));
  const rpc = JSON.parse(await prism(['suggest', '--experiment', id, ...client, '--format', 'json']));
  const rpcSchedules = (rpc.suggestions || []).map((x) => x.schedule);
  check(shown.length >= 1 && JSON.stringify(shown) === JSON.stringify(rpcSchedules),
        `the suggestions shown are the RPC's: ${shown.join('  ')}`);
  // Each asks first with what its dry run would add; the dry run stores
  // nothing (the trials while the question is open).
  let question = '';
  let during = -1;
  const answer = (dialog) => {
    question = dialog.message();
    trials().then((now) => { during = now.length; }).finally(() => dialog.accept());
  };
  page.once('dialog', answer);
  await page.click('#train-suggestions');
  const trained = await waitFor('the suggested schedules to be queued', 15_000, async () => {
    const now = await trials();
    return now.length === before.length + shown.length ? now : null;
  });
  check(question.includes(`This queues ${shown.length} new trials and reuses`) && during === before.length,
        `train suggestions asks first, from a dry run that stored nothing: '${question}'`);
  check(shown.every((x) => trained.some((t) => t.schedule === x && String(t.seed) === '1')) && kept(trained),
        `Train suggestions: ${shown.length} new trials, one per suggested schedule on seed 1; the `
        + `${before.length} trials it had are kept as they were`);
  // Add a seed: seed 2 for every schedule trained to the whole budget (the
  // first six and the baseline) and, once trained, the suggested ones.
  await page.waitForSelector('#add-seeds');
  await page.fill('#add-seeds-input', '1');
  const beforeSeeds = (await trials()).length;
  page.once('dialog', answer);
  await page.click('#add-seeds');
  const seeded = await waitFor('seed 2 to be queued', 15_000, async () => {
    const now = await trials();
    return before.every((t) => now.some((n) => n.schedule === t.schedule && String(n.seed) === '2')) ? now : null;
  });
  check(kept(seeded) && shown.every((x) => seeded.some((t) => t.schedule === x && String(t.seed) === '1')),
        `Add seeds: seed 2 queued for the baseline and the ${before.length - 1} trained schedules; no trial `
        + `trained twice (${seeded.filter((t) => String(t.seed) === '2').length} seed-2 trials)`);
  check(!seeded.some((t) => Number(t.seed) > 2), 'Add seeds added exactly one seed (2)');
  check(/^Add seed 2 to experiment/.test(question) && during === beforeSeeds,
        `add seeds asks first, from a dry run that stored nothing: '${question}'`);
}

const kActionsSpec = `name: "browser-actions"
model { preset: "tiny" }
budget { steps: 30 batch_size: 4 eval_every: 10 }
schedules: ["1x2,4x4", "2x3,4x3"]
seeds: [1, 2]
`;

// checkActions: a coordinator without workers (nothing runs, so the counts
// hold still), a user's experiment, and that user's dashboard.
async function checkActions() {
  const { ready, token: admin, tokenFile } = await startCoordinator('coordinator-actions');
  const client = ['--coordinator', ready.grpc, '--token-file', tokenFile];
  const alice = (await prism(['token', 'create', '--user', 'alice', '--role', 'user', ...client])).trim();
  const aliceFile = path.join(tmp, 'alice.token');
  fs.writeFileSync(aliceFile, alice);
  const specFile = path.join(tmp, 'actions.textproto');
  fs.writeFileSync(specFile, kActionsSpec);
  const id = String(JSON.parse(await prism(['submit', specFile, '--coordinator', ready.grpc, '--token-file', aliceFile,
                                            '--format', 'json'])).experiment?.id);
  const get = async () => (await api(ready.http, admin, `/api/v1/experiments/${id}`)).body;
  const count = async () => ((await api(ready.http, admin, '/api/v1/experiments')).body.experiments || []).length;
  const base = `http://${ready.http}`;
  const context = await chromium.launchPersistentContext(path.join(tmp, 'chromium-actions-profile'), {
    executablePath: chromiumPath, headless: true, args: kChromiumArgs, viewport: { width: 1400, height: 1000 },
  });
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(`${base}/#/experiments/${id}`);
    await waitForView(page, ['login']);
    const help = await page.locator('#token-help').textContent();
    check(help.includes('prism-data/admin.token') && help.includes('--admin-token-file') && help.includes('prism token create'),
          `the sign-in page says where the token is: '${help}'`);
    await page.fill('#token-input', alice);
    await page.click('#login-form button[type=submit]');
    await waitForView(page);
    // Each action reloads the page; the API says whether it happened.
    const until = (what, probe) => waitFor(what, 15_000, async () => probe(await get()));

    await page.click('#pause-experiment');
    await until('the pause', (e) => e.state === 'EXPERIMENT_PAUSED');
    check(true, 'Pause: the API says EXPERIMENT_PAUSED');
    await page.click('#resume-experiment');
    await until('the resume', (e) => e.state === 'EXPERIMENT_ACTIVE');
    check(true, 'Resume: the API says EXPERIMENT_ACTIVE');
    await page.waitForSelector('#pause-experiment');
    await page.fill('#priority-input', '3');
    await page.click('#set-priority');
    await until('the priority', (e) => e.priority === 3);
    check(true, 'Set priority: the API says priority 3');

    // A page of another origin, with alice's cookie in the browser, forges a
    // pause (a form), a cancel and a submit (fetch with credentials).
    const forged = 'name: "forged"\nmodel { preset: "tiny" }\nschedules: "1x2,4x4"\nseeds: [1]\n';
    const { server, origin } = await startOtherOrigin({
      '/forge.html': `<!doctype html><title>forge</title>
        <iframe name="sink"></iframe>
        <form id="pause" method="POST" action="${base}/api/v1/experiments/${id}/pause" target="sink"></form>
        <script>
          fetch('${base}/api/v1/experiments/${id}/cancel', { method: 'POST', credentials: 'include', mode: 'no-cors' })
            .catch(() => {})
            .finally(() => fetch('${base}/api/v1/submit', { method: 'POST', credentials: 'include', mode: 'no-cors',
                                                              body: ${JSON.stringify(forged)} }).catch(() => {}))
            .finally(() => document.getElementById('pause').submit());
        </script>`,
    });
    const before = await count();
    const attacker = await context.newPage();
    try {
      const answers = ['pause', 'cancel'].map((verb) => attacker.waitForResponse(
        (r) => r.url() === `${base}/api/v1/experiments/${id}/${verb}`));
      answers.push(attacker.waitForResponse((r) => r.url() === `${base}/api/v1/submit`));
      await attacker.goto(`${origin}/forge.html`);
      const statuses = (await Promise.all(answers)).map((r) => r.status());
      check(statuses.every((st) => st === 403), `forged cross-origin pause, cancel and submit refused: ${statuses.join(', ')}`);
    } finally {
      await attacker.close();
      server.close();
    }
    const untouched = await get();
    check(untouched.state === 'EXPERIMENT_ACTIVE' && untouched.priority === 3 && (await count()) === before,
          `after the forgeries nothing changed: ${untouched.state}, priority ${untouched.priority}, `
          + `${await count()} experiment(s)`);

    // Cancel asks first, naming what stops; dismissed, nothing happens.
    await page.goto(`${base}/#/experiments/${id}`);
    await waitForView(page);
    const counts = (await get()).counts;
    let question = '';
    page.once('dialog', (dialog) => { question = dialog.message(); dialog.dismiss(); });
    await page.click('#cancel-experiment');
    await waitFor('the cancel confirmation', 10_000, async () => question);
    const running = Number(counts.running || 0) + Number(counts.leased || 0);
    check(question.includes(`This stops ${counts.queued} queued and ${running} running trials`),
          `the cancel confirmation names what stops: '${question}'`);
    check((await get()).state === 'EXPERIMENT_ACTIVE', 'cancel dismissed: still active');
    page.once('dialog', (dialog) => dialog.accept());
    await page.click('#cancel-experiment');
    const cancelled = await until('the cancel', (e) => (e.state === 'EXPERIMENT_CANCELLED' ? e : null));
    check(cancelled.state === 'EXPERIMENT_CANCELLED' && cancelled.counts.cancelled === counts.total,
          `Cancel: the API says ${cancelled.state}, ${cancelled.counts.cancelled} of ${counts.total} trials cancelled`);
    check(!cancelled.progress, `a cancelled experiment that never ran is at 0% progress (API ${cancelled.progress || 0})`);
    await page.waitForSelector('h1 .state-cancelled');
    const bar = await page.locator('.head-progress .progress').getAttribute('aria-valuenow');
    check(bar === '0', `the dashboard shows the cancelled experiment at ${bar}%`);

    // The submit page: an unknown field is the coordinator's line:column,
    // nothing stored; a good spec's plan, then the submit.
    await page.goto(`${base}/#/submit`);
    await waitForView(page);
    const bad = kActionsSpec.replace('seeds: [1, 2]', 'seeds: [1, 2]\nlearning_speed: 11');
    const badLine = bad.split('\n').findIndex((l) => l.startsWith('learning_speed')) + 1;
    await page.fill('#spec-text', bad);
    await page.click('#plan-button');
    await page.waitForSelector('#submit-error');
    const where = await page.$eval('#submit-error', (el) => ({ ...el.dataset, text: el.textContent }));
    const planned = await fetch(`${base}/api/v1/plan`, { method: 'POST', headers: { Authorization: `Bearer ${alice}` }, body: bad });
    const apiError = (await planned.json()).error || '';
    check(planned.status === 400 && where.text.includes(apiError) && Number(where.line) === badLine
          && apiError.startsWith(`spec_text:${badLine}:${where.column}:`),
          `the submit page shows the error at line ${where.line}, column ${where.column}: '${apiError}'`);
    check(await page.locator('#submit-button').isDisabled(), 'Submit stays disabled until a plan succeeds');
    check((await count()) === before, 'the bad spec stored nothing');
    await page.fill('#spec-text', kActionsSpec);
    await page.click('#plan-button');
    await page.waitForSelector('#plan-result');
    const trialsPlanned = Number(await page.$eval('#plan-trials', (el) => el.dataset.trials));
    check(trialsPlanned === 6 && (await count()) === before, `the plan: ${trialsPlanned} trials, nothing stored`);
    // The bill: a row for every PlanEstimate field the coordinator set.
    const planApi = (await (await fetch(`${base}/api/v1/plan`, {
      method: 'POST', headers: { Authorization: `Bearer ${alice}` }, body: kActionsSpec })).json()).plan || {};
    const bill = new Map(await page.$$eval('#plan-result [data-field]', (els) => els.map((e) => [e.dataset.field, e.textContent])));
    const setFields = Object.keys(planApi).filter((k) => k !== 'warnings');
    check(setFields.length >= 5 && bill.size === setFields.length && bill.get('Trials queued now') === String(planApi.trials)
          && bill.get('Share from') === planApi.shareSource && bill.get('Throughput from') === planApi.throughputSource,
          `the bill shows the plan's ${setFields.length} fields: ${[...bill].map(([k, v]) => `${k} ${v}`).join('; ')}`);
    await screenshot(page, 'submit-plan');
    await page.click('#submit-button');
    await page.waitForURL(/#\/experiments\/\d+$/);
    await waitForView(page);
    const newId = page.url().split('#/experiments/')[1];
    const submitted = (await api(ready.http, admin, `/api/v1/experiments/${newId}`)).body;
    check(submitted.owner === 'alice' && submitted.counts.total === trialsPlanned && (await count()) === before + 1,
          `Submit: experiment #${newId} of ${submitted.owner} with ${submitted.counts.total} trials`);
    // Another user sees alice's experiment without its actions, and the
    // coordinator refuses bob's pause from the dashboard's own origin
    // (PERMISSION_DENIED: 403), whatever the page shows.
    const bob = (await prism(['token', 'create', '--user', 'bob', '--role', 'user', ...client])).trim();
    await page.click('#sign-out');
    await waitForView(page, ['login']);
    await page.fill('#token-input', bob);
    await page.click('#login-form button[type=submit]');
    await waitForView(page);
    await page.goto(`${base}/#/experiments/${newId}`);
    await waitForView(page);
    check(await page.locator('#experiment-actions').count() === 0, 'bob sees no actions on alice\'s experiment');
    const refused = await page.evaluate(async ({ route, token }) => {
      const r = await fetch(route, { method: 'POST', headers: { Authorization: `Bearer ${token}` } });
      return { status: r.status, body: await r.text() };
    }, { route: `/api/v1/experiments/${newId}/pause`, token: bob });
    check(refused.status === 403 && refused.body.includes("may not change experiments of 'alice'"),
          `bob's pause of alice's experiment from the dashboard: ${refused.status} ${refused.body}`);
    check((await api(ready.http, admin, `/api/v1/experiments/${newId}`)).body.state === 'EXPERIMENT_ACTIVE',
          'after bob\'s refused pause alice\'s experiment is still active');
    check(errors.length === 0, `actions: no JavaScript errors (${errors.join('; ') || 'none'})`);
  } finally {
    await context.close();
  }
}

// A TLS coordinator on an empty database: sign in, look at the cookie, sign
// out.
async function checkHttpsSession() {
  const certs = path.join(tmp, 'tls');
  await execFileAsync(path.join(args.source, 'deploy/tls/make-certs.sh'), [certs], { timeout: 60_000 });
  const { ready, token } = await startCoordinator(
      'coordinator-tls', ['--tls-cert', path.join(certs, 'server.pem'), '--tls-key', path.join(certs, 'server.key')]);
  // The certificate is from the test's own CA, which Chromium does not know.
  const context = await chromium.launchPersistentContext(path.join(tmp, 'chromium-tls-profile'), {
    executablePath: chromiumPath, headless: true, args: kChromiumArgs, ignoreHTTPSErrors: true,
  });
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (err) => errors.push(err.message));
    const base = `https://${ready.http}`;
    const tokenCookie = async () => (await context.cookies(base)).find((c) => c.name === 'prism_token');
    await page.goto(`${base}/#/`);
    await waitForView(page, ['login']);
    await page.fill('#token-input', token);
    await page.click('#login-form button[type=submit]');
    await waitForView(page);
    const cookie = await tokenCookie();
    check(cookie?.value === token && cookie.httpOnly && cookie.secure && cookie.sameSite === 'Strict',
          `HTTPS: the server set the token cookie HttpOnly, Secure, SameSite=Strict (${JSON.stringify(
              cookie && { httpOnly: cookie.httpOnly, secure: cookie.secure, sameSite: cookie.sameSite })})`);
    check(!(await page.evaluate(() => document.cookie)).includes('prism_token'),
          'HTTPS: scripts cannot read the token cookie');
    await screenshot(page, 'https-queue');
    await page.click('#sign-out');
    await waitFor('the token cookie to expire after signing out', 15_000, async () => !(await tokenCookie()));
    check(true, 'HTTPS: signing out expired the token cookie');
    check(errors.length === 0, `HTTPS: no JavaScript errors (${errors.join('; ') || 'none'})`);
  } finally {
    await context.close();
  }
}

let failed = false;
const deadline = setTimeout(() => {
  console.error(`FAIL: the test ran past ${kOverallDeadlineMs / 1000} s`);
  failed = true;
  cleanup().then(() => process.exit(1));
}, kOverallDeadlineMs);

async function cleanup() {
  if (browserContext) await browserContext.close().catch(() => {});
  browserContext = null;
  await stopAll();
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    cleanup().then(() => process.exit(1));
  });
}

try {
  await run();
} catch (err) {
  failed = true;
  console.error(`FAIL: ${err.stack || err.message}`);
  for (const entry of children) {
    console.error(`--- ${entry.name} log (last lines) ---\n${tail(entry.logPath)}`);
  }
}
clearTimeout(deadline);
await cleanup();
for (const entry of children) {
  fs.copyFileSync(entry.logPath, path.join(artifacts, `${entry.name}.log`));
}
fs.rmSync(tmp, { recursive: true, force: true });
console.log(`${passed} passed, ${failed ? 1 : 0} failed`);
process.exit(failed ? 1 : 0);
