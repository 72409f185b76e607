"""A Python client for a Prism Search coordinator, for notebooks.

It speaks the coordinator's gRPC API (proto/prism/v1/prism.proto) through
stubs generated at build time (`cmake --build build --target
prism_python_stubs`, into build/clients/python/gen) and returns pandas
DataFrames:

    import prism_client
    client = prism_client.connect("127.0.0.1:50051",
                                  token_file="prism-data/admin.token")
    client.experiments()              # one row per experiment
    ranking = client.ranking(1)       # one row per ranked schedule
    curves = client.curves(1, "2x3,4x3")  # its val loss vs the baseline's
    client.plot_curves(1, path="curves.png")

connect() finds the coordinator, the token and the TLS files as the `prism`
CLI does (cli/client.h): arguments first, then PRISM_COORDINATOR,
PRISM_TOKEN, PRISM_TOKEN_FILE, PRISM_TLS_CA, PRISM_TLS_CERT and
PRISM_TLS_KEY, then 127.0.0.1:50051 and ./prism-data/admin.token when it
exists. With no TLS file the channel is plaintext.

Importing it sets GRPC_VERBOSITY=NONE unless already set: gRPC's C core
would print its own error lines to stderr besides the PrismError.

Every failure, from a bad argument to a refused call, raises PrismError,
whose message starts with the gRPC status code's name and carries the
coordinator's own message ("NOT_FOUND: experiment 99 not found"), or for
a coordinator that cannot be reached says so and how to point at it.

Thread-safety: a Client may be shared by threads (gRPC channels and stubs
are thread-safe); the DataFrames it returns are new objects.
"""

import math
import os
import pathlib
import sys

# gRPC's C core prints its own errors (a failed TLS handshake) to stderr, on
# top of the PrismError that says the same in one line; an explicit
# GRPC_VERBOSITY (DEBUG, INFO, ERROR) still wins.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

import grpc  # noqa: E402 (after GRPC_VERBOSITY)


def _import_stubs():
    """Returns (prism_pb2, prism_pb2_grpc): from sys.path (PYTHONPATH), else
    from $PRISM_PYTHON_STUBS, else from the checkout's build/ folder."""
    try:
        from prism.v1 import prism_pb2, prism_pb2_grpc
        return prism_pb2, prism_pb2_grpc
    except ImportError:
        pass
    candidates = []
    if os.environ.get("PRISM_PYTHON_STUBS"):
        candidates.append(pathlib.Path(os.environ["PRISM_PYTHON_STUBS"]))
    candidates.append(
        pathlib.Path(__file__).resolve().parents[3] / "build" / "clients" /
        "python" / "gen")
    for folder in candidates:
        if (folder / "prism" / "v1" / "prism_pb2.py").is_file():
            sys.path.insert(0, str(folder))
            from prism.v1 import prism_pb2, prism_pb2_grpc
            return prism_pb2, prism_pb2_grpc
    raise ImportError(
        "prism_client: the generated gRPC stubs (prism/v1/prism_pb2.py) are "
        "not on sys.path, in $PRISM_PYTHON_STUBS or in " +
        str(candidates[-1]) + ": build them with `cmake --build build "
        "--target prism_python_stubs` and put build/clients/python/gen on "
        "PYTHONPATH")


pb, pb_grpc = _import_stubs()

DEFAULT_COORDINATOR = "127.0.0.1:50051"
DEFAULT_TOKEN_FILE = "./prism-data/admin.token"
DEFAULT_TIMEOUT_SECONDS = 30.0
# What the coordinator puts in a status's binary details (proto/grpc_status.cc
# kCoordinatorMarker): its own UNAVAILABLE ("the database disk is full")
# versus the one gRPC makes up when there is no connection.
_COORDINATOR_MARKER = b"prism"
_STATUS_DETAILS_KEY = "grpc-status-details-bin"


class PrismError(Exception):
    """A failed call or bad argument: `code` is the gRPC status code's name
    ("UNAUTHENTICATED", "NOT_FOUND", "UNAVAILABLE", ...), `message` the
    coordinator's (or the client's) words; str() is "CODE: message"."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def _env(name):
    value = os.environ.get(name, "")
    return value if value else None


def _read_file(path, what):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise PrismError("INVALID_ARGUMENT",
                         f"cannot read {what} {path}: {e.strerror}") from None


def _read_token_file(path):
    token = _read_file(path, "token file").decode("utf-8", "replace").strip()
    if not token:
        raise PrismError("INVALID_ARGUMENT", f"token file {path} is empty")
    return token


def resolve_token(token=None, token_file=None):
    """Returns the bearer token as the CLI finds it: `token`, else the
    content of `token_file`, else $PRISM_TOKEN, else $PRISM_TOKEN_FILE's
    content, else ./prism-data/admin.token when it exists. PrismError
    INVALID_ARGUMENT when a named file cannot be read or is empty, or when no
    token is given anywhere."""
    if token:
        return token
    if token_file:
        return _read_token_file(token_file)
    if _env("PRISM_TOKEN"):
        return _env("PRISM_TOKEN")
    if _env("PRISM_TOKEN_FILE"):
        return _read_token_file(_env("PRISM_TOKEN_FILE"))
    if os.path.exists(DEFAULT_TOKEN_FILE):
        return _read_token_file(DEFAULT_TOKEN_FILE)
    raise PrismError(
        "INVALID_ARGUMENT",
        "no token: pass token= or token_file=, or set PRISM_TOKEN or "
        f"PRISM_TOKEN_FILE ({DEFAULT_TOKEN_FILE} does not exist)")


def connect(address=None, token=None, token_file=None, tls_ca=None,
            tls_cert=None, tls_key=None, timeout=DEFAULT_TIMEOUT_SECONDS):
    """Returns a Client for the coordinator at `address` (HOST:PORT; else
    $PRISM_COORDINATOR, else 127.0.0.1:50051). The token: see resolve_token.
    TLS: `tls_ca` (the CA that signed the coordinator's certificate) and, for
    a coordinator that wants client certificates, `tls_cert` and `tls_key`;
    each else $PRISM_TLS_CA, $PRISM_TLS_CERT, $PRISM_TLS_KEY; with none the
    channel is plaintext. `timeout` is each call's deadline in seconds. The
    channel connects on the first call. PrismError INVALID_ARGUMENT for a
    missing token, an unreadable file, or a certificate without its key."""
    address = address or _env("PRISM_COORDINATOR") or DEFAULT_COORDINATOR
    token = resolve_token(token, token_file)
    ca = tls_ca or _env("PRISM_TLS_CA")
    cert = tls_cert or _env("PRISM_TLS_CERT")
    key = tls_key or _env("PRISM_TLS_KEY")
    if bool(cert) != bool(key):
        raise PrismError(
            "INVALID_ARGUMENT",
            "tls_cert and tls_key go together (PRISM_TLS_CERT, "
            "PRISM_TLS_KEY): " + ("tls_key is missing"
                                  if cert else "tls_cert is missing"))
    tls = None
    if ca or cert:
        tls = grpc.ssl_channel_credentials(
            root_certificates=_read_file(ca, "tls_ca") if ca else None,
            private_key=_read_file(key, "tls_key") if key else None,
            certificate_chain=_read_file(cert, "tls_cert") if cert else None)
    return Client(address, token, tls, timeout)


def ladder_frame(response):
    """Client.ladder's DataFrame from a prism.v1.LadderTransferResponse."""
    import pandas as pd
    nan = float("nan")
    rows = []
    for p in response.pairs:
        measured = not p.note
        rows.append({
            "small_rung": p.small_rung,
            "small_size": p.small_size,
            "large_size": p.large_size,
            "small_experiment_id": p.small_experiment_id,
            "large_experiment_id": p.large_experiment_id,
            "schedules": p.schedules,
            "small_seeds": p.small_seeds,
            "large_seeds": p.large_seeds,
            "spearman": p.spearman.estimate if measured else nan,
            "spearman_low": p.spearman.low if measured else nan,
            "spearman_high": p.spearman.high if measured else nan,
            "kendall": p.kendall.estimate if measured else nan,
            "kendall_low": p.kendall.low if measured else nan,
            "kendall_high": p.kendall.high if measured else nan,
            "large_best": p.large_best,
            "best_set_holds_large_best":
                p.best_set_holds_large_best
                if p.HasField("best_set_holds_large_best") else None,
            "note": p.note,
        })
    columns = ["small_rung", "small_size", "large_size",
               "small_experiment_id", "large_experiment_id", "schedules",
               "small_seeds", "large_seeds", "spearman", "spearman_low",
               "spearman_high", "kendall", "kendall_low", "kendall_high",
               "large_best", "best_set_holds_large_best", "note"]
    return pd.DataFrame(rows, columns=columns)


def race_summary(response):
    """Client.race's dict from a prism.v1.RankResponse: racing's state
    (docs/search.md "Racing for the best"), or None when the experiment
    does not race. Shares are fractions of the grid's steps."""
    if not response.HasField("race"):
        return None
    r = response.race
    return {
        "state": r.state,
        "best": "" if r.best_is_baseline else r.best,
        "best_is_baseline": r.best_is_baseline,
        "best_seeds": r.best_seeds,
        "contenders": list(r.contenders),
        "started": r.started,
        "look_seeds": r.look_seeds,
        "seeds_added": r.seeds_added,
        "grid_share": r.grid_share,
        "race_share": r.race_share,
        "budget": r.budget,
        "max_seeds": r.max_seeds,
        "note": r.note,
    }


def _enum_name(enum, number, prefix):
    """The short lowercase name the CLI prints: VERDICT_BETTER -> better."""
    try:
        name = enum.Name(number)
    except ValueError:
        return "unknown"
    if number == 0:
        return ""
    return name[len(prefix):].lower() if name.startswith(prefix) else \
        name.lower()


def _optional(message, field):
    return getattr(message, field) if message.HasField(field) else math.nan


class Client:
    """A connection to one coordinator; see connect()."""

    def __init__(self, address, token, tls_credentials=None,
                 timeout=DEFAULT_TIMEOUT_SECONDS):
        self.address = address
        self._tls = tls_credentials is not None
        self._metadata = (("authorization", f"Bearer {token}"),)
        self._timeout = timeout
        # Responses of any size: the coordinator bounds what it sends, and a
        # whole curve can pass gRPC's default 4 MiB (as cli/client.cc).
        options = [("grpc.max_receive_message_length", -1)]
        if self._tls:
            self._channel = grpc.secure_channel(address, tls_credentials,
                                                options)
        else:
            self._channel = grpc.insecure_channel(address, options)
        self._experiments = pb_grpc.ExperimentServiceStub(self._channel)
        self._results = pb_grpc.ResultsServiceStub(self._channel)

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- raw calls -------------------------------------------------------

    def call(self, method, request):
        """Makes one unary call, e.g. call(client.results_stub.Rank, req):
        returns the response message; PrismError for any failure."""
        try:
            return method(request, metadata=self._metadata,
                          timeout=self._timeout)
        except grpc.RpcError as e:
            # `from None`: the user reads the cause, not gRPC's internals.
            raise self._error(e) from None

    @property
    def experiments_stub(self):
        return self._experiments

    @property
    def results_stub(self):
        return self._results

    def _error(self, rpc_error):
        code = rpc_error.code()
        name = code.name if code is not None else "UNKNOWN"
        message = rpc_error.details() or ""
        trailers = dict(rpc_error.trailing_metadata() or ())
        from_coordinator = trailers.get(_STATUS_DETAILS_KEY) == \
            _COORDINATOR_MARKER
        if from_coordinator:
            return PrismError(name, message)
        if code == grpc.StatusCode.UNAVAILABLE:
            # gRPC says why a handshake failed after this marker, as OpenSSL
            # put it ("certificate verify failed"): worth the line, unlike
            # the rest (as cli/client.cc).
            handshake = "handshake failed: "
            at = message.lower().find(handshake)
            if at >= 0:
                why = message[at + len(handshake):].rpartition("::")[2]
                return PrismError(
                    name, f"TLS handshake with coordinator at {self.address} "
                    f"failed: {why} (does tls_ca or PRISM_TLS_CA name the CA "
                    "that signed its certificate, for the name dialled? "
                    "does it want a client certificate, tls_cert and "
                    "tls_key?)")
            hint = ("over TLS (is it running? does it want a client "
                    "certificate: tls_cert and tls_key, or PRISM_TLS_CERT "
                    "and PRISM_TLS_KEY?)" if self._tls else
                    "(is it running? pass address= or set PRISM_COORDINATOR; "
                    "if it serves TLS, give its CA with tls_ca= or "
                    "PRISM_TLS_CA)")
            return PrismError(
                name, f"cannot reach coordinator at {self.address} {hint}")
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return PrismError(name, f"coordinator at {self.address} did not "
                              f"answer in {self._timeout:g} s")
        return PrismError(name, message)

    # -- experiments -----------------------------------------------------

    def list_experiments(self, owner=""):
        """Returns every experiment (of `owner`; "" for everyone's) as
        prism.v1.Experiment messages, newest first as the coordinator
        lists them."""
        out = []
        request = pb.ListExperimentsRequest(owner=owner, page_size=200)
        while True:
            response = self.call(self._experiments.List, request)
            out.extend(response.experiments)
            if not response.next_page_token:
                return out
            request.page_token = response.next_page_token

    def experiments(self, owner=""):
        """Returns a DataFrame, one row per experiment: id, name, owner,
        state (active, paused, cancelled, done), completed and total
        trials, progress (0..1), strategy, created (UTC timestamp)."""
        import pandas as pd
        rows = [{
            "id": e.id,
            "name": e.name,
            "owner": e.owner,
            "state": _enum_name(pb.ExperimentState, e.state, "EXPERIMENT_"),
            "completed": e.counts.completed,
            "total": e.counts.total,
            "progress": e.progress,
            "strategy": _enum_name(pb.Strategy, e.strategy,
                                   "STRATEGY_"),
            "created": pd.to_datetime(e.created_unix_ms, unit="ms",
                                      utc=True),
        } for e in self.list_experiments(owner)]
        columns = ["id", "name", "owner", "state", "completed", "total",
                   "progress", "strategy", "created"]
        return pd.DataFrame(rows, columns=columns)

    def experiment(self, experiment_id):
        """Returns the prism.v1.Experiment; PrismError NOT_FOUND when there
        is none with that id."""
        return self.call(self._experiments.Get,
                         pb.GetExperimentRequest(id=int(experiment_id)))

    def delete(self, experiment_id, yes=False):
        """Deletes a done or cancelled experiment and everything stored for
        it (trials, attempts, loss curves), as its owner or an admin. Unless
        yes=True it first asks through input() ("delete experiment 3 'name'
        of alice (cancelled: 21 trials, ...)? [y/N]") and deletes only on
        "y"; with no input to ask on (EOFError, e.g. a script without
        stdin) it raises PrismError INVALID_ARGUMENT, naming yes=True.
        Returns the prism.v1.DeleteExperimentResponse (what was removed), or
        None when the answer was not yes. PrismError FAILED_PRECONDITION
        while it is active or paused (cancel it first), NOT_FOUND,
        PERMISSION_DENIED for someone else's."""
        experiment_id = int(experiment_id)
        if not yes:
            e = self.experiment(experiment_id)
            state = _enum_name(pb.ExperimentState, e.state, "EXPERIMENT_")
            question = (f"delete experiment {e.id} '{e.name}' of {e.owner} "
                        f"({state}: {e.counts.total} trials, "
                        f"{e.steps_trained} steps trained, with their "
                        "curves and attempts)? This cannot be undone. [y/N] ")
            try:
                answer = input(question)
            except EOFError:
                raise PrismError(
                    "INVALID_ARGUMENT",
                    f"deleting experiment {experiment_id} needs a "
                    "confirmation and there is no input to ask on; pass "
                    "yes=True to delete without one") from None
            if answer.strip().lower() not in ("y", "yes"):
                return None
        return self.call(self._experiments.Delete,
                         pb.ExperimentRef(id=experiment_id))

    # -- results ---------------------------------------------------------

    def rank(self, experiment_id, require=()):
        """Returns the whole prism.v1.RankResponse (every page merged into
        its `schedules`); `require` names principles ("smooth", "baseline",
        "pow2") every listed schedule satisfies."""
        principles = [pb.Principle.Value("PRINCIPLE_" + p.upper())
                      for p in require]
        request = pb.RankRequest(experiment_id=int(experiment_id),
                                 require=principles)
        merged = None
        while True:
            response = self.call(self._results.Rank, request)
            if merged is None:
                merged = response
            else:
                merged.schedules.extend(response.schedules)
            if not response.next_page_token:
                merged.next_page_token = ""
                return merged
            request.page_token = response.next_page_token

    def ranking(self, experiment_id, require=()):
        """Returns the ranking as a DataFrame, one row per schedule in rank
        order (the baseline among them, with a delta of 0): rank, schedule,
        is_baseline, verdict (better, worse, inconclusive, needs_seeds; ""
        for the baseline), delta (mean paired final val loss delta vs the
        baseline: negative is better) with its 95% interval delta_low and
        delta_high, p_value and adjusted_p_value, final_val_loss, seeds
        (completed) and paired_seeds, speedup (convergence, paired),
        throughput_ratio (tokens/s vs the baseline), in_best_set, the
        principles it satisfies (smooth, baseline, pow2), and trial_ids.
        Intervals and p-values are NaN where the coordinator has none
        (fewer than 2 seeds)."""
        import pandas as pd
        response = self.rank(experiment_id, require)
        rows = []
        for s in response.schedules:
            rows.append({
                "rank": s.rank,
                "schedule": s.schedule,
                "is_baseline": s.is_baseline,
                "verdict": _enum_name(pb.Verdict, s.verdict, "VERDICT_"),
                "delta": s.delta_vs_baseline.mean,
                "delta_low": _optional(s.delta_vs_baseline, "low"),
                "delta_high": _optional(s.delta_vs_baseline, "high"),
                "p_value": _optional(s, "p_value"),
                "adjusted_p_value": _optional(s, "adjusted_p_value"),
                "final_val_loss": s.final_val_loss.mean,
                "seeds": s.seeds_completed,
                "paired_seeds": s.paired_seeds,
                "speedup": s.speedup.mean,
                "throughput_ratio": s.throughput_ratio.mean,
                "in_best_set": s.in_best_set,
                "smooth": s.principles.smooth,
                "baseline": s.principles.baseline,
                "pow2": s.principles.pow2,
                "trial_ids": list(s.trial_ids),
            })
        columns = ["rank", "schedule", "is_baseline", "verdict", "delta",
                   "delta_low", "delta_high", "p_value", "adjusted_p_value",
                   "final_val_loss", "seeds", "paired_seeds", "speedup",
                   "throughput_ratio", "in_best_set", "smooth", "baseline",
                   "pow2", "trial_ids"]
        return pd.DataFrame(rows, columns=columns)

    def race(self, experiment_id):
        """Returns how racing settled the experiment's best (a dict: state,
        best, contenders, seeds_added, grid_share, note, ...; see
        race_summary), or None when it does not race."""
        request = pb.RankRequest(experiment_id=int(experiment_id),
                                 page_size=1)
        return race_summary(self.call(self._results.Rank, request))

    def ladder_transfer(self, experiment_id):
        """Returns the prism.v1.LadderTransferResponse of the scale ladder
        that `experiment_id` is a rung of (docs/ladder.md): its rungs so far
        and, per pair of sizes, the rank correlations with their bootstrap
        intervals and the carried schedules' deltas at both sizes.
        PrismError FAILED_PRECONDITION when the experiment is not a ladder's
        rung, NOT_FOUND when there is none with that id."""
        return self.call(self._results.LadderTransfer,
                         pb.LadderTransferRequest(
                             experiment_id=int(experiment_id)))

    def ladder(self, experiment_id):
        """Returns the ladder's transfer as a DataFrame, one row per pair of
        sizes (what `prism results --ladder ID` prints): small_rung,
        small_size, large_size, their experiment ids, schedules (matched,
        the baseline left out), small_seeds, large_seeds, spearman with
        spearman_low and spearman_high, the same for kendall, large_best,
        best_set_holds_large_best (None when not measured) and note (why a
        pair is not measured; its numbers are then NaN)."""
        return ladder_frame(self.ladder_transfer(experiment_id))

    def trial(self, trial_id, with_baseline=True):
        """Returns the prism.v1.GetTrialResponse: the trial, its curve
        points and (with_baseline) the same seed's baseline trial and
        points."""
        return self.call(self._results.GetTrial,
                         pb.GetTrialRequest(trial_id=int(trial_id),
                                            with_baseline=with_baseline))

    def curves(self, experiment_id, schedule, split="val"):
        """Returns the loss curves of `schedule`'s completed trials against
        the uniform baseline trained with the same seed, as a DataFrame:
        one row per (seed, step), columns seed, step, loss (the schedule's)
        and baseline_loss (NaN at a step only one side evaluated). `split`
        is "val" or "train". PrismError NOT_FOUND when the experiment has
        no completed trial of that schedule."""
        import pandas as pd
        wanted = pb.Split.Value("SPLIT_" + split.upper())
        row = None
        for s in self.rank(experiment_id).schedules:
            if s.schedule == schedule:
                row = s
                break
        if row is None or not row.trial_ids:
            raise PrismError(
                "NOT_FOUND", f"experiment {experiment_id} has no completed "
                f"trial of schedule {schedule}")
        frames = []
        for trial_id in row.trial_ids:
            full = self.trial(trial_id, with_baseline=True)
            mine = pd.DataFrame(
                [(p.step, p.loss) for p in full.points if p.split == wanted],
                columns=["step", "loss"])
            base = pd.DataFrame(
                [(p.step, p.loss) for p in full.baseline_points
                 if p.split == wanted],
                columns=["step", "baseline_loss"])
            both = mine.merge(base, on="step", how="outer")
            both.insert(0, "seed", full.trial.seed)
            frames.append(both)
        out = pd.concat(frames, ignore_index=True)
        return out.sort_values(["seed", "step"], ignore_index=True)

    def plot_curves(self, experiment_id, schedules=None, top=3, split="val",
                    path=None):
        """Plots each schedule's loss (the mean over its seeds, per step)
        against the uniform baseline's (the mean over the first schedule's
        seeds: in a grid every schedule has the same seeds) and
        returns the matplotlib Figure; writes it to `path` (PNG by its
        extension) when given. `schedules` defaults to the `top` best-ranked
        non-baseline schedules with completed trials. Uses the Agg backend
        unless the caller chose another one before."""
        import matplotlib
        if "matplotlib.pyplot" not in sys.modules:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        if schedules is None:
            ranked = self.ranking(experiment_id)
            ranked = ranked[~ranked["is_baseline"] & (ranked["seeds"] > 0)]
            schedules = list(ranked["schedule"].head(top))
        if not schedules:
            raise PrismError(
                "FAILED_PRECONDITION", f"experiment {experiment_id} has no "
                "completed schedule besides the baseline to plot")
        means = [(schedule,
                  self.curves(experiment_id, schedule, split)
                  .groupby("step")[["loss", "baseline_loss"]].mean())
                 for schedule in schedules]
        fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
        baseline = means[0][1]["baseline_loss"]
        ax.plot(baseline.index, baseline, color="black", linestyle="--",
                linewidth=2, label="uniform baseline")
        for schedule, mean in means:
            ax.plot(mean.index, mean["loss"], marker="o", markersize=3,
                    label=schedule)
        ax.set_xlabel("step")
        ax.set_ylabel(f"{split} loss (mean over seeds)")
        ax.set_title(f"experiment {experiment_id}: {split} loss vs the "
                     "uniform baseline")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        if path is not None:
            fig.savefig(path)
        return fig
