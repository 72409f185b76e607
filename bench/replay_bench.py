#!/usr/bin/env python3
"""Replay benchmark driver (issue 13 items 3 and 4; bench/RESULTS.md "Replay").

Runs whole searches through the real coordinator and its strategies, with
`prism worker --replay FIXTURE` workers serving recorded curves instead of
training: for each strategy and search seed it starts a coordinator and
replay workers on loopback in a temp dir, submits the search, waits for the
experiment to end (`prism watch`, which returns on the final state), and reads
the schedule the search chose (the coordinator's ranking: the lowest mean
final val loss among schedules trained to the whole budget) and the training
steps it used (per trial, the last stored step; replayed trials never redo
steps).

The reference is the full grid, run the same way once: its best schedule,
and the schedules statistically tied with it by the project's own paired
statistics (`prism compare --experiment GRID BEST X`: a two-sided paired
t-test over the common seeds of the per-seed final val loss, p >= 0.05 is
"tied"). A search succeeds when it chose the best or a tied schedule.

  python3 bench/replay_bench.py --prism build/cli/prism \
      --fixture bench/replay/grid_d64_l8_h8.replay \
      --spec bench/replay/grid_d64_l8_h8.textproto --searches 20 \
      --out /tmp/replay_bench.json
"""

import argparse
import json
import os
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
        self.prism_cmd("watch", str(eid))
        return eid, time.time() - start

    def experiment(self, eid):
        return json.loads(self.prism_cmd("status", str(eid), "--format",
                                         "json").stdout)

    def ranking(self, eid):
        """Every ranked schedule (the baseline among them), as JSON rows."""
        ranking = json.loads(self.prism_cmd(
            "results", "--experiment", str(eid), "--format", "json").stdout)
        rows = list(ranking.get("schedules", []))
        if ranking.get("baseline", {}).get("schedule") not in {
                r["schedule"] for r in rows}:
            rows.append(ranking["baseline"])
        # Only schedules trained to the whole budget on every seed count.
        seeds = max(r.get("seedsCompleted", 0) for r in rows)
        return [r for r in rows
                if "finalValLoss" in r and r.get("seedsCompleted") == seeds]

    def best(self, eid):
        """The ranking's schedule with the lowest mean final val loss."""
        best = min(self.ranking(eid),
                   key=lambda r: float(r["finalValLoss"]["mean"]))
        return best["schedule"], float(best["finalValLoss"]["mean"])

    def steps_used(self, eid):
        db = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            rows = db.execute(
                "SELECT t.id, MAX(p.step) FROM trials t JOIN points p ON "
                "p.trial_id = t.id WHERE t.experiment_id = ? GROUP BY t.id",
                (eid,)).fetchall()
            states = db.execute(
                "SELECT state, COUNT(*) FROM trials WHERE experiment_id = ? "
                "GROUP BY state", (eid,)).fetchall()
        finally:
            db.close()
        return sum(step for _, step in rows), dict(states)


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prism", default="build/cli/prism")
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--spec", required=True,
                    help="the fixture's grid spec (no strategy fields)")
    ap.add_argument("--searches", type=int, default=20)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--strategies", default="random,asha,guided")
    ap.add_argument("--samples", type=int, default=47,
                    help="random and guided: schedules beside the baseline")
    ap.add_argument("--guided-initial", type=int, default=12)
    ap.add_argument("--guided-parallel", type=int, default=2)
    ap.add_argument("--rungs", type=int, nargs="+", required=True)
    ap.add_argument("--eta", type=int, default=3)
    ap.add_argument("--asha-samples", type=int, default=0,
                    help="ASHA over this many random draws (0: the grid)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--keep", action="store_true", help="keep temp dirs")
    args = ap.parse_args()
    base = open(args.spec).read()
    result = {"args": vars(args), "searches": []}

    with Cluster(args.prism, args.fixture, args.workers, args.keep) as c:
        eid, seconds = c.search(spec_for(base, "grid", 0, args))
        best, best_loss = c.best(eid)
        steps, states = c.steps_used(eid)
        rows = c.ranking(eid)
        schedules = [r["schedule"] for r in rows]
        tied = [best]
        for s in schedules:
            if s == best:
                continue
            cmp = json.loads(c.prism_cmd(
                "compare", "--experiment", str(eid), best, s, "--format",
                "json").stdout)
            if cmp.get("verdict") == "VERDICT_TIED":
                tied.append(s)
        loss = {r["schedule"]: float(r["finalValLoss"]["mean"]) for r in rows}
        grid = {"best": best, "best_loss": best_loss, "steps": steps,
                "states": states, "seconds": seconds, "tied": tied,
                "schedules": len(schedules), "mean_loss": loss}
        result["grid"] = grid
        print(f"grid: best {best} ({best_loss:.4f}), {len(tied)} of "
              f"{len(schedules)} schedules tied with it, {steps} steps, "
              f"{seconds:.1f}s", flush=True)

    for strategy in args.strategies.split(","):
        for seed in range(1, args.searches + 1):
            with Cluster(args.prism, args.fixture, args.workers,
                         args.keep) as c:
                eid, seconds = c.search(spec_for(base, strategy, seed, args))
                chosen, chosen_loss = c.best(eid)
                steps, states = c.steps_used(eid)
            row = {"strategy": strategy, "seed": seed, "chosen": chosen,
                   "chosen_loss": chosen_loss, "steps": steps,
                   "fraction": steps / grid["steps"],
                   "exact": chosen == grid["best"],
                   "success": chosen in grid["tied"],
                   "regret": chosen_loss - grid["best_loss"],
                   "seconds": seconds, "states": states}
            result["searches"].append(row)
            print(f"{strategy} seed {seed}: {chosen} ({chosen_loss:.4f}) "
                  f"{'best' if row['exact'] else 'tied' if row['success'] else 'MISS'}"
                  f" {row['fraction']:.1%} of grid steps, {seconds:.1f}s",
                  flush=True)
        json.dump(result, open(args.out, "w"), indent=1)

    print("\nstrategy  searches  success  exact  mean steps/grid  max  "
          "mean regret  mean s")
    for strategy in args.strategies.split(","):
        rows = [r for r in result["searches"] if r["strategy"] == strategy]
        if not rows:
            continue
        print(f"{strategy:8}  {len(rows):8}  "
              f"{sum(r['success'] for r in rows) / len(rows):7.0%}  "
              f"{sum(r['exact'] for r in rows) / len(rows):5.0%}  "
              f"{statistics.mean(r['fraction'] for r in rows):15.1%}  "
              f"{max(r['fraction'] for r in rows):4.0%}  "
              f"{statistics.mean(r['regret'] for r in rows):11.4f}  "
              f"{statistics.mean(r['seconds'] for r in rows):6.1f}")
    json.dump(result, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
