"""A Python client for a Prism Search coordinator, for notebooks.

It speaks the coordinator's gRPC API (proto/prism/v1/prism.proto) through
stubs generated at build time (`cmake --build build --target
prism_python_stubs`, into build/clients/python/gen) and returns pandas
DataFrames:

    import prism_client
    client = prism_client.connect("127.0.0.1:50051",
                                  token_file="prism-data/admin.token")
    client.plan("grid.textproto")     # what it would queue and cost
    plan = client.submit("grid.textproto")
    ranking = client.wait(plan)       # a progress bar, then the ranking
    client.add_seeds(plan, count=2)   # more seeds, every trial reused
    client.compare(plan, "8x8", "2x3,4x3")
    client.suggest(plan, 5)           # untried schedules a surrogate likes
    client.train_suggestions(plan, 3)
    client.experiments()              # one row per experiment
    curves = client.curves(1, "2x3,4x3")  # its val loss vs the baseline's
    client.plot_curves(1, path="curves.png")  # paired deltas, 95% bands

connect() finds the coordinator, the token and the TLS files as the `prism`
CLI does (cli/client.h): arguments first, then PRISM_COORDINATOR,
PRISM_TOKEN, PRISM_TOKEN_FILE, PRISM_TLS_CA, PRISM_TLS_CERT and
PRISM_TLS_KEY, then 127.0.0.1:50051 and ./prism-data/admin.token when it
exists. With no TLS file the channel is plaintext.

Importing it sets GRPC_VERBOSITY=NONE unless already set: gRPC's C core
would print its own error lines to stderr besides the PrismError.

Every failure, from a bad argument to a refused call, raises PrismError,
whose message starts with the gRPC status code's name and carries the
coordinator's own message, which names the field or the limit
("NOT_FOUND: experiment 99 not found", "INVALID_ARGUMENT: spec_text:3:1:
..."), or for a coordinator that cannot be reached says so and how to point
at it. A number the coordinator does not have (an interval over fewer than
2 seeds, a speed-up no seed reached) is NaN in every frame and dict, never
the 0 protobuf sends for an unset field.

Thread-safety: a Client may be shared by threads (gRPC channels and stubs
are thread-safe); the DataFrames it returns are new objects.
"""

import math
import operator
import os
import pathlib
import sys
import warnings

# gRPC's C core prints its own errors (a failed TLS handshake) to stderr, on
# top of the PrismError that says the same in one line; an explicit
# GRPC_VERBOSITY (DEBUG, INFO, ERROR) still wins.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

import grpc  # noqa: E402 (after GRPC_VERBOSITY)
from google.protobuf import json_format  # noqa: E402

from . import _plan, _progress, _stats  # noqa: E402
from ._plan import Plan  # noqa: E402
from ._stats import delta_curve_frame, t_quantile_975  # noqa: E402

__all__ = ["Client", "Plan", "PrismError", "compare_summary", "connect",
           "delta_curve_frame", "ladder_frame", "pb", "pb_grpc",
           "race_summary", "ranking_frame", "resolve_token",
           "suggestions_frame", "t_quantile_975"]


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


def _mean_or_nan(interval):
    """An Interval's mean, NaN when it is over no values (proto3 sends 0)."""
    return interval.mean if interval.n > 0 else math.nan


def _delta_cell(s):
    if s.is_baseline:
        return 0.0
    return _mean_or_nan(s.delta_vs_baseline)


# ranking_frame's columns, each (name, cell of a prism.v1.RankedSchedule),
# in order. A value the coordinator does not have (an interval over no
# seeds, a bound with fewer than 2, an absent p-value) is NaN, never the 0
# proto3 sends for it.
_RANKING_COLUMNS = [
    ("rank", lambda s: s.rank),
    ("schedule", lambda s: s.schedule),
    ("is_baseline", lambda s: s.is_baseline),
    ("verdict", lambda s: _enum_name(pb.Verdict, s.verdict, "VERDICT_")),
    ("delta", _delta_cell),
    ("delta_low", lambda s: _optional(s.delta_vs_baseline, "low")),
    ("delta_high", lambda s: _optional(s.delta_vs_baseline, "high")),
    ("adjusted_delta_low", lambda s: _optional(s.adjusted_delta, "low")),
    ("adjusted_delta_high", lambda s: _optional(s.adjusted_delta, "high")),
    ("p_value", lambda s: _optional(s, "p_value")),
    ("adjusted_p_value", lambda s: _optional(s, "adjusted_p_value")),
    ("final_val_loss", lambda s: _mean_or_nan(s.final_val_loss)),
    ("min_val_loss", lambda s: s.min_val_loss if s.final_val_loss.n > 0
     else math.nan),
    ("seeds", lambda s: s.seeds_completed),
    ("paired_seeds", lambda s: s.paired_seeds),
    ("speedup", lambda s: _mean_or_nan(s.speedup)),
    ("speedup_low", lambda s: _optional(s.speedup, "low")),
    ("speedup_high", lambda s: _optional(s.speedup, "high")),
    ("speedup_reached", lambda s: s.speedup.n),
    ("speedup_seeds", lambda s: s.speedup_seeds),
    ("throughput_ratio", lambda s: _mean_or_nan(s.throughput_ratio)),
    ("throughput_ratio_low", lambda s: _optional(s.throughput_ratio, "low")),
    ("throughput_ratio_high",
     lambda s: _optional(s.throughput_ratio, "high")),
    ("in_best_set", lambda s: s.in_best_set),
    ("smooth", lambda s: s.principles.smooth),
    ("baseline", lambda s: s.principles.baseline),
    ("pow2", lambda s: s.principles.pow2),
    ("trial_ids", lambda s: list(s.trial_ids)),
]


def ranking_frame(response):
    """Client.ranking's DataFrame from a prism.v1.RankResponse, one row per
    schedule in the response's order (the baseline among them, with a delta
    of 0): rank, schedule, is_baseline, verdict (better, worse,
    inconclusive, needs_seeds; "" for the baseline), delta (mean paired
    final val loss delta vs the baseline: negative is better; NaN without a
    paired seed) with its 95% interval delta_low and delta_high, the
    family-adjusted interval adjusted_delta_low/high that agrees with the
    verdict, p_value and adjusted_p_value, final_val_loss and min_val_loss,
    seeds (completed) and paired_seeds, speedup (convergence, paired, over
    the speedup_reached of speedup_seeds paired seeds that reached the
    baseline's final val loss; NaN when none did: "never reached") with
    speedup_low/high, throughput_ratio (tokens/s vs the baseline, paired)
    with its bounds, in_best_set, the principles it satisfies (smooth,
    baseline, pow2), and trial_ids. Every number the coordinator does not
    have is NaN: intervals and p-values with fewer than 2 seeds, means over
    none."""
    import pandas as pd
    rows = [[cell(s) for _, cell in _RANKING_COLUMNS]
            for s in response.schedules]
    return pd.DataFrame(rows, columns=[name for name, _ in _RANKING_COLUMNS])


def compare_summary(response):
    """Client.compare's dict from a prism.v1.CompareResponse: schedule_a,
    schedule_b, delta (b - a final val loss, paired over their common seeds:
    negative means b is better) with delta_low and delta_high (95%), seeds
    (common), verdict (b against a: better, worse, inconclusive,
    needs_seeds), p_value (one planned comparison, not adjusted), and each
    side's final_val_loss. NaN where there is no value (no common seed;
    bounds and p-value below 2)."""
    return {
        "schedule_a": response.a.schedule,
        "schedule_b": response.b.schedule,
        "delta": _mean_or_nan(response.delta),
        "delta_low": _optional(response.delta, "low"),
        "delta_high": _optional(response.delta, "high"),
        "seeds": response.delta.n,
        "verdict": _enum_name(pb.Verdict, response.verdict, "VERDICT_"),
        "p_value": _optional(response, "p_value"),
        "final_val_loss_a": _mean_or_nan(response.a.final_val_loss),
        "final_val_loss_b": _mean_or_nan(response.b.final_val_loss),
    }


def suggestions_frame(response):
    """Client.suggest's DataFrame from a prism.v1.SuggestResponse, best
    first: schedule, predicted_delta (the surrogate's mean paired delta vs
    the baseline: negative is better), uncertainty (its ensemble's sd),
    acquisition (predicted_delta - uncertainty, the order), and the
    principles (smooth, baseline, pow2). attrs holds the model's method,
    observed_schedules, candidates, sampled, space_size and warnings (what
    makes the fit weak, one line each; Client.suggest also issues each as a
    Python warning)."""
    import pandas as pd
    frame = pd.DataFrame(
        [{"schedule": s.schedule, "predicted_delta": s.predicted_delta,
          "uncertainty": s.uncertainty, "acquisition": s.acquisition,
          "smooth": s.principles.smooth, "baseline": s.principles.baseline,
          "pow2": s.principles.pow2} for s in response.suggestions],
        columns=["schedule", "predicted_delta", "uncertainty", "acquisition",
                 "smooth", "baseline", "pow2"])
    frame.attrs.update(method=response.method,
                       observed_schedules=response.observed_schedules,
                       candidates=response.candidates,
                       sampled=response.sampled,
                       space_size=response.space_size,
                       warnings=list(response.warnings))
    return frame


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


def _experiment_id(experiment):
    """An experiment's id from an int (or a str of one), a Plan (what submit
    and add_seeds return) or a prism.v1.Experiment; PrismError
    INVALID_ARGUMENT otherwise."""
    if isinstance(experiment, (Plan, pb.Experiment)):
        return experiment.id
    try:
        if isinstance(experiment, str):
            return int(experiment)
        return _whole(experiment)
    except (TypeError, ValueError):
        raise PrismError(
            "INVALID_ARGUMENT", "an experiment is an id (int), a Plan or a "
            f"prism.v1.Experiment, not {experiment!r}") from None


_FINISHED = (pb.EXPERIMENT_DONE, pb.EXPERIMENT_CANCELLED)
_SPEC_SUFFIXES = (".textproto", ".txtpb", ".pbtxt", ".prototxt")


def _submit_request(spec, dry_run):
    """Returns (prism.v1.SubmitRequest, the spec's path or None) for submit
    and plan: textproto text and files go as spec_text, so the coordinator
    names a parse error's line and column; a dict (protobuf's JSON mapping)
    and an ExperimentSpec message go as the spec."""
    request = pb.SubmitRequest(dry_run=dry_run)
    if isinstance(spec, pb.ExperimentSpec):
        request.spec.CopyFrom(spec)
        return request, None
    if isinstance(spec, dict):
        try:
            json_format.ParseDict(spec, request.spec)
        except json_format.ParseError as e:
            # Its first line names the field; the rest lists the valid ones.
            raise PrismError("INVALID_ARGUMENT",
                             "spec: " + str(e).splitlines()[0]) from None
        return request, None
    path = None
    if isinstance(spec, os.PathLike):
        path = os.fspath(spec)
    elif isinstance(spec, str) and "\n" not in spec and (
            os.path.isfile(spec) or spec.strip().endswith(_SPEC_SUFFIXES)):
        path = spec.strip()
    if path is not None:
        data = _read_file(path, "spec file")
        try:
            request.spec_text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise PrismError("INVALID_ARGUMENT", f"spec file {path} is not "
                             f"UTF-8 text (byte {e.start})") from None
        return request, path
    if isinstance(spec, str):
        request.spec_text = spec
        return request, None
    raise PrismError(
        "INVALID_ARGUMENT", "spec is textproto text, a path to a .textproto "
        "file, a dict in protobuf's JSON mapping or a prism.v1.ExperimentSpec,"
        f" not {type(spec).__name__}")


def _whole(value):
    """An int from an integer (numpy's too; not a bool or a float);
    TypeError otherwise."""
    if isinstance(value, bool):
        raise TypeError(value)
    return operator.index(value)


def _split(name):
    """prism.v1.Split from "val" or "train"; PrismError INVALID_ARGUMENT
    otherwise."""
    if name not in ("val", "train"):
        raise PrismError("INVALID_ARGUMENT",
                         f"split is \"val\" or \"train\", not {name!r}")
    return pb.Split.Value("SPLIT_" + name.upper())


def _priority(value):
    """A priority (int32) from an integer; PrismError INVALID_ARGUMENT
    otherwise."""
    try:
        priority = _whole(value)
    except TypeError:
        priority = None
    if priority is None or not -2**31 <= priority < 2**31:
        raise PrismError("INVALID_ARGUMENT",
                         f"priority is a 32-bit integer, not {value!r}")
    return priority


def _schedule_list(schedules, what):
    """A list of schedule strings from one ("2x4,8x4": its commas are the
    schedule's own) or an iterable of them."""
    out = [schedules] if isinstance(schedules, str) else \
        list(schedules) if hasattr(schedules, "__iter__") else [schedules]
    for s in out:
        if not isinstance(s, str):
            raise PrismError("INVALID_ARGUMENT", f"{what}: a schedule is a "
                             f"string such as \"2x4,8x4\", not {s!r}")
    return out


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
            raise self._error(e, method) from None

    @property
    def experiments_stub(self):
        return self._experiments

    @property
    def results_stub(self):
        return self._results

    def _error(self, rpc_error, rpc=None):
        """The PrismError for a failed call; `rpc` is the callable it was
        made with, to name it when the coordinator lacks it."""
        method = getattr(rpc, "_method", b"")
        method = f" ({method.decode().lstrip('/')})" if method else ""
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
        if code == grpc.StatusCode.UNIMPLEMENTED and not message:
            return PrismError(
                name, f"the coordinator at {self.address} does not have "
                f"this call{method}: it is older than this client")
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
        return self.call(
            self._experiments.Get,
            pb.GetExperimentRequest(id=_experiment_id(experiment_id)))

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
        experiment_id = _experiment_id(experiment_id)
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

    def submit(self, spec, priority=None):
        """Submits an experiment and returns its Plan (plan.id is the new
        experiment's id; repr() shows what it queued and costs). `spec`:
        textproto text, a path to a .textproto file, a dict in protobuf's
        JSON mapping of prism.v1.ExperimentSpec (json_format.ParseDict), or
        an ExperimentSpec. `priority` (an int, higher first) is set right
        after. PrismError INVALID_ARGUMENT naming the field for a bad spec
        (for textproto with its line and column: "spec_text:3:9: ..." or
        "FILE:3:9: ..."), RESOURCE_EXHAUSTED naming the limit it would
        pass."""
        if priority is not None:
            priority = _priority(priority)
        response = self._submit(spec, dry_run=False)
        if priority is not None:
            # As `prism submit --priority`: a textproto's own priority
            # field cannot be overridden in its text.
            experiment_id = response.experiment.id
            try:
                experiment = self.set_priority(experiment_id, priority)
            except PrismError as e:
                raise PrismError(
                    e.code, f"experiment {experiment_id} was submitted, but "
                    f"setting its priority failed: {e.message}") from None
            response.experiment.CopyFrom(experiment)
        return _plan.plan_from(response, "submit", dry_run=False)

    def plan(self, spec):
        """Plans `spec` (as submit takes it) as a submit would, checking
        every limit and quota, and stores nothing (`prism plan`). Returns a
        Plan: trials_created, estimate (what it costs: steps, tokens,
        worker-hours, ... as the coordinator estimates them), headroom and
        the resolved spec in plan.experiment.spec (id 0). Errors as
        submit's."""
        return _plan.plan_from(self._submit(spec, dry_run=True), "submit",
                               dry_run=True)

    def _submit(self, spec, dry_run):
        request, path = _submit_request(spec, dry_run)
        try:
            return self.call(self._experiments.Submit, request)
        except PrismError as e:
            # The coordinator names a parse error "spec_text:LINE:COL: ...";
            # point at the user's file instead, as `prism submit` does.
            if path is not None and e.message.startswith("spec_text:"):
                raise PrismError(
                    e.code, path + e.message[len("spec_text"):]) from None
            raise

    def pause(self, experiment_id):
        """Pauses an experiment: no new trial starts, running ones finish.
        Returns the prism.v1.Experiment; PrismError NOT_FOUND,
        PERMISSION_DENIED (someone else's), FAILED_PRECONDITION when it is
        done or cancelled."""
        return self.call(self._experiments.Pause,
                         pb.ExperimentRef(id=_experiment_id(experiment_id)))

    def resume(self, experiment_id):
        """Resumes a paused experiment; returns the prism.v1.Experiment.
        Errors as pause's."""
        return self.call(self._experiments.Resume,
                         pb.ExperimentRef(id=_experiment_id(experiment_id)))

    def cancel(self, experiment_id):
        """Cancels an experiment: its queued and running trials are
        cancelled, completed ones kept. Returns the prism.v1.Experiment.
        Errors as pause's."""
        return self.call(self._experiments.Cancel,
                         pb.ExperimentRef(id=_experiment_id(experiment_id)))

    def set_priority(self, experiment_id, priority):
        """Sets an experiment's priority (higher is leased first); returns
        the prism.v1.Experiment. PrismError INVALID_ARGUMENT for a priority
        past the coordinator's --max-user-priority (admins have none) or not
        a 32-bit integer; NOT_FOUND; PERMISSION_DENIED."""
        return self.call(self._experiments.SetPriority,
                         pb.SetPriorityRequest(
                             id=_experiment_id(experiment_id),
                             priority=_priority(priority)))

    def add_seeds(self, experiment_id, count=None, to=None, seeds=None,
                  schedules=None, dry_run=False):
        """Adds seeds to an experiment, reusing every trial it has
        (`prism seeds add`; ExperimentService.Extend): `count` more seeds,
        or as many as make `to` in all, or the listed `seeds` (exactly one
        of the three). New seeds go to every schedule it trained to the
        whole budget (`schedules`, one or a list, narrows that) and to the
        baseline. A done experiment becomes active again; wait() follows it.
        dry_run=True checks every limit and stores nothing. Returns a Plan
        (seeds_added, trials_created, trials_reused, estimate). PrismError
        INVALID_ARGUMENT naming the field (a seed it has, none of count, to
        and seeds, or several), RESOURCE_EXHAUSTED naming the limit,
        FAILED_PRECONDITION for a cancelled experiment, PERMISSION_DENIED
        for someone else's."""
        given = [(name, value) for name, value in
                 (("count", count), ("to", to), ("seeds", seeds))
                 if value is not None]
        if len(given) != 1:
            raise PrismError(
                "INVALID_ARGUMENT", "add_seeds takes one of count= (seeds to "
                "add), to= (seeds in all) or seeds= (the seeds themselves)" +
                (", not " + " and ".join(n for n, _ in given) if given
                 else ""))
        request = pb.ExtendRequest(id=_experiment_id(experiment_id),
                                   dry_run=bool(dry_run))
        name, value = given[0]
        try:
            if name == "count":
                request.add_seeds = _whole(value)
            elif name == "to":
                request.to_seeds = _whole(value)
            else:
                request.seeds.extend(_whole(seed) for seed in value)
        except (TypeError, ValueError):
            wanted = ("64-bit integers" if name == "seeds" else
                      "a 32-bit integer")
            raise PrismError("INVALID_ARGUMENT", f"add_seeds: {name} takes "
                             f"{wanted}, not {value!r}") from None
        if schedules is not None:
            request.seed_schedules.extend(
                _schedule_list(schedules, "add_seeds: schedules"))
        return self._extend(request)

    def train_suggestions(self, experiment_id, n=3, dry_run=False):
        """Trains the `n` schedules suggest() proposes (`prism suggest
        --train`): Suggest, then Extend with those schedules, on every seed
        the experiment has, to the whole budget. Returns a Plan
        (schedules_added, trials_created, estimate). Errors as suggest's and
        add_seeds'."""
        suggestions = self.suggest(experiment_id, n)
        request = pb.ExtendRequest(id=_experiment_id(experiment_id),
                                   schedules=list(suggestions["schedule"]),
                                   dry_run=bool(dry_run))
        return self._extend(request)

    def _extend(self, request):
        return _plan.plan_from(
            self.call(self._experiments.Extend, request), "extend",
            dry_run=request.dry_run)

    # -- results ---------------------------------------------------------

    def rank(self, experiment_id, require=()):
        """Returns the whole prism.v1.RankResponse (every page merged into
        its `schedules`); `require` names principles ("smooth", "baseline",
        "pow2") every listed schedule satisfies."""
        principles = [pb.Principle.Value("PRINCIPLE_" + p.upper())
                      for p in require]
        request = pb.RankRequest(experiment_id=_experiment_id(experiment_id),
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
        order (the baseline among them): see ranking_frame."""
        return ranking_frame(self.rank(experiment_id, require))

    def race(self, experiment_id):
        """Returns how racing settled the experiment's best (a dict: state,
        best, contenders, seeds_added, grid_share, note, ...; see
        race_summary), or None when it does not race."""
        request = pb.RankRequest(experiment_id=_experiment_id(experiment_id),
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
                             experiment_id=_experiment_id(experiment_id)))

    def ladder(self, experiment_id):
        """Returns the ladder's transfer as a DataFrame, one row per pair of
        sizes (what `prism results --ladder ID` prints): small_rung,
        small_size, large_size, their experiment ids, schedules (matched,
        the baseline left out), small_seeds, large_seeds, spearman with
        spearman_low and spearman_high, the same for kendall, large_best,
        best_set_holds_large_best (None when not measured) and note (why a
        pair is not measured; its numbers are then NaN)."""
        return ladder_frame(self.ladder_transfer(experiment_id))

    def compare(self, experiment_id, a, b):
        """Compares schedule `b` with schedule `a` over their common seeds
        (`prism compare`): a dict, see compare_summary (delta is b - a:
        negative means b is better; verdict is b's against a, one paired
        t-test, not adjusted). PrismError NOT_FOUND for an experiment or a
        schedule it does not have."""
        return compare_summary(self.call(
            self._results.Compare,
            pb.CompareRequest(experiment_id=_experiment_id(experiment_id),
                              schedule_a=a, schedule_b=b)))

    def suggest(self, experiment_id, n=10):
        """Returns the `n` (1..1000) most promising untried schedules as a
        DataFrame (see suggestions_frame), from a surrogate fitted on the
        experiment's finished schedules. PrismError FAILED_PRECONDITION
        while fewer than 5 schedules have a paired delta, INVALID_ARGUMENT
        for n outside 1..1000."""
        request = pb.SuggestRequest(
            experiment_id=_experiment_id(experiment_id))
        try:
            request.n = _whole(n)
        except (TypeError, ValueError):
            raise PrismError("INVALID_ARGUMENT", "n is an integer in "
                             f"1..1000, not {n!r}") from None
        frame = suggestions_frame(self.call(self._results.Suggest, request))
        for line in frame.attrs["warnings"]:
            warnings.warn(f"prism suggest: {line}", stacklevel=2)
        return frame

    def watch(self, experiment_id):
        """Yields the experiment's live events (prism.v1.ExperimentEvent, from
        ResultsService.Watch): first the experiment as it is
        (experiment_updated), then trial updates with their new points and
        experiment updates, as they happen. A trial update may carry only
        the trial's id, state and step (its schedule and seed came in an
        earlier event). Ends after the event that says the experiment is
        done or cancelled, or when the coordinator ends the stream (it shuts
        down); closing the generator (break) ends the stream. PrismError
        NOT_FOUND for an unknown experiment."""
        experiment_id = _experiment_id(experiment_id)
        stream = self._results.Watch(
            pb.WatchRequest(experiment_id=experiment_id),
            metadata=self._metadata)
        try:
            for response in stream:
                for event in response.events:
                    yield event
                    if (event.HasField("experiment_updated") and
                            event.experiment_updated.state in _FINISHED):
                        return
        except grpc.RpcError as e:
            raise self._error(e, self._results.Watch) from None
        finally:
            stream.cancel()

    def wait(self, experiment_id, progress=True, file=None):
        """Follows the experiment until it is done or cancelled and returns
        its ranking (a DataFrame, see ranking_frame). progress=True shows
        finished trials of all with the state and the running and queued
        trials, on `file` (default sys.stderr): a tqdm bar on a terminal and
        in Jupyter, one plain line per change anywhere else (a log, CI).
        Ctrl-C (KeyboardInterrupt) stops waiting and cancels nothing: the
        experiment keeps running, the message says so and how to wait again,
        and the KeyboardInterrupt goes on to the caller. PrismError
        UNAVAILABLE when the coordinator ends the watch first (it shuts
        down), NOT_FOUND for an unknown experiment."""
        experiment_id = _experiment_id(experiment_id)
        reporter = _progress.reporter(progress, file, experiment_id)
        latest = None
        try:
            for event in self.watch(experiment_id):
                if event.HasField("experiment_updated"):
                    latest = event.experiment_updated
                    reporter.update(latest)
        except KeyboardInterrupt:
            reporter.close()
            message = (f"stopped waiting for experiment {experiment_id}; it "
                       "keeps running (nothing was cancelled): "
                       f"client.wait({experiment_id}) waits again")
            reporter.say(message)
            raise KeyboardInterrupt(message) from None
        finally:
            reporter.close()
        if latest is None or latest.state not in _FINISHED:
            raise PrismError(
                "UNAVAILABLE", f"the coordinator at {self.address} ended the "
                f"watch of experiment {experiment_id} before it finished (is "
                f"it shutting down?): client.wait({experiment_id}) waits "
                "again")
        return self.ranking(experiment_id)

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
        experiment_id = _experiment_id(experiment_id)
        wanted = _split(split)
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

    def delta_curve(self, experiment_id, schedule, split="val"):
        """Returns `schedule`'s paired delta against the baseline over the
        steps: per step, the mean over seeds of its loss minus the loss of
        the baseline trained with the same seed, with a 95% Student-t
        interval (NaN below 2 seeds). Columns step, delta, delta_low,
        delta_high, seeds (see delta_curve_frame). Errors as curves'."""
        return _stats.delta_curve_frame(
            self.curves(experiment_id, schedule, split))

    def plot_curves(self, experiment_id, schedules=None, top=3, split="val",
                    path=None, raw=False):
        """Plots each schedule's paired delta against the uniform baseline
        over the steps (delta_curve: the mean over seeds of loss minus the
        same seed's baseline loss, at each step) with its 95% t interval as
        a band, the baseline as the dashed line at 0; negative is better.
        raw=True plots the losses themselves instead: each schedule's mean
        over its seeds and the baseline's. Returns the matplotlib Figure;
        writes it to `path` (PNG by its extension) when given. `schedules`
        defaults to the `top` best-ranked non-baseline schedules with
        completed trials. Each schedule's line is labelled with it, and its
        band (a PolyCollection) has it as gid. Uses the Agg backend unless
        the caller chose another one before."""
        experiment_id = _experiment_id(experiment_id)
        _split(split)
        import matplotlib
        if "matplotlib.pyplot" not in sys.modules:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        if schedules is None:
            ranked = self.ranking(experiment_id)
            ranked = ranked[~ranked["is_baseline"] & (ranked["seeds"] > 0)]
            schedules = list(ranked["schedule"].head(top))
        else:
            schedules = _schedule_list(schedules, "plot_curves: schedules")
        if not schedules:
            raise PrismError(
                "FAILED_PRECONDITION", f"experiment {experiment_id} has no "
                "completed schedule besides the baseline to plot")
        fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
        if raw:
            _plot_raw(ax, [(schedule,
                            self.curves(experiment_id, schedule, split))
                           for schedule in schedules])
            ax.set_ylabel(f"{split} loss (mean over seeds)")
            ax.set_title(f"experiment {experiment_id}: {split} loss vs the "
                         "uniform baseline")
        else:
            _plot_deltas(ax, [(schedule,
                               self.delta_curve(experiment_id, schedule,
                                                split))
                              for schedule in schedules])
            ax.set_ylabel(f"{split} loss delta vs the baseline (same seed; "
                          "mean, 95% t interval)")
            ax.set_title(f"experiment {experiment_id}: {split} loss delta vs "
                         "the uniform baseline (negative is better)")
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        if path is not None:
            fig.savefig(path)
        return fig


def _plot_deltas(ax, deltas):
    """Draws the baseline at 0, then per (schedule, delta_curve frame) its
    mean line and its interval band in the line's colour."""
    ax.axhline(0.0, color="black", linestyle="--", linewidth=2,
               label="uniform baseline")
    for schedule, d in deltas:
        line, = ax.plot(d["step"], d["delta"], marker="o", markersize=3,
                        label=schedule)
        band = d.dropna(subset=["delta_low", "delta_high"])
        if not band.empty:
            ax.fill_between(band["step"], band["delta_low"],
                            band["delta_high"], color=line.get_color(),
                            alpha=0.2, linewidth=0, gid=schedule)


def _plot_raw(ax, curves):
    """Draws the baseline's mean loss (over the first schedule's seeds: in a
    grid every schedule has the same seeds), then each schedule's."""
    means = [(schedule, frame.groupby("step")[["loss", "baseline_loss"]]
              .mean()) for schedule, frame in curves]
    baseline = means[0][1]["baseline_loss"]
    ax.plot(baseline.index, baseline, color="black", linestyle="--",
            linewidth=2, label="uniform baseline")
    for schedule, mean in means:
        ax.plot(mean.index, mean["loss"], marker="o", markersize=3,
                label=schedule)
