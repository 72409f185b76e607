"""The Python client's write side against a live coordinator: submit, plan,
wait, watch, pause/resume/cancel/set_priority, add_seeds and
train_suggestions (ExperimentService.Extend), compare, suggest and
plot_curves' paired deltas, and the end-to-end example
(clients/python/examples/steer.py).

It starts, on loopback, `prism coordinator` with a `prism worker --replay`
over the replay benchmark's recorded curves
(bench/replay/grid_d64_l8_h8.replay: every schedule of the d64/8-layer grid
on seeds 1, 2, 3), and a second coordinator with no worker, where an
experiment stays active for as long as a test needs. Both get a second
user, bob, whose token the admin makes. Through the client it submits a grid
of six schedules on seeds 1 and 2 and waits for it, writing wait()'s
progress to a file that is not a terminal. Then:
  * plan() stores nothing and shows what it would queue; submit() takes
    textproto text, a .textproto path, a dict and a message alike, and
    sets the priority; a bad spec raises PrismError INVALID_ARGUMENT naming
    the line and column (the file's name for a file) or the field;
  * pause, resume, set_priority and cancel change what Get returns; bob
    gets PERMISSION_DENIED naming him for each, and nothing changes;
  * wait() prints one plain line per change off a terminal, a tqdm bar on
    one, nothing with progress=False, and returns the ranking; SIGINT to a
    child process in wait() stops it with a message saying how to wait
    again, and the experiment is still active with nothing cancelled;
  * watch() yields the experiment first and ends on the event that says it
    was cancelled;
  * the ranking has NaN, not 0, for a speed-up no seed reached; compare()'s
    delta is the fixture's paired final val loss delta; suggest() proposes
    untried schedules best first;
  * plot_curves() draws, per schedule, the fixture's mean paired delta at
    each step and a band of the 95% Student-t interval (t from scipy, as
    numbers below), the baseline at 0; raw=True the mean losses;
  * add_seeds (dry run, then for real) adds seed 3 to every schedule and
    the baseline and reuses the 14 trials; train_suggestions trains what
    suggest proposed; wait() follows each until it is done again;
  * steer.py runs from plan to plot.
Every process it started is stopped at the end, pass or fail.

Exit: 0 pass, 1 fail, 77 skipped (a Python module deploy/setup.sh installs is
missing).

  python3 prism_client_steer_test.py --prism build/cli/prism --source . \
      --stubs build/clients/python/gen
"""

import contextlib
import io
import math
import os
import re
import runpy
import selectors
import signal
import subprocess
import sys
import time
import types
import unittest
import unittest.mock
import warnings

from harness import (Cluster, environment, import_client, kNoClientEnv,
                     kStartSeconds, parse_args, read_fixture_val_curves)

kSchedules = ["1x4,8x4", "2x4,8x4", "4x4,8x4", "1x2,8x6", "2x2,8x6",
              "1x1,2x1,8x6"]
# Its val loss never reaches the baseline's final one on any seed in the
# fixture: no speed-up.
kNeverReaches = "1x1,2x1,8x6"
kSeeds = [1, 2]
kBaseline = "8x8"
kTrials = (len(kSchedules) + 1) * len(kSeeds)
kLastStep = 60
# scipy.stats.t.ppf(0.975, dof) (scipy 1.10.1), for the client's own t
# quantile; dof 1 is tan(0.475 pi) exactly.
kT975 = {1: 12.706204736174707, 2: 4.302652729911275, 3: 3.182446305284263,
         4: 2.7764451051977987, 5: 2.5705818366147395,
         7: 2.3646242510102993, 10: 2.2281388519649385,
         30: 2.0422724563012373, 100: 1.9839715184496334,
         999: 1.9623414611334487}

ARGS = None
CLUSTER = None


def replay_spec(name, schedules=kSchedules, seeds=kSeeds):
    recipe = (ARGS.source /
              "bench/replay/grid_d64_l8_h8.textproto").read_text()
    return (recipe.replace("seeds: [1, 2, 3]", "") + f'name: "{name}"\n' +
            "".join(f'schedules: "{s}"\n' for s in schedules) +
            f"seeds: {list(seeds)}\n")


def make_token(cluster, address, token_file, user):
    return cluster.run_prism(["token", "create", "--user", user, "--role",
                              "user", "--coordinator", address,
                              "--token-file", token_file]).strip()


def setUpModule():
    global CLUSTER
    CLUSTER = Cluster(ARGS.prism)
    unittest.addModuleCleanup(CLUSTER.stop)
    c = CLUSTER
    c.fixture = ARGS.source / "bench/replay/grid_d64_l8_h8.replay"
    c.recorded = read_fixture_val_curves(c.fixture)
    c.address, c.token_file = c.start_coordinator("coordinator")
    c.start("worker", ["worker", "--coordinator", c.address, "--token-file",
                       c.token_file, "--replay", str(c.fixture),
                       "--checkpoint-dir", str(c.tmp / "checkpoints")])
    c.idle_address, c.idle_token_file = c.start_coordinator("idle")
    c.client = prism_client.connect(c.address, token_file=c.token_file)
    c.idle = prism_client.connect(c.idle_address,
                                  token_file=c.idle_token_file)
    unittest.addModuleCleanup(c.idle.close)
    c.bob = prism_client.connect(
        c.address, token=make_token(c, c.address, c.token_file, "bob"))
    c.idle_bob = prism_client.connect(
        c.idle_address,
        token=make_token(c, c.idle_address, c.idle_token_file, "bob"))
    unittest.addModuleCleanup(c.bob.close)
    unittest.addModuleCleanup(c.idle_bob.close)
    c.spec_path = c.tmp / "grid.textproto"
    c.spec_path.write_text(replay_spec("python-steer"))
    c.plan = c.client.submit(str(c.spec_path))
    c.experiment_id = c.plan.id
    c.wait_output = io.StringIO()
    c.ranking = c.client.wait(c.plan, file=c.wait_output)


def assert_error(test, raised, code, *words):
    error = raised.exception
    test.assertEqual(error.code, code, str(error))
    test.assertTrue(str(error).startswith(f"{code}: "), str(error))
    test.assertEqual(str(error), f"{error.code}: {error.message}")
    for word in words:
        test.assertIn(word, error.message)


class StatisticsTest(unittest.TestCase):
    """The client's t quantile and delta_curve_frame, off the network."""

    def test_t_quantile_matches_scipy(self):
        for dof, expected in kT975.items():
            self.assertAlmostEqual(prism_client.t_quantile_975(dof) /
                                   expected, 1.0, places=9, msg=dof)

    def test_delta_curve_pairs_by_seed_and_step_with_a_t_interval(self):
        import pandas as pd
        nan = math.nan
        curves = pd.DataFrame(
            [(1, 10, 3.0, 3.5), (2, 10, 3.2, 3.4), (3, 10, 2.9, 3.6),
             (1, 20, 2.0, 2.1), (2, 20, 2.4, nan), (3, 20, nan, 2.0),
             (1, 30, 1.5, 1.0)],
            columns=["seed", "step", "loss", "baseline_loss"])
        frame = prism_client.delta_curve_frame(curves)
        self.assertEqual(list(frame["step"]), [10, 20, 30])
        self.assertEqual(list(frame["seeds"]), [3, 1, 1])
        deltas = [-0.5, -0.2, -0.7]
        mean = sum(deltas) / 3
        sd = math.sqrt(sum((d - mean) ** 2 for d in deltas) / 2)
        half = kT975[2] * sd / math.sqrt(3)
        self.assertAlmostEqual(frame.loc[0, "delta"], mean, places=12)
        self.assertAlmostEqual(frame.loc[0, "delta_low"], mean - half,
                               places=9)
        self.assertAlmostEqual(frame.loc[0, "delta_high"], mean + half,
                               places=9)
        # One pair at steps 20 and 30: a mean, no interval.
        self.assertAlmostEqual(frame.loc[1, "delta"], -0.1, places=12)
        self.assertAlmostEqual(frame.loc[2, "delta"], 0.5, places=12)
        self.assertTrue(frame.loc[1:, "delta_low"].isna().all())
        self.assertTrue(frame.loc[1:, "delta_high"].isna().all())


class FramesTest(unittest.TestCase):
    """What the coordinator does not have is NaN, not proto3's 0."""

    def test_ranking_without_values_has_nan_not_zero(self):
        pb = prism_client.pb
        response = pb.RankResponse()
        base = response.schedules.add(rank=1, schedule="8x8",
                                      is_baseline=True)
        base.final_val_loss.mean, base.final_val_loss.n = 3.3, 1
        response.schedules.add(rank=2, schedule="2x4,8x4",
                               verdict=pb.VERDICT_NEEDS_SEEDS)
        frame = prism_client.ranking_frame(response)
        self.assertEqual(frame.loc[0, "delta"], 0.0)
        self.assertEqual(frame.loc[0, "final_val_loss"], 3.3)
        self.assertEqual(frame.loc[1, "verdict"], "needs_seeds")
        numeric = ["delta", "delta_low", "delta_high", "adjusted_delta_low",
                   "adjusted_delta_high", "p_value", "adjusted_p_value",
                   "final_val_loss", "min_val_loss", "speedup", "speedup_low",
                   "speedup_high", "throughput_ratio", "throughput_ratio_low",
                   "throughput_ratio_high"]
        for column in numeric:
            self.assertTrue(math.isnan(frame.loc[1, column]), column)
        self.assertEqual(frame.loc[1, "seeds"], 0)

    def test_compare_without_common_seeds_has_nan(self):
        pb = prism_client.pb
        response = pb.CompareResponse(verdict=pb.VERDICT_NEEDS_SEEDS)
        response.a.schedule, response.b.schedule = "8x8", "2x4,8x4"
        summary = prism_client.compare_summary(response)
        for key in ["delta", "delta_low", "delta_high", "p_value",
                    "final_val_loss_a", "final_val_loss_b"]:
            self.assertTrue(math.isnan(summary[key]), key)
        self.assertEqual(summary["seeds"], 0)
        self.assertEqual(summary["verdict"], "needs_seeds")

    def test_plan_shows_the_estimate_fields_that_are_set(self):
        pb = prism_client.pb
        response = pb.SubmitResponse(trials_created=21)
        response.experiment.name = "bill"
        response.experiment.spec.seeds.extend([1, 2, 3])
        response.experiment.spec.budget.steps = 60
        response.plan.steps = 1260
        response.plan.expected_share = 0.472
        response.plan.share_source = "racing, known-truth benchmark"
        response.plan.worker_hours = 1.5
        response.plan.max_worker_hours = 0.00037
        response.plan.warnings.append("vocabulary 256 for 96 corpus tokens")
        response.headroom.trials = 21
        response.headroom.max_trials_per_experiment = 20000
        plan = prism_client._plan.plan_from(response, "submit", dry_run=True)
        text = repr(plan)
        self.assertTrue(text.startswith(
            "plan: 21 trials (bill), 3 seeds, 60 steps each; nothing "
            "submitted (a dry run)"), text)
        self.assertRegex(text, r"steps, expected +1,260\n")
        self.assertRegex(text, r"expected share +47\.2% of the grid\n")
        self.assertRegex(text, r"share from +racing, known-truth benchmark")
        self.assertRegex(text, r"worker time, expected +1\.50 worker-hours\n")
        self.assertRegex(text, r"worker time, at most +1\.3 worker-seconds\n")
        self.assertIn("warning: vocabulary 256 for 96 corpus tokens", text)
        self.assertIn("limits: 21 of 20000 trials per experiment", text)
        # Unset fields are not shown as zeros.
        self.assertNotIn("FLOPs", text)
        self.assertNotIn("tokens, expected", text)
        self.assertEqual(plan.estimate["steps"], 1260)
        self.assertEqual(plan.warnings,
                         ["vocabulary 256 for 96 corpus tokens"])


class SubmitTest(unittest.TestCase):
    """On the coordinator with no worker; each test cancels what it
    submitted."""

    def setUp(self):
        self.client = CLUSTER.idle
        self.submitted = []

    def tearDown(self):
        for experiment_id in self.submitted:
            self.client.cancel(experiment_id)

    def submit(self, spec, **kwargs):
        plan = self.client.submit(spec, **kwargs)
        self.submitted.append(plan.id)
        return plan

    def test_text_path_dict_and_message_submit_the_same_experiment(self):
        from google.protobuf import json_format
        text = replay_spec("forms")
        path = CLUSTER.tmp / "forms.textproto"
        path.write_text(text)
        resolved = self.client.plan(text).experiment.spec
        as_dict = json_format.MessageToDict(resolved)
        for spec in [text, str(path), path, as_dict, resolved]:
            plan = self.submit(spec)
            self.assertFalse(plan.dry_run)
            self.assertGreater(plan.id, 0)
            self.assertEqual(plan.trials_created, kTrials)
            stored = self.client.experiment(plan.id)
            self.assertEqual(stored.name, "forms")
            self.assertEqual(list(stored.spec.schedules), kSchedules)
            self.assertEqual(list(stored.spec.seeds), kSeeds)
            self.assertEqual(stored.counts.total, kTrials)
            self.assertIn(f"experiment {plan.id} submitted: {kTrials} "
                          "trials (forms)", repr(plan))

    def test_priority_is_set_with_the_submit(self):
        plan = self.submit(replay_spec("urgent"), priority=7)
        self.assertEqual(plan.experiment.priority, 7)
        self.assertEqual(self.client.experiment(plan.id).priority, 7)

    def test_plan_stores_nothing_and_says_what_it_would_queue(self):
        before = len(self.client.list_experiments())
        plan = self.client.plan(replay_spec("dry"))
        self.assertEqual(len(self.client.list_experiments()), before)
        self.assertTrue(plan.dry_run)
        self.assertEqual(plan.id, 0)
        self.assertEqual(plan.trials_created, kTrials)
        self.assertEqual(plan.headroom["trials"], kTrials)
        self.assertEqual(plan.experiment.spec.budget.steps, kLastStep)
        # A grid: every trial trains the whole budget, exactly.
        self.assertEqual(plan.estimate["trials"], kTrials)
        self.assertEqual(plan.estimate["seeds"], len(kSeeds))
        self.assertEqual(plan.estimate["schedules"], len(kSchedules) + 1)
        self.assertEqual(plan.estimate["steps"], kTrials * kLastStep)
        self.assertEqual(plan.estimate["grid_steps"], kTrials * kLastStep)
        self.assertEqual(plan.estimate["expected_share"], 1.0)
        text = repr(plan)
        self.assertTrue(text.startswith(
            f"plan: {kTrials} trials (dry), 2 seeds, 60 steps each; nothing "
            "submitted (a dry run)"), text)
        self.assertIn(f"limits: {kTrials} of ", text)
        # Every estimate field the coordinator set is on a row of its own.
        for label, cell in prism_client._plan.estimate_rows(plan.estimate):
            self.assertRegex(text, rf"\n  {re.escape(label)} +"
                             rf"{re.escape(cell)}\n")
        print(f"\n{text}", end=" ")

    def test_a_textproto_error_names_its_line_and_column(self):
        text = 'name: "x"\nseeds: [1\nbudget { steps: 3 }\n'
        with self.assertRaises(prism_client.PrismError) as raised:
            self.client.submit(text)
        assert_error(self, raised, "INVALID_ARGUMENT")
        self.assertRegex(raised.exception.message, r"^spec_text:3:1: ")
        path = CLUSTER.tmp / "broken.textproto"
        path.write_text(text)
        with self.assertRaises(prism_client.PrismError) as raised:
            self.client.plan(str(path))
        assert_error(self, raised, "INVALID_ARGUMENT")
        self.assertTrue(raised.exception.message.startswith(f"{path}:3:1: "),
                        raised.exception.message)

    def test_a_bad_field_or_value_is_named(self):
        with self.assertRaises(prism_client.PrismError) as raised:
            self.client.plan({"seed": [1]})
        assert_error(self, raised, "INVALID_ARGUMENT", '"seed"')
        bad_rate = replay_spec("x").replace("learning_rate: 0.004",
                                            "learning_rate: -1")
        with self.assertRaises(prism_client.PrismError) as raised:
            self.client.submit(bad_rate)
        assert_error(self, raised, "INVALID_ARGUMENT",
                     "budget.learning_rate")
        with self.assertRaises(prism_client.PrismError) as raised:
            self.client.submit(replay_spec("x", schedules=["3x8"]))
        assert_error(self, raised, "INVALID_ARGUMENT", "schedules[0]", "3x8")
        with self.assertRaises(prism_client.PrismError) as raised:
            self.client.submit(42)
        assert_error(self, raised, "INVALID_ARGUMENT", "not int")
        missing = str(CLUSTER.tmp / "missing.textproto")
        with self.assertRaises(prism_client.PrismError) as raised:
            self.client.submit(missing)
        assert_error(self, raised, "INVALID_ARGUMENT", missing)


# The client refuses submit's priority before it sends this.
kSpecNeverSent = 'name: "never sent" seeds: 1'


class SteerTest(unittest.TestCase):
    """pause, resume, set_priority, cancel and their refusals, on the
    coordinator with no worker."""

    def test_each_call_changes_what_get_returns(self):
        pb = prism_client.pb
        c = CLUSTER.idle
        plan = c.submit(replay_spec("steered"))
        self.assertEqual(c.pause(plan).state, pb.EXPERIMENT_PAUSED)
        self.assertEqual(c.experiment(plan.id).state, pb.EXPERIMENT_PAUSED)
        self.assertEqual(c.resume(plan.id).state, pb.EXPERIMENT_ACTIVE)
        self.assertEqual(c.experiment(plan.id).state, pb.EXPERIMENT_ACTIVE)
        self.assertEqual(c.set_priority(plan.id, 5).priority, 5)
        self.assertEqual(c.experiment(plan.id).priority, 5)
        cancelled = c.cancel(plan.experiment)
        self.assertEqual(cancelled.state, pb.EXPERIMENT_CANCELLED)
        self.assertEqual(c.experiment(plan.id).counts.cancelled, kTrials)

    def test_another_users_experiment_is_permission_denied(self):
        pb = prism_client.pb
        admin, bob = CLUSTER.idle, CLUSTER.idle_bob
        plan = admin.submit(replay_spec("admins"))
        self.addCleanup(admin.cancel, plan.id)
        calls = {
            "pause": lambda: bob.pause(plan.id),
            "resume": lambda: bob.resume(plan.id),
            "cancel": lambda: bob.cancel(plan.id),
            "set_priority": lambda: bob.set_priority(plan.id, 9),
            "add_seeds": lambda: bob.add_seeds(plan.id, count=1),
            "add_seeds(seeds=)": lambda: bob.add_seeds(plan.id, seeds=[3]),
        }
        for name, call in calls.items():
            with self.subTest(name):
                with self.assertRaises(prism_client.PrismError) as raised:
                    call()
                assert_error(self, raised, "PERMISSION_DENIED", "bob")
        stored = admin.experiment(plan.id)
        self.assertEqual(stored.state, pb.EXPERIMENT_ACTIVE)
        self.assertEqual(stored.priority, 0)
        self.assertEqual(stored.counts.total, kTrials)
        self.assertEqual(stored.counts.queued, kTrials)

    def test_arguments_the_client_refuses_before_calling(self):
        c = CLUSTER.idle
        cases = [
            (lambda: c.add_seeds(1), "one of count="),
            (lambda: c.add_seeds(1, count=1, to=3), "not count and to"),
            (lambda: c.add_seeds(1, count=1.5), "count takes a 32-bit"),
            (lambda: c.add_seeds(1, to=2**40), "to takes a 32-bit"),
            (lambda: c.add_seeds(1, seeds=["a"]), "seeds takes 64-bit"),
            (lambda: c.add_seeds(1, count=1, schedules=[4]), "not 4"),
            (lambda: c.plot_curves(1, schedules=7), "not 7"),
            (lambda: c.curves(1, "2x4,8x4", split="test"), "not 'test'"),
            (lambda: c.set_priority(1, "high"), "priority is a 32-bit"),
            (lambda: c.set_priority(1, 2**31), "not 2147483648"),
            (lambda: c.submit(kSpecNeverSent, priority="high"),
             "priority is a 32-bit"),
            (lambda: c.wait("first"), "not 'first'"),
            (lambda: c.pause(2.5), "not 2.5"),
            (lambda: c.suggest(1, "five"), "not 'five'"),
            (lambda: c.train_suggestions(1, 2.0), "not 2.0"),
        ]
        for call, words in cases:
            with self.subTest(words):
                with self.assertRaises(prism_client.PrismError) as raised:
                    call()
                assert_error(self, raised, "INVALID_ARGUMENT", words)
        self.assertNotIn("never sent", [e.name for e in c.list_experiments()])


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


class WaitTest(unittest.TestCase):

    def test_off_a_terminal_it_prints_a_line_per_change_and_returns_ranking(
            self):
        c = CLUSTER
        lines = c.wait_output.getvalue().splitlines()
        print(f"\n  {lines[0]}\n  ...\n  {lines[-1]}", end=" ")
        self.assertNotIn("\r", c.wait_output.getvalue())
        pattern = re.compile(
            rf"experiment {c.experiment_id}: (active|done), (\d+)/{kTrials} "
            r"trials finished, (\d+) running, (\d+) queued")
        finished = []
        for line in lines:
            match = pattern.fullmatch(line)
            self.assertIsNotNone(match, line)
            finished.append(int(match.group(2)))
        self.assertEqual(finished, sorted(finished))
        self.assertEqual(len(set(lines)), len(lines))
        self.assertEqual(lines[-1], f"experiment {c.experiment_id}: done, "
                         f"{kTrials}/{kTrials} trials finished, 0 running, "
                         "0 queued")
        import pandas.testing
        pandas.testing.assert_frame_equal(
            c.ranking, c.client.ranking(c.experiment_id))
        self.assertEqual(sorted(c.ranking["schedule"]),
                         sorted(kSchedules + [kBaseline]))
        self.assertTrue((c.ranking["seeds"] == len(kSeeds)).all())

    def test_on_a_terminal_it_draws_a_tqdm_bar(self):
        c = CLUSTER
        terminal = FakeTerminal()
        ranking = c.client.wait(c.experiment_id, file=terminal)
        drawn = terminal.getvalue()
        self.assertIn("\r", drawn)
        self.assertRegex(drawn, rf"experiment {c.experiment_id}: 100%\|.*\| "
                         rf"{kTrials}/{kTrials} .*done, 0 running, 0 queued")
        self.assertEqual(len(ranking), len(kSchedules) + 1)

    def test_in_jupyter_it_draws_tqdm_autos_bar_even_off_a_terminal(self):
        c = CLUSTER

        class Kernel:
            config = {"IPKernelApp": {}}

        ipython = types.ModuleType("IPython")
        ipython.get_ipython = Kernel
        drawn = io.StringIO()
        with unittest.mock.patch.dict(sys.modules, {"IPython": ipython}), \
                warnings.catch_warnings():
            # tqdm.auto falls back to its text bar without ipywidgets.
            warnings.simplefilter("ignore")
            c.client.wait(c.experiment_id, file=drawn)
        self.assertRegex(drawn.getvalue(),
                         rf"experiment {c.experiment_id}: 100%\|.*\| "
                         rf"{kTrials}/{kTrials} trials")

    def test_progress_false_prints_nothing(self):
        c = CLUSTER
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            ranking = c.client.wait(c.experiment_id, progress=False)
        self.assertEqual(err.getvalue(), "")
        self.assertEqual(len(ranking), len(kSchedules) + 1)

    def test_an_interrupt_stops_waiting_and_the_experiment_keeps_running(
            self):
        pb = prism_client.pb
        c = CLUSTER
        plan = c.idle.submit(replay_spec("interrupted"))
        self.addCleanup(c.idle.cancel, plan.id)
        script = ("import sys, prism_client\n"
                  "client = prism_client.connect(sys.argv[1],\n"
                  "                              token_file=sys.argv[2])\n"
                  "client.wait(int(sys.argv[3]))\n")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path[:2]))
        child = subprocess.Popen(
            [sys.executable, "-c", script, c.idle_address, c.idle_token_file,
             str(plan.id)], stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, env=env)
        self.addCleanup(lambda: child.poll() is None and child.kill())
        first = (f"experiment {plan.id}: active, 0/{kTrials} trials "
                 f"finished, 0 running, {kTrials} queued")
        self.assertEqual(read_line(child, first), first)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=kStartSeconds)
        self.assertNotEqual(child.returncode, 0, err)
        said = (f"stopped waiting for experiment {plan.id}; it keeps running "
                f"(nothing was cancelled): client.wait({plan.id}) waits "
                "again")
        self.assertIn(said + "\n", err)
        self.assertIn(f"KeyboardInterrupt: {said}", err)
        self.assertNotIn("_InactiveRpcError", err)
        print(f"\n  {said}", end=" ")
        stored = c.idle.experiment(plan.id)
        self.assertEqual(stored.state, pb.EXPERIMENT_ACTIVE)
        self.assertEqual(stored.counts.queued, kTrials)
        self.assertEqual(stored.counts.cancelled, 0)


def read_line(child, wanted):
    """Returns the first line of the child's stderr that is `wanted`; fails
    after kStartSeconds or when the child exits first."""
    deadline = time.monotonic() + kStartSeconds
    seen = []
    with selectors.DefaultSelector() as selector:
        selector.register(child.stderr, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=0.05):
                continue
            line = child.stderr.readline()
            if not line:
                break
            seen.append(line)
            if line.rstrip("\n") == wanted:
                return wanted
    raise AssertionError(f"no line {wanted!r} from the child; it said:\n" +
                         "".join(seen))


class WatchTest(unittest.TestCase):

    def test_it_yields_the_experiment_first_and_ends_when_it_is_cancelled(
            self):
        pb = prism_client.pb
        c = CLUSTER
        plan = c.idle.submit(replay_spec("watched"))
        events = c.idle.watch(plan)
        first = next(events)
        self.assertEqual(first.experiment_updated.id, plan.id)
        self.assertEqual(first.experiment_updated.state, pb.EXPERIMENT_ACTIVE)
        c.idle.cancel(plan.id)
        rest = list(events)  # ends by itself
        self.assertTrue(rest[-1].HasField("experiment_updated"))
        self.assertEqual(rest[-1].experiment_updated.state,
                         pb.EXPERIMENT_CANCELLED)

    def test_a_done_experiment_is_one_event(self):
        events = list(CLUSTER.client.watch(CLUSTER.experiment_id))
        self.assertEqual(len(events), 1)
        self.assertEqual(events[0].experiment_updated.state,
                         prism_client.pb.EXPERIMENT_DONE)
        self.assertEqual(events[0].experiment_updated.counts.completed,
                         kTrials)

    def test_an_unknown_experiment_raises_not_found(self):
        with self.assertRaises(prism_client.PrismError) as raised:
            next(CLUSTER.client.watch(987654))
        assert_error(self, raised, "NOT_FOUND", "987654")
        self.assertIsNone(raised.exception.__cause__)


def recorded_deltas(schedule, seeds=kSeeds):
    """{step: [per-seed val loss delta vs the baseline]} from the fixture."""
    recorded = CLUSTER.recorded
    out = {}
    for seed in seeds:
        mine, base = recorded[(schedule, seed)], recorded[(kBaseline, seed)]
        for step in sorted(set(mine) & set(base)):
            out.setdefault(step, []).append(mine[step] - base[step])
    return out


class ResultsTest(unittest.TestCase):

    def row(self, schedule):
        ranking = CLUSTER.ranking
        return ranking[ranking["schedule"] == schedule].iloc[0]

    def test_a_speedup_no_seed_reached_is_nan(self):
        row = self.row(kNeverReaches)
        self.assertEqual(row["speedup_reached"], 0)
        self.assertEqual(row["speedup_seeds"], len(kSeeds))
        self.assertTrue(math.isnan(row["speedup"]))
        self.assertTrue(math.isnan(row["speedup_low"]))
        self.assertFalse(math.isnan(row["delta"]))
        self.assertFalse(math.isnan(row["final_val_loss"]))
        reached = CLUSTER.ranking[CLUSTER.ranking["speedup_reached"] > 0]
        self.assertTrue(reached["speedup"].notna().all())

    def test_compare_is_the_paired_final_delta(self):
        c = CLUSTER
        schedule = kSchedules[1]
        deltas = recorded_deltas(schedule)[kLastStep]
        comparison = c.client.compare(c.experiment_id, kBaseline, schedule)
        self.assertEqual(comparison["schedule_a"], kBaseline)
        self.assertEqual(comparison["schedule_b"], schedule)
        self.assertEqual(comparison["seeds"], len(kSeeds))
        self.assertAlmostEqual(comparison["delta"], sum(deltas) / len(deltas),
                               places=5)
        self.assertLess(comparison["delta_low"], comparison["delta"])
        self.assertGreater(comparison["delta_high"], comparison["delta"])
        self.assertTrue(0 <= comparison["p_value"] <= 1)
        self.assertIn(comparison["verdict"],
                      ["better", "worse", "inconclusive"])
        self.assertAlmostEqual(comparison["delta"],
                               self.row(schedule)["delta"], places=9)

    def test_compare_of_an_untried_schedule_raises_not_found(self):
        with self.assertRaises(prism_client.PrismError) as raised:
            CLUSTER.client.compare(CLUSTER.experiment_id, kBaseline,
                                   "2x1,8x7")
        assert_error(self, raised, "NOT_FOUND", "2x1,8x7")

    def test_suggest_proposes_untried_schedules_best_first(self):
        # Fitted on a handful of schedules: it says so, in attrs and as a
        # Python warning.
        with self.assertWarnsRegex(UserWarning,
                                   f"fitted on {len(kSchedules)} schedules"):
            suggestions = CLUSTER.client.suggest(CLUSTER.experiment_id, 4)
        self.assertTrue(any(f"fitted on {len(kSchedules)} schedules" in w
                            for w in suggestions.attrs["warnings"]))
        self.assertEqual(len(suggestions), 4)
        self.assertFalse(set(suggestions["schedule"]) &
                         set(kSchedules + [kBaseline]))
        self.assertEqual(list(suggestions["acquisition"]),
                         sorted(suggestions["acquisition"]))
        for _, s in suggestions.iterrows():
            self.assertAlmostEqual(s["acquisition"],
                                   s["predicted_delta"] - s["uncertainty"])
        self.assertEqual(suggestions.attrs["observed_schedules"],
                         len(kSchedules))
        with self.assertRaises(prism_client.PrismError) as raised:
            CLUSTER.client.suggest(CLUSTER.experiment_id, 0)
        assert_error(self, raised, "INVALID_ARGUMENT")


class PlotTest(unittest.TestCase):

    def test_delta_mode_plots_the_mean_paired_delta_and_its_t_band(self):
        c = CLUSTER
        plotted = kSchedules[:2]
        figure = c.client.plot_curves(c.plan, schedules=plotted,
                                      path=c.tmp / "deltas.png")
        self.assertEqual((c.tmp / "deltas.png").read_bytes()[:4],
                         b"\x89PNG")
        ax = figure.axes[0]
        lines = {line.get_label(): line for line in ax.get_lines()}
        self.assertEqual(list(lines["uniform baseline"].get_ydata()),
                         [0.0, 0.0])
        bands = {band.get_gid(): band for band in ax.collections}
        for schedule in plotted:
            expected = recorded_deltas(schedule)
            steps = sorted(expected)
            line = lines[schedule]
            self.assertEqual(list(line.get_xdata()), steps)
            for step, y in zip(steps, line.get_ydata()):
                deltas = expected[step]
                self.assertAlmostEqual(y, sum(deltas) / 2, places=5)
            # Two seeds: mean +- t(1 dof) sd / sqrt 2; the band's outline
            # holds both bounds at every step.
            outline = bands[schedule].get_paths()[0].vertices
            for step in steps:
                a, b = expected[step]
                mean = (a + b) / 2
                half = kT975[1] * abs(a - b) / math.sqrt(2) / math.sqrt(2)
                at = sorted(y for x, y in outline if x == step)
                self.assertAlmostEqual(at[0], mean - half, places=4)
                self.assertAlmostEqual(at[-1], mean + half, places=4)
        self.assertIn("delta", ax.get_ylabel())
        self.assertTrue(ax.get_title().startswith(
            f"experiment {c.experiment_id}: val loss delta"), ax.get_title())

    def test_raw_mode_plots_the_mean_losses(self):
        c = CLUSTER
        schedule = kSchedules[0]
        figure = c.client.plot_curves(c.experiment_id, schedules=schedule,
                                      raw=True)
        lines = {line.get_label(): line
                 for line in figure.axes[0].get_lines()}
        for name in [schedule, "uniform baseline"]:
            recorded = [c.recorded[(schedule if name == schedule
                                    else kBaseline, seed)] for seed in kSeeds]
            steps = sorted(recorded[0])
            self.assertEqual(list(lines[name].get_xdata()), steps)
            for step, y in zip(steps, lines[name].get_ydata()):
                self.assertAlmostEqual(
                    y, sum(r[step] for r in recorded) / len(kSeeds), places=5)
        self.assertIn("mean over seeds", figure.axes[0].get_ylabel())


class ExtendTest(unittest.TestCase):
    """add_seeds and train_suggestions on an experiment of their own, on the
    coordinator with the replay worker."""

    def test_add_seeds_then_train_suggestions_reuse_every_trial(self):
        c = CLUSTER
        client = c.client
        plan = client.submit(replay_spec("extended"))
        client.wait(plan, progress=False)

        dry = client.add_seeds(plan, count=1, dry_run=True)
        self.assertTrue(dry.dry_run)
        self.assertEqual(dry.seeds_added, [3])
        self.assertEqual(dry.trials_created, len(kSchedules) + 1)
        self.assertEqual(dry.trials_reused, kTrials)
        self.assertIn("nothing added (a dry run)", repr(dry))
        self.assertEqual(client.experiment(plan).counts.total, kTrials)

        added = client.add_seeds(plan, count=1)
        self.assertEqual(added.seeds_added, [3])
        self.assertEqual(added.experiment.state,
                         prism_client.pb.EXPERIMENT_ACTIVE)
        self.assertEqual(added.trials_created, len(kSchedules) + 1)
        self.assertEqual(added.id, plan.id)
        print(f"\n  {added.headline()}", end=" ")
        ranking = client.wait(plan, progress=False)
        self.assertTrue((ranking["seeds"] == 3).all(), ranking)
        self.assertEqual(client.experiment(plan).counts.total,
                         kTrials + len(kSchedules) + 1)

        with self.assertRaises(prism_client.PrismError) as raised:
            client.add_seeds(plan, seeds=[2])
        assert_error(self, raised, "INVALID_ARGUMENT", "seeds")

        suggested = list(client.suggest(plan, 2)["schedule"])
        trained = client.train_suggestions(plan, 2)
        self.assertEqual(trained.schedules_added, suggested)
        self.assertEqual(trained.trials_created, 2 * 3)
        ranking = client.wait(plan, progress=False)
        self.assertEqual(sorted(ranking["schedule"]),
                         sorted(kSchedules + [kBaseline] + suggested))
        self.assertTrue((ranking["seeds"] == 3).all(), ranking)


class ExampleTest(unittest.TestCase):

    def test_steer_example_runs_from_plan_to_plot(self):
        c = CLUSTER
        png = c.tmp / "steer.png"
        out, err = io.StringIO(), io.StringIO()
        env = dict(kNoClientEnv, PRISM_COORDINATOR=c.address,
                   PRISM_TOKEN_FILE=c.token_file,
                   PRISM_SPEC=str(c.spec_path), PRISM_PLOT=str(png))
        with environment(**env), contextlib.redirect_stdout(out), \
                contextlib.redirect_stderr(err):
            scope = runpy.run_path(
                str(ARGS.source / "clients/python/examples/steer.py"),
                run_name="__main__")
        printed = out.getvalue()
        self.assertTrue(scope["plan"].dry_run)
        self.assertIn("nothing submitted (a dry run)", printed)
        submitted = scope["submitted"]
        self.assertIn(f"experiment {submitted.id} submitted", printed)
        self.assertEqual(scope["added"].seeds_added, [3])
        self.assertEqual(scope["comparison"]["seeds"], 3)
        self.assertEqual(len(scope["trained"].schedules_added), 2)
        ranking = scope["ranking"]
        self.assertEqual(len(ranking), len(kSchedules) + 1 + 2)
        self.assertTrue((ranking["seeds"] == 3).all())
        self.assertEqual(png.read_bytes()[:4], b"\x89PNG")
        self.assertIn(f"saved {png}", printed)
        self.assertIn(f"experiment {submitted.id}: done", err.getvalue())
        self.assertEqual(c.client.experiment(submitted).state,
                         prism_client.pb.EXPERIMENT_DONE)


if __name__ == "__main__":
    ARGS, rest = parse_args()
    prism_client = import_client(ARGS)
    program = unittest.main(argv=[sys.argv[0], "-v", *rest], exit=False)
    sys.exit(0 if program.result.wasSuccessful() else 1)
