// Which workers the queue page lists. As `prism workers` without --all, a
// worker stopped (its Deregister) or lost (its last heartbeat) more than
// kGoneWorkerShownMs ago is left out: a fleet whose workers come and go would
// otherwise list every worker it ever had. No DOM here, so Node can test it.

export const kGoneWorkerShownMs = 3600 * 1000;

// goneSince is when a worker stopped or was lost (unix ms), or null while it
// runs. The JSON mapping sends int64 as strings and enums by name.
function goneSince(w) {
  if (w.state === 'WORKER_STOPPED') return Number(w.stoppedUnixMs || 0);
  if (w.state === 'WORKER_LOST') return Number(w.lastHeartbeatUnixMs || 0);
  return null;
}

// recentWorkers returns { shown, hidden }: the workers to list, by id, and
// how many were left out.
export function recentWorkers(workers, nowMs) {
  const shown = [];
  let hidden = 0;
  for (const w of workers || []) {
    const since = goneSince(w);
    if (since !== null && nowMs - since > kGoneWorkerShownMs) {
      hidden += 1;
    } else {
      shown.push(w);
    }
  }
  shown.sort((a, b) => String(a.id).localeCompare(String(b.id)));
  return { shown, hidden };
}
