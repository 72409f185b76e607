"""The Python client (clients/python/prism_client) against a live coordinator.

It starts `prism coordinator` on loopback (temp dir, port 0, --ready-file, an
admin token file) and a `prism worker --replay` over the replay benchmark's
recorded curves (bench/replay/grid_d64_l8_h8.replay), submits a grid of four
schedules on three seeds and waits, through the client, until the experiment
is done. Then:
  * the notebook example (clients/python/examples/ranking.py) runs as a
    script; its DataFrame is the ranking `prism results --format json` prints
    (order, verdicts, deltas, seeds) and its PNG holds the curves it drew;
  * curves() returns the recorded val losses of the schedule and of the
    baseline with the same seed, step by step, as the fixture holds them;
  * a wrong token, a missing experiment, an unreachable coordinator and a
    plaintext dial of a TLS coordinator raise PrismError naming the status
    code and the cause, with no gRPC exception chained;
  * a second coordinator serving TLS (deploy/tls/make-certs.sh) answers the
    client given its CA through tls_ca= and through PRISM_TLS_CA;
  * delete() asks through input() and deletes only on "y" (or with
    yes=True), raises without an input to ask on, and refuses an active
    experiment, each checked against the coordinator afterwards.
Every process it started is stopped at the end, pass or fail.

Exit: 0 pass, 1 fail, 77 skipped (a Python module deploy/setup.sh installs is
missing).

  python3 prism_client_test.py --prism build/cli/prism --source . \
      --stubs build/clients/python/gen
"""

import contextlib
import io
import json
import os
import runpy
import socket
import subprocess
import sys
import traceback
import unittest
import unittest.mock

from harness import (Cluster, environment, import_client, kNoClientEnv,
                     kStartSeconds, parse_args, read_fixture_val_curves)

kSchedules = ["1x4,8x4", "2x4,8x4", "4x4,8x4", "1x2,8x6"]
kSeeds = [1, 2, 3]
kBaseline = "8x8"
kExperimentSeconds = 40

ARGS = None
CLUSTER = None


def setUpModule():
    global CLUSTER
    CLUSTER = Cluster(ARGS.prism)
    # A module cleanup runs even when setUpModule fails half-way.
    unittest.addModuleCleanup(CLUSTER.stop)
    c = CLUSTER
    c.address, c.token_file = c.start_coordinator("coordinator")
    c.fixture = ARGS.source / "bench/replay/grid_d64_l8_h8.replay"
    client = ["--coordinator", c.address, "--token-file", c.token_file]
    c.start("worker", ["worker", *client, "--replay", str(c.fixture),
                       "--checkpoint-dir", str(c.tmp / "checkpoints")])
    recipe = (ARGS.source /
              "bench/replay/grid_d64_l8_h8.textproto").read_text()
    recipe = recipe.replace("seeds: [1, 2, 3]", "")
    spec = c.tmp / "spec.textproto"
    spec.write_text(recipe + 'name: "python-client"\n' +
                    "".join(f'schedules: "{s}"\n' for s in kSchedules) +
                    f"seeds: {kSeeds}\n")
    submitted = json.loads(c.run_prism(["submit", str(spec), *client,
                                        "--format", "json"]))
    c.experiment_id = int(submitted["experiment"]["id"])
    c.client = prism_client.connect(c.address, token_file=c.token_file)
    done = prism_client.pb.EXPERIMENT_DONE
    c.wait_for(f"experiment {c.experiment_id} to finish", kExperimentSeconds,
               lambda: c.client.experiment(c.experiment_id).state == done)
    # The second coordinator, serving TLS: empty, for the TLS checks.
    c.certs = c.tmp / "tls"
    subprocess.run([str(ARGS.source / "deploy/tls/make-certs.sh"),
                    str(c.certs)], check=True, capture_output=True,
                   timeout=kStartSeconds)
    c.tls_address, c.tls_token_file = c.start_coordinator(
        "coordinator-tls", ["--tls-cert", str(c.certs / "server.pem"),
                            "--tls-key", str(c.certs / "server.key")])


class LadderFrameTest(unittest.TestCase):

    def test_one_row_per_pair_with_nan_where_not_measured(self):
        pb = prism_client.pb
        response = pb.LadderTransferResponse(ladder_id=4, planned_rungs=3)
        measured = response.pairs.add(
            small_rung=0, small_experiment_id=4, large_experiment_id=5,
            small_size="tiny", large_size="small", schedules=9,
            small_seeds=3, large_seeds=2, large_best="2x4,8x4",
            best_set_holds_large_best=True)
        measured.spearman.estimate, measured.spearman.low = 0.4, -0.2
        measured.spearman.high = 1.0
        measured.kendall.estimate = 0.3
        response.pairs.add(small_rung=1, small_experiment_id=5,
                           large_experiment_id=6, small_size="small",
                           large_size="d512x12x8",
                           note="rung 3 is not done")
        frame = prism_client.ladder_frame(response)
        self.assertEqual(list(frame["small_size"]), ["tiny", "small"])
        self.assertEqual(frame.loc[0, "spearman"], 0.4)
        self.assertEqual(frame.loc[0, "spearman_low"], -0.2)
        self.assertEqual(frame.loc[0, "spearman_high"], 1.0)
        self.assertEqual(frame.loc[0, "kendall"], 0.3)
        self.assertIs(frame.loc[0, "best_set_holds_large_best"], True)
        self.assertEqual(frame.loc[0, "schedules"], 9)
        self.assertTrue(frame.loc[1, "spearman"] != frame.loc[1, "spearman"])
        self.assertIsNone(frame.loc[1, "best_set_holds_large_best"])
        self.assertEqual(frame.loc[1, "note"], "rung 3 is not done")


class RaceSummaryTest(unittest.TestCase):

    def test_none_without_racing_and_every_field_with_it(self):
        pb = prism_client.pb
        response = pb.RankResponse()
        self.assertIsNone(prism_client.race_summary(response))
        response.race.state = "settled"
        response.race.best = "2x2,4x4"
        response.race.best_seeds = 9
        response.race.contenders.append("2x2,4x4")
        response.race.started = 3
        response.race.seeds_added = 21
        response.race.grid_share = 0.46
        response.race.race_share = 0.07
        response.race.note = "best 2x2,4x4 settled on 9 seeds"
        race = prism_client.race_summary(response)
        self.assertEqual(race["state"], "settled")
        self.assertEqual(race["best"], "2x2,4x4")
        self.assertEqual(race["contenders"], ["2x2,4x4"])
        self.assertEqual(race["seeds_added"], 21)
        self.assertAlmostEqual(race["grid_share"], 0.46)
        response.race.best = "4x6"
        response.race.best_is_baseline = True
        self.assertEqual(prism_client.race_summary(response)["best"], "")

    def test_an_experiment_that_does_not_race_has_none(self):
        with prism_client.connect(CLUSTER.address,
                                  token_file=str(CLUSTER.token_file)) as c:
            self.assertIsNone(c.race(CLUSTER.experiment_id))


class ExampleTest(unittest.TestCase):

    def test_example_prints_the_ranking_and_saves_curves_against_baseline(
            self):
        c = CLUSTER
        png = c.tmp / "ranking.png"
        out = io.StringIO()
        env = dict(kNoClientEnv, PRISM_COORDINATOR=c.address,
                   PRISM_TOKEN_FILE=c.token_file,
                   PRISM_EXPERIMENT=str(c.experiment_id), PRISM_PLOT=str(png))
        with environment(**env), contextlib.redirect_stdout(out):
            scope = runpy.run_path(
                str(ARGS.source / "clients/python/examples/ranking.py"),
                run_name="__main__")
        printed = out.getvalue()

        experiments = scope["experiments"]
        self.assertIn(c.experiment_id, list(experiments["id"]))
        row = experiments[experiments["id"] == c.experiment_id].iloc[0]
        self.assertEqual(row["state"], "done")
        self.assertEqual(row["completed"], row["total"])
        self.assertEqual(row["total"], (len(kSchedules) + 1) * len(kSeeds))

        # The DataFrame is the ranking the CLI prints over the same RPC.
        ranking = scope["ranking"]
        cli = json.loads(c.run_prism(
            ["results", "--experiment", str(c.experiment_id), "--coordinator",
             c.address, "--token-file", c.token_file, "--format", "json"]))
        cli_rows = cli["schedules"]
        self.assertEqual(len(ranking), len(kSchedules) + 1)
        self.assertEqual(list(ranking["schedule"]),
                         [r["schedule"] for r in cli_rows])
        self.assertEqual(sorted(ranking["schedule"]),
                         sorted(kSchedules + [kBaseline]))
        self.assertEqual(list(ranking["rank"]),
                         [r.get("rank", 0) for r in cli_rows])
        for (_, mine), theirs in zip(ranking.iterrows(), cli_rows):
            verdict = theirs.get("verdict", "VERDICT_UNSPECIFIED")
            expected = ("" if verdict == "VERDICT_UNSPECIFIED" else
                        verdict.removeprefix("VERDICT_").lower())
            self.assertEqual(mine["verdict"], expected, mine["schedule"])
            self.assertAlmostEqual(
                mine["delta"], theirs["deltaVsBaseline"].get("mean", 0.0),
                places=9)
            self.assertEqual(mine["seeds"], len(kSeeds), mine["schedule"])
        base = ranking[ranking["is_baseline"]]
        self.assertEqual(list(base["schedule"]), [kBaseline])
        self.assertEqual(base["delta"].iloc[0], 0.0)
        others = ranking[~ranking["is_baseline"]]
        self.assertTrue(others["delta_low"].notna().all())
        self.assertTrue((others["delta_low"] <= others["delta"]).all())
        self.assertTrue((others["delta"] <= others["delta_high"]).all())
        for schedule in kSchedules:
            self.assertIn(schedule, printed)
        self.assertIn(f"saved {png}", printed)

        # The PNG: the size plot_curves asks for, with the baseline's black
        # dashed line and the first schedule's colour (matplotlib's C0)
        # drawn, not only axes.
        import matplotlib.image
        self.assertEqual(png.read_bytes()[:8], b"\x89PNG\r\n\x1a\n")
        pixels = matplotlib.image.imread(str(png))
        self.assertEqual(pixels.shape[:2], (500, 800))
        rgb = (pixels[:, :, :3] * 255).round()

        def count(colour):
            return int((abs(rgb - colour).max(axis=2) < 40).sum())

        self.assertGreater(count((0x1f, 0x77, 0xb4)), 300)
        self.assertGreater(count((0, 0, 0)), 300)


class CurvesTest(unittest.TestCase):

    def test_curves_are_the_recorded_losses_of_schedule_and_baseline(self):
        c = CLUSTER
        recorded = read_fixture_val_curves(c.fixture)
        schedule = kSchedules[1]
        curves = CLUSTER.client.curves(c.experiment_id, schedule)
        self.assertEqual(sorted(curves["seed"].unique()), kSeeds)
        for seed in kSeeds:
            mine = curves[curves["seed"] == seed]
            self.assertEqual(list(mine["step"]),
                             sorted(recorded[(schedule, seed)]))
            for _, point in mine.iterrows():
                step = int(point["step"])
                self.assertAlmostEqual(point["loss"],
                                       recorded[(schedule, seed)][step],
                                       places=4)
                self.assertAlmostEqual(point["baseline_loss"],
                                       recorded[(kBaseline, seed)][step],
                                       places=4)

    def test_curves_of_an_untried_schedule_raise_not_found(self):
        with self.assertRaises(prism_client.PrismError) as raised:
            CLUSTER.client.curves(CLUSTER.experiment_id, "1x1,8x7")
        self.assertEqual(raised.exception.code, "NOT_FOUND")
        self.assertIn("1x1,8x7", str(raised.exception))


class ErrorsTest(unittest.TestCase):

    def assert_names_cause(self, raised, code, *words):
        error = raised.exception
        self.assertEqual(error.code, code, str(error))
        self.assertTrue(str(error).startswith(f"{code}: "), str(error))
        for word in words:
            self.assertIn(word, str(error))
        print(f"\n  raised {error}", end=" ")
        # No gRPC exception chained or shown: the cause is the message.
        self.assertIsNone(error.__cause__)
        self.assertTrue(error.__context__ is None or
                        error.__suppress_context__)
        shown = "".join(traceback.format_exception(error))
        self.assertNotIn("_InactiveRpcError", shown)
        self.assertNotIn("grpc/_channel.py", shown)

    def test_wrong_token_raises_unauthenticated_with_coordinator_message(self):
        client = prism_client.connect(CLUSTER.address, token="not-a-token")
        with self.assertRaises(prism_client.PrismError) as raised:
            client.experiments()
        self.assert_names_cause(raised, "UNAUTHENTICATED")
        self.assertGreater(len(raised.exception.message), 0)

    def test_ladder_of_an_experiment_that_is_not_a_rung_names_why(self):
        with self.assertRaises(prism_client.PrismError) as raised:
            CLUSTER.client.ladder(CLUSTER.experiment_id)
        self.assert_names_cause(raised, "FAILED_PRECONDITION",
                                str(CLUSTER.experiment_id))

    def test_missing_experiment_raises_not_found(self):
        with self.assertRaises(prism_client.PrismError) as raised:
            CLUSTER.client.ranking(987654)
        self.assert_names_cause(raised, "NOT_FOUND", "987654")

    def test_unreachable_coordinator_raises_unavailable_naming_address(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            address = f"127.0.0.1:{s.getsockname()[1]}"
        client = prism_client.connect(address, token="any")
        with self.assertRaises(prism_client.PrismError) as raised:
            client.experiments()
        self.assert_names_cause(raised, "UNAVAILABLE",
                                f"cannot reach coordinator at {address}")

    def test_plaintext_dial_of_tls_coordinator_raises_with_tls_hint(self):
        client = prism_client.connect(CLUSTER.tls_address,
                                      token_file=CLUSTER.tls_token_file)
        with self.assertRaises(prism_client.PrismError) as raised:
            client.experiments()
        self.assert_names_cause(raised, "UNAVAILABLE", CLUSTER.tls_address,
                                "tls_ca")

    def test_no_token_anywhere_raises_invalid_argument(self):
        with environment(**kNoClientEnv):
            cwd = os.getcwd()
            os.chdir(CLUSTER.tmp)  # no ./prism-data/admin.token here
            try:
                with self.assertRaises(prism_client.PrismError) as raised:
                    prism_client.connect(CLUSTER.address)
            finally:
                os.chdir(cwd)
        self.assert_names_cause(raised, "INVALID_ARGUMENT", "no token")


class TlsTest(unittest.TestCase):

    def test_wrong_ca_raises_handshake_failure_and_grpc_prints_nothing(self):
        # In a child process, to see its stderr: gRPC's C core logs a failed
        # handshake there unless the client silenced it.
        c = CLUSTER
        other = c.tmp / "other-ca"
        subprocess.run([str(ARGS.source / "deploy/tls/make-certs.sh"),
                        str(other)], check=True, capture_output=True,
                       timeout=kStartSeconds)
        script = (
            "import sys, prism_client\n"
            "try:\n"
            "    prism_client.connect(sys.argv[1], token_file=sys.argv[2],\n"
            "                         tls_ca=sys.argv[3]).experiments()\n"
            "except prism_client.PrismError as e:\n"
            "    print(e)\n")
        env = dict(os.environ,
                   PYTHONPATH=os.pathsep.join(sys.path[:2]))
        env.pop("GRPC_VERBOSITY", None)
        child = subprocess.run(
            [sys.executable, "-c", script, c.tls_address, c.tls_token_file,
             str(other / "ca.pem")], capture_output=True, text=True, env=env,
            timeout=kStartSeconds)
        self.assertEqual(child.returncode, 0, child.stderr)
        self.assertEqual(
            child.stdout.strip(),
            f"UNAVAILABLE: TLS handshake with coordinator at {c.tls_address} "
            "failed: certificate verify failed (does tls_ca or PRISM_TLS_CA "
            "name the CA that signed its certificate, for the name dialled? "
            "does it want a client certificate, tls_cert and tls_key?)")
        self.assertEqual(child.stderr, "")

    def test_tls_ca_argument_reaches_tls_coordinator(self):
        c = CLUSTER
        with prism_client.connect(c.tls_address, token_file=c.tls_token_file,
                                  tls_ca=str(c.certs / "ca.pem")) as client:
            experiments = client.experiments()
        self.assertEqual(len(experiments), 0)
        self.assertIn("state", experiments.columns)

    def test_tls_and_token_from_environment_as_the_cli_reads_them(self):
        c = CLUSTER
        with environment(**dict(kNoClientEnv,
                                PRISM_COORDINATOR=c.tls_address,
                                PRISM_TOKEN_FILE=c.tls_token_file,
                                PRISM_TLS_CA=str(c.certs / "ca.pem"))):
            with prism_client.connect() as client:
                self.assertEqual(client.address, c.tls_address)
                self.assertEqual(len(client.list_experiments()), 0)


kDoomedSpec = ('name: "doomed" model { preset: "tiny" } seeds: 1 '
               'schedules: "2x2,4x4"')


class DeleteTest(unittest.TestCase):
    """delete() against the TLS coordinator, which has no worker (so an
    active experiment stays active); each test deletes what it submitted,
    so that coordinator is empty again for the TLS tests."""

    def setUp(self):
        c = CLUSTER
        self.client = prism_client.connect(
            c.tls_address, token_file=c.tls_token_file,
            tls_ca=str(c.certs / "ca.pem"))
        self.submitted = []

    def tearDown(self):
        for experiment_id in self.submitted:
            try:
                self.cancel(experiment_id)
                self.client.delete(experiment_id, yes=True)
            except prism_client.PrismError as e:
                self.assertEqual(e.code, "NOT_FOUND")
        self.client.close()

    def submit(self, cancel=True):
        experiment_id = self.client.submit(kDoomedSpec).id
        self.submitted.append(experiment_id)
        if cancel:
            self.cancel(experiment_id)
        return experiment_id

    def cancel(self, experiment_id):
        self.client.cancel(experiment_id)

    def assert_gone(self, experiment_id):
        with self.assertRaises(prism_client.PrismError) as raised:
            self.client.experiment(experiment_id)
        self.assertEqual(raised.exception.code, "NOT_FOUND")

    def test_yes_deletes_and_says_what_was_removed(self):
        experiment_id = self.submit()
        deleted = self.client.delete(experiment_id, yes=True)
        self.assertEqual(deleted.id, experiment_id)
        self.assertEqual(deleted.name, "doomed")
        self.assertEqual(deleted.trials, 2)
        self.assert_gone(experiment_id)

    def test_it_asks_first_and_deletes_only_on_y(self):
        experiment_id = self.submit()
        asked = []

        def answer(text):
            return lambda question: asked.append(question) or text

        with unittest.mock.patch("builtins.input", answer("n")):
            self.assertIsNone(self.client.delete(experiment_id))
        self.assertIn(f"delete experiment {experiment_id} 'doomed'", asked[0])
        self.assertIn("2 trials", asked[0])
        self.assertIn("[y/N]", asked[0])
        self.assertEqual(self.client.experiment(experiment_id).id,
                         experiment_id)
        with unittest.mock.patch("builtins.input", answer("y")):
            deleted = self.client.delete(experiment_id)
        self.assertEqual(deleted.id, experiment_id)
        self.assert_gone(experiment_id)

    def test_without_an_input_to_ask_on_it_raises_and_keeps_it(self):
        experiment_id = self.submit()
        with unittest.mock.patch("builtins.input", side_effect=EOFError):
            with self.assertRaises(prism_client.PrismError) as raised:
                self.client.delete(experiment_id)
        self.assertEqual(raised.exception.code, "INVALID_ARGUMENT")
        self.assertIn("yes=True", raised.exception.message)
        self.assertEqual(self.client.experiment(experiment_id).id,
                         experiment_id)

    def test_an_active_experiment_is_refused(self):
        experiment_id = self.submit(cancel=False)
        with self.assertRaises(prism_client.PrismError) as raised:
            self.client.delete(experiment_id, yes=True)
        self.assertEqual(raised.exception.code, "FAILED_PRECONDITION")
        self.assertIn("cancel it first", raised.exception.message)
        self.assertEqual(self.client.experiment(experiment_id).state,
                         prism_client.pb.EXPERIMENT_ACTIVE)


if __name__ == "__main__":
    ARGS, rest = parse_args()
    prism_client = import_client(ARGS)
    program = unittest.main(argv=[sys.argv[0], "-v", *rest], exit=False)
    sys.exit(0 if program.result.wasSuccessful() else 1)
