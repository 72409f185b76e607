#!/usr/bin/env python3
"""Replay benchmark driver (issue 13 items 3 and 4; bench/RESULTS.md "Replay").

Runs whole searches through the real coordinator and its strategies, with
`prism worker --replay FIXTURE` workers serving recorded curves instead of
training. It starts one coordinator and replay workers on loopback in a temp
dir, then for each strategy and search seed submits the search as a new
experiment, waits until the experiment's state is done (read from the
coordinator's SQLite file, read-only), and reads from the same file the
schedule the search chose (what `prism results` ranks first by mean final val
loss: the lowest mean over the seeds of the val loss at the whole budget,
among schedules trained to the whole budget on every seed) and the training
steps it used (per trial, the last stored step; replayed trials never redo
steps). One process launch per search: on a loaded 2-core host each `prism`
launch costs seconds.

The reference is the full grid, run the same way first: its best schedule,
and the schedules statistically tied with it by the project's paired
statistics: a two-sided paired t-test over the seeds of the per-seed final
val loss difference (scheduler/stats/statistics.h PairedTTestP, unadjusted, as
`prism compare` decides better / worse / tied), p >= 0.05 is "tied". The
driver computes it here (3 seeds: 2 degrees of freedom, p = 1 - |t| /
sqrt(2 + t^2) exactly) and checks its verdicts against `prism compare` on a
few schedules. A search succeeds when it chose the best or a tied schedule.

  python3 bench/replay_bench.py --prism build/cli/prism \
      --fixture bench/replay/grid_d64_l8_h8.replay \
      --spec bench/replay/grid_d64_l8_h8.textproto --searches 20 \
      --out /tmp/replay_bench.json
"""

import argparse
import json
import math
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd, env, check=True, **kw):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): "
                           f"{p.stderr.strip()[-2000:]}")
    return p


class Cluster:
    """A coordinator and replay workers in a temp dir (a context manager)."""

    def __init__(self, prism, fixture, workers, keep=False):
        self.prism, self.fixture, self.nworkers = prism, fixture, workers
        self.keep = keep
        self.procs = []

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="prism_replay_")
        d = self.dir
        self.db = os.path.join(d, "prism.db")
        ready = os.path.join(d, "ready.json")
        token = os.path.join(d, "admin.token")
        log = open(os.path.join(d, "coordinator.log"), "w")
        self.procs.append(subprocess.Popen(
            [self.prism, "coordinator", "--db", self.db, "--listen",
             "127.0.0.1:0", "--http", "127.0.0.1:0", "--admin-token-file",
             token, "--ready-file", ready],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        # The coordinator writes its ready file once it serves.
        deadline = time.time() + 60
        while not os.path.exists(ready):
            if self.procs[0].poll() is not None or time.time() > deadline:
                raise RuntimeError("coordinator did not start: " + open(
                    os.path.join(d, "coordinator.log")).read()[-2000:])
            time.sleep(0.05)
        endpoints = json.load(open(ready))
        self.env = dict(os.environ, PRISM_COORDINATOR=endpoints["grpc"],
                        PRISM_TOKEN_FILE=token)
        for i in range(self.nworkers):
            wlog = open(os.path.join(d, f"worker-{i}.log"), "w")
            self.procs.append(subprocess.Popen(
                [self.prism, "worker", "--replay", self.fixture, "--device",
                 "cpu", "--threads", "1", "--attention", "fused",
                 "--checkpoint-dir", os.path.join(d, "checkpoints")],
                env=self.env, stdout=wlog, stderr=subprocess.STDOUT,
                start_new_session=True))
        return self

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def prism_cmd(self, *args, check=True):
        return run([self.prism, *args], self.env, check=check)

    def search(self, spec_text):
        """Submits, waits for the end, returns (experiment id, seconds)."""
        path = os.path.join(self.dir, "spec.textproto")
        with open(path, "w") as f:
            f.write(spec_text)
        start = time.time()
        out = self.prism_cmd("submit", path, "--format", "json").stdout
        try:
            eid = int(json.loads(out)["experiment"]["id"])
        except (KeyError, ValueError) as e:
            raise RuntimeError(f"submit printed {out!r}") from e
        # Wait for the experiment's final state (3 cancelled, 4 done).
        while self.query("SELECT state FROM experiments WHERE id = ?",
                         (eid,))[0][0] not in (3, 4):
            time.sleep(0.1)
        return eid, time.time() - start

    def query(self, sql, args):
        db = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        try:
            return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def final_losses(self, eid, steps):
        """{schedule: {seed: final val loss}} of trials trained to `steps`."""
        out = {}
        for schedule, seed, loss in self.query(
                "SELECT t.schedule, t.seed, p.loss FROM trials t JOIN points p"
                " ON p.trial_id = t.id WHERE t.experiment_id = ? AND"
                " p.split = 2 AND p.step = ?", (eid, steps)):
            out.setdefault(schedule, {})[seed] = loss
        seeds = max(len(v) for v in out.values())
        return {s: v for s, v in out.items() if len(v) == seeds}

    def best(self, eid, steps):
        losses = self.final_losses(eid, steps)
        mean = {s: statistics.mean(v.values()) for s, v in losses.items()}
        best = min(mean, key=mean.get)
        return best, mean[best]

    def steps_used(self, eid):
        rows = self.query(
            "SELECT t.id, MAX(p.step) FROM trials t JOIN points p ON "
            "p.trial_id = t.id WHERE t.experiment_id = ? GROUP BY t.id",
            (eid,))
        states = self.query(
            "SELECT state, COUNT(*) FROM trials WHERE experiment_id = ? "
            "GROUP BY state", (eid,))
        return sum(step for _, step in rows), dict(states)


def paired_p(deltas):
    """Two-sided paired t-test p-value for 3 deltas (2 degrees of freedom)."""
    assert len(deltas) == 3, "the closed form is for 3 seeds"
    m, sd = statistics.mean(deltas), statistics.stdev(deltas)
    if sd == 0:
        return 1.0 if m == 0 else 0.0
    t = m / (sd / math.sqrt(3))
    return 1 - abs(t) / math.sqrt(2 + t * t)


def spec_for(base, strategy, seed, args):
    extra = {
        "grid": "strategy: STRATEGY_GRID\n",
        "random": f"strategy: STRATEGY_RANDOM\nsamples: {args.samples}\n"
                  f"sample_seed: {seed}\n",
        "guided": f"strategy: STRATEGY_GUIDED\nsamples: {args.samples}\n"
                  f"sample_seed: {seed}\n"
                  f"guided {{ initial: {args.guided_initial} "
                  f"parallel: {args.guided_parallel} }}\n",
        "asha": "strategy: STRATEGY_ASHA\n"
                f"asha {{ {' '.join(f'rungs: {r}' for r in args.rungs)} "
                f"eta: {args.eta} }}\n"
                + (f"samples: {args.asha_samples}\nsample_seed: {seed}\n"
                   if args.asha_samples else ""),
    }[strategy]
    return base + f"\nname: \"replay {strategy} seed {seed}\"\n" + extra


def run_grid(c, base, args, steps_per_trial):
    """Runs the full grid; returns its best, tied set and steps."""
    eid, seconds = c.search(spec_for(base, "grid", 0, args))
    losses = c.final_losses(eid, steps_per_trial)
    best, best_loss = c.best(eid, steps_per_trial)
    steps, states = c.steps_used(eid)
    seeds = sorted(losses[best])
    tied, p_values = [best], {}
    for s, v in losses.items():
        if s != best:
            p_values[s] = paired_p([v[k] - losses[best][k] for k in seeds])
            if p_values[s] >= 0.05:
                tied.append(s)
    # The project's own verdicts on a few: the least tied schedules
    # and the tied one closest to the line.
    by_p = sorted(p_values, key=p_values.get)
    checked = by_p[:args.check_compare] + [
        s for s in by_p if p_values[s] >= 0.05][:1]
    for s in checked:
        cmp = json.loads(c.prism_cmd(
            "compare", "--experiment", str(eid), best, s, "--format",
            "json").stdout)
        mine = "VERDICT_TIED" if p_values[s] >= 0.05 else "not tied"
        theirs = cmp.get("verdict")
        if (theirs == "VERDICT_TIED") != (mine == "VERDICT_TIED"):
            raise RuntimeError(f"{s}: p {p_values[s]:.4f} here, "
                               f"prism compare says {theirs}")
        print(f"  compare {best} {s}: {theirs}, p {cmp.get('pValue')}"
              f" (here {p_values[s]:.4f})")
    mean = {s: statistics.mean(v.values()) for s, v in losses.items()}
    grid = {"best": best, "best_loss": best_loss, "steps": steps,
            "states": states, "seconds": seconds, "tied": tied,
            "schedules": len(losses), "mean_loss": mean,
            "p_values": p_values}
    print(f"grid: best {best} ({best_loss:.4f}), {len(tied) - 1} of "
          f"{len(losses) - 1} other schedules tied with it, {steps} steps, "
          f"{seconds:.1f}s", flush=True)
    return grid


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prism", default="build/cli/prism")
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--spec", required=True,
                    help="the fixture's grid spec (no strategy fields)")
    ap.add_argument("--searches", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--strategies", default="random,asha,guided")
    ap.add_argument("--samples", type=int, default=47,
                    help="random and guided: schedules beside the baseline")
    ap.add_argument("--guided-initial", type=int, default=12)
    ap.add_argument("--guided-parallel", type=int, default=2)
    ap.add_argument("--rungs", type=int, nargs="+", required=True)
    ap.add_argument("--eta", type=int, default=3)
    ap.add_argument("--asha-samples", type=int, default=0,
                    help="ASHA over this many random draws (0: the grid)")
    ap.add_argument("--check-compare", type=int, default=3,
                    help="check this many tied verdicts with prism compare")
    ap.add_argument("--grid-from",
                    help="take the grid's results from an earlier --out "
                         "instead of running it")
    ap.add_argument("--out", required=True)
    ap.add_argument("--keep", action="store_true", help="keep temp dirs")
    args = ap.parse_args()
    base = open(args.spec).read()
    result = {"args": vars(args), "searches": []}

    steps_per_trial = int(re.search(r"steps:\s*(\d+)", base).group(1))
    with Cluster(args.prism, args.fixture, args.workers, args.keep) as c:
        if args.grid_from:
            grid = json.load(open(args.grid_from))["grid"]
        else:
            grid = run_grid(c, base, args, steps_per_trial)
        result["grid"] = grid
        mean = grid["mean_loss"]
        json.dump(result, open(args.out, "w"), indent=1)

        for strategy in args.strategies.split(","):
            for seed in range(1, args.searches + 1):
                eid, seconds = c.search(spec_for(base, strategy, seed, args))
                chosen, chosen_loss = c.best(eid, steps_per_trial)
                steps, states = c.steps_used(eid)
                row = {"strategy": strategy, "seed": seed, "chosen": chosen,
                       "chosen_loss": chosen_loss, "steps": steps,
                       "fraction": steps / grid["steps"],
                       "exact": chosen == grid["best"],
                       "success": chosen in grid["tied"],
                       "regret": chosen_loss - grid["best_loss"],
                       # 1-based place of the choice in the grid's order.
                       "rank": 1 + sorted(mean.values()).index(mean[chosen]),
                       "seconds": seconds, "states": states}
                result["searches"].append(row)
                print(f"{strategy} seed {seed}: {chosen} ({chosen_loss:.4f}) "
                      f"{'best' if row['exact'] else 'tied' if row['success'] else 'MISS'}"
                      f" rank {row['rank']}, {row['fraction']:.1%} of grid "
                      f"steps, {seconds:.1f}s", flush=True)
                json.dump(result, open(args.out, "w"), indent=1)

    print("\nstrategy  searches  success  exact  top-5  mean steps/grid  max  "
          "mean regret  median rank  mean s")
    for strategy in args.strategies.split(","):
        rows = [r for r in result["searches"] if r["strategy"] == strategy]
        if not rows:
            continue
        print(f"{strategy:8}  {len(rows):8}  "
              f"{sum(r['success'] for r in rows) / len(rows):7.0%}  "
              f"{sum(r['exact'] for r in rows) / len(rows):5.0%}  "
              f"{sum(r['rank'] <= 5 for r in rows) / len(rows):5.0%}  "
              f"{statistics.mean(r['fraction'] for r in rows):15.1%}  "
              f"{max(r['fraction'] for r in rows):4.0%}  "
              f"{statistics.mean(r['regret'] for r in rows):11.4f}  "
              f"{statistics.median(r['rank'] for r in rows):11}  "
              f"{statistics.mean(r['seconds'] for r in rows):6.1f}")
    json.dump(result, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
