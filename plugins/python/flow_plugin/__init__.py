"""flow_plugin: write flow task plugins in Python.

A plugin is an executable that flow starts; it serves one or more task types. With
this package it is a list of TaskType values and one call::

    #!/usr/bin/python3
    from flow_plugin import TaskType, attr, output, serve, STRING

    def run(task, ctx):
        ctx.print("hello, %s" % task["name"])
        return {"greeting": "hello, " + task["name"]}

    serve([TaskType("greet", summary="Say hello",
                    attributes=[attr("name", STRING, required=True)],
                    outputs=[output("greeting", STRING)],
                    run=run)])

serve() does what go-plugin expects of a plugin: it checks that flow started it, listens
on a unix socket (in the directory flow made for it), prints the handshake line, answers
the health check and go-plugin's Shutdown (so the plugin exits at once when flow is
done). Imported in a process flow started, it sends the process's stdout to stderr: a
stray print() then shows in flow's crash report instead of breaking the handshake or
being lost. Log with the
logging module or write to sys.stderr; use ctx.print for what the task prints.

It needs Debian's python3-grpcio and python3-protobuf (run the plugin with
/usr/bin/python3, which has them; another python3 on PATH may not).
"""
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from concurrent import futures

try:
    import grpc
except ImportError:  # the most common start failure: say it in one line
    sys.stderr.write("flow_plugin: this python (%s) has no grpc module: run the plugin with "
                     "/usr/bin/python3 and install python3-grpcio python3-protobuf\n" % sys.executable)
    sys.exit(1)

from . import flowplugin_pb2 as pb

__all__ = [
    "serve", "TaskType", "attr", "output", "Invalid", "Present", "Absent", "Differs",
    "STRING", "NUMBER", "BOOL", "DYNAMIC", "list_of", "set_of", "map_of", "object_of",
    "PROTOCOL_VERSION",
]

# The flow task plugin protocol version this package speaks (plugin/sdk/proto/flowplugin.proto).
PROTOCOL_VERSION = 2

COOKIE_KEY, COOKIE_VALUE = "FLOW_PLUGIN", "task-types"

log = logging.getLogger("flow_plugin")

# Started by flow, the process's stdout carries the handshake and nothing else:
# go-plugin discards what follows it, and a line before it breaks the start. So
# stdout (fd 1, which child processes inherit too) goes to stderr from here on, and
# the handshake is written to a copy of the real one.
_handshake_out = None
if os.environ.get(COOKIE_KEY) == COOKIE_VALUE:
    sys.stdout.flush()
    _handshake_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

# cty types, as flow's schema carries them (cty type JSON).
STRING, NUMBER, BOOL, DYNAMIC = "string", "number", "bool", "dynamic"


def list_of(t):
    return ["list", t]


def set_of(t):
    return ["set", t]


def map_of(t):
    return ["map", t]


def object_of(attrs):
    return ["object", dict(attrs)]


class _Attr:
    def __init__(self, name, type, required, sensitive, doc):
        self.name, self.type, self.required, self.sensitive, self.doc = name, type, required, sensitive, doc


class _Output:
    def __init__(self, name, type, sensitive, doc):
        self.name, self.type, self.sensitive, self.doc = name, type, sensitive, doc


def attr(name, type, required=False, sensitive=False, doc=""):
    """An attribute of a task type: its name, cty type (STRING, list_of(NUMBER), ...),
    whether a task must set it, whether it is a secret flow redacts, and its doc."""
    return _Attr(name, type, required, sensitive, doc)


def output(name, type, sensitive=False, doc=""):
    """An output a task returns from run (a dict entry of that name)."""
    return _Output(name, type, sensitive, doc)


class Invalid(Exception):
    """Raise from validate (or run) for bad input: flow names the attribute."""

    def __init__(self, attribute, message):
        super().__init__(message)
        self.attribute = attribute


class Present:
    """check's answer: what run would create is there already (run is skipped); outputs
    are what run would have returned; detail is shown as "already present (DETAIL)"."""

    def __init__(self, detail="", outputs=None):
        self.detail, self.outputs = detail, outputs or {}


class Absent:
    """check's answer: nothing is there, run creates it; probe's: it is gone."""

    def __init__(self, detail=""):
        self.detail = detail


class Differs:
    """check's answer: something else is in the way (the run fails, naming detail);
    probe's: the object is there but no longer as recorded (plan shows detail)."""

    def __init__(self, detail=""):
        self.detail = detail


class TaskType:
    """A task type a plugin serves.

    validate(task) -> None          fast, offline; raise Invalid(attr, msg) for bad input
    run(task, ctx) -> dict          do the work; return the outputs
    check(task, ctx) -> answer      before a run: is it already there? (Present/Absent/Differs)
    probe(task, recorded, ctx)      after a run: is the recorded object still as it was?
    destroy(task, recorded, ctx)    undo what run created (recorded: the run's outputs)

    task is a dict of attribute values (None for one not set). Only name and run are
    needed; a type with check may leave probe unset, and flow then asks check.
    """

    def __init__(self, name, run, summary="", doc="", example="", attributes=(), outputs=(),
                 validate=None, check=None, probe=None, destroy=None, undo="", undo_attr="",
                 destroy_reads=()):
        self.name, self.run, self.summary, self.doc, self.example = name, run, summary, doc, example
        self.attributes, self.outputs = list(attributes), list(outputs)
        self.validate, self.check, self.probe, self.destroy = validate, check, probe, destroy
        self.undo, self.undo_attr, self.destroy_reads = undo, undo_attr, list(destroy_reads)

    def schema(self):
        t = pb.TypeSchema(name=self.name, summary=self.summary, doc=self.doc, example=self.example,
                          undo=self.undo, undo_attr=self.undo_attr, destroy_reads=self.destroy_reads,
                          destroys=self.destroy is not None, checks=self.check is not None,
                          probes=self.probe is not None)
        for a in self.attributes:
            t.attributes.add(name=a.name, type=json.dumps(a.type).encode(), required=a.required,
                             sensitive=a.sensitive, doc=a.doc)
        for o in self.outputs:
            t.outputs.add(name=o.name, type=json.dumps(o.type).encode(), sensitive=o.sensitive, doc=o.doc)
        return t

    def decode(self, req):
        """The attributes of a TaskRequest as Python values."""
        task = {}
        for a in self.attributes:
            raw = req.attributes.get(a.name)
            v = json.loads(raw) if raw else None
            if a.type == DYNAMIC and isinstance(v, dict) and "value" in v:
                v = v["value"]  # cty JSON of a dynamic value: {"value": ..., "type": ...}
            task[a.name] = v
        return task

    def decode_recorded(self, recorded):
        types = {o.name: o.type for o in self.outputs}
        out = {}
        for name, value in recorded.items():
            v = json.loads(value.json) if value.json else None
            if types.get(name) == DYNAMIC and isinstance(v, dict) and "value" in v:
                v = v["value"]
            out[name] = v
        return out

    def encode_outputs(self, outs):
        declared = {o.name: o for o in self.outputs}
        enc = {}
        for name, v in (outs or {}).items():
            o = declared.get(name)
            if o is None:
                raise ValueError("run returned output %r, which type %s does not declare" % (name, self.name))
            if o.type == DYNAMIC:
                v = {"value": v, "type": _type_of(v)}
            enc[name] = pb.Value(json=json.dumps(v).encode(), sensitive=o.sensitive)
        return enc


def _type_of(v):
    """The cty type JSON of a plain JSON value (for dynamic outputs)."""
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, (int, float)):
        return NUMBER
    if isinstance(v, str):
        return STRING
    if isinstance(v, list):
        return ["tuple", [_type_of(x) for x in v]]
    if isinstance(v, dict):
        return ["object", {k: _type_of(x) for k, x in v.items()}]
    return DYNAMIC


class Context:
    """What a call gets besides its attributes: where it prints, its address and attempt,
    whether it was cancelled and its deadline (time.time() seconds, or None)."""

    def __init__(self, req, events=None, cancelled=None):
        self.address, self.attempt = req.address, req.attempt
        self.deadline = req.deadline_unix_nano / 1e9 if req.deadline_unix_nano else None
        self.cancelled = cancelled or threading.Event()
        if req.cancelled:
            self.cancelled.set()
        self._events = events

    def print(self, *args, sep=" ", end="\n"):
        """Print a line as the task's output (flow prefixes, logs and redacts it)."""
        self._emit("stdout", sep.join(str(a) for a in args) + end)

    def eprint(self, *args, sep=" ", end="\n"):
        """Print a line as the task's error output."""
        self._emit("stderr", sep.join(str(a) for a in args) + end)

    def _emit(self, stream, text):
        if self._events is None:
            sys.stderr.write(text)
            return
        self._events.append(pb.Event(**{stream: text.encode()}))

    def done(self):
        """True once flow cancelled the call or its deadline passed: stop soon."""
        return self.cancelled.is_set() or (self.deadline is not None and time.time() >= self.deadline)


class _Stream:
    """The events of one Run or Destroy: the task's thread appends, the gRPC one yields."""

    def __init__(self):
        self._cond = threading.Condition()
        self._items, self._closed = [], False

    def append(self, ev):
        with self._cond:
            self._items.append(ev)
            self._cond.notify()

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify()

    def __iter__(self):
        while True:
            with self._cond:
                while not self._items and not self._closed:
                    self._cond.wait()
                items, self._items = self._items, []
                closed = self._closed
            yield from items
            if closed and not items:
                return


def _result(error="", attribute="", outputs=None):
    return pb.Event(result=pb.Result(error=error, attribute=attribute, outputs=outputs or {},
                                     has_outputs=outputs is not None))


class _Service:
    """The flow.plugin.v1.TaskPlugin service over the types."""

    def __init__(self, types):
        self.types = {t.name: t for t in types}
        if len(self.types) != len(types):
            raise ValueError("two task types have the same name")
        self.cancels = {}
        self.lock = threading.Lock()

    def _type(self, req):
        t = self.types.get(req.type)
        if t is None:
            raise Invalid("", "this plugin serves no task type %r" % req.type)
        return t

    def Schema(self, req, context):
        if req.protocol_version != PROTOCOL_VERSION:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "flow speaks plugin protocol %d, this plugin %d"
                          % (req.protocol_version, PROTOCOL_VERSION))
        return pb.SchemaResponse(types=[t.schema() for t in self.types.values()])

    def Validate(self, req, context):
        try:
            t = self._type(req)
            if t.validate:
                t.validate(t.decode(req))
        except Invalid as e:
            return pb.ValidateResponse(error=str(e), attribute=e.attribute)
        except Exception as e:  # a bug in the plugin: say where
            return pb.ValidateResponse(error=_bug("validate", e))
        return pb.ValidateResponse()

    def _answer(self, what, fn, t, req, *args):
        try:
            ans = fn(t.decode(req), *args, Context(req))
        except Exception as e:
            return pb.CheckResponse(error=_bug(what, e))
        if isinstance(ans, Present):
            return pb.CheckResponse(state=pb.CheckResponse.PRESENT, detail=ans.detail,
                                    outputs=t.encode_outputs(ans.outputs))
        if isinstance(ans, Differs):
            return pb.CheckResponse(state=pb.CheckResponse.DIFFERS, detail=ans.detail)
        if isinstance(ans, Absent):
            return pb.CheckResponse(state=pb.CheckResponse.ABSENT, detail=ans.detail)
        return pb.CheckResponse(error="%s returned %r, not Present, Absent or Differs" % (what, ans))

    def Check(self, req, context):
        t = self._type(req)
        if not t.check:
            return pb.CheckResponse(error="type %s has no check" % t.name)
        return self._answer("check", t.check, t, req)

    def Probe(self, req, context):
        t = self._type(req.task)
        recorded = t.decode_recorded(req.recorded)
        if t.probe:
            return self._answer("probe", t.probe, t, req.task, recorded)
        if t.check:
            return self._answer("check", t.check, t, req.task)
        return pb.CheckResponse(error="type %s has no probe" % t.name)

    def _stream(self, req, call):
        """Runs call(ctx) -> result event on a thread of its own, yielding its events."""
        events, cancelled = _Stream(), threading.Event()
        with self.lock:
            prior = self.cancels.get(req.run_id)
            self.cancels[req.run_id] = cancelled
        if prior is True:  # cancelled before it started
            cancelled.set()
        ctx = Context(req, events, cancelled)

        def work():
            try:
                events.append(call(ctx))
            except Invalid as e:
                events.append(_result(str(e), e.attribute))
            except Exception as e:
                events.append(_result(_bug("run", e)))
            finally:
                events.close()

        threading.Thread(target=work, daemon=True).start()
        try:
            yield from events
        finally:
            with self.lock:
                self.cancels.pop(req.run_id, None)

    def Run(self, req, context):
        t = self._type(req)

        def call(ctx):
            task = t.decode(req)
            if t.validate:
                t.validate(task)
            return _result(outputs=t.encode_outputs(t.run(task, ctx) or {}))
        return self._stream(req, call)

    def Destroy(self, req, context):
        t = self._type(req.task)

        def call(ctx):
            if not t.destroy:
                return _result("type %s has no destroy" % t.name)
            t.destroy(t.decode(req.task), t.decode_recorded(req.recorded) if req.has_recorded else None, ctx)
            return _result()
        return self._stream(req.task, call)

    def Cancel(self, req, context):
        with self.lock:
            ev = self.cancels.get(req.run_id)
            if ev is None:
                self.cancels[req.run_id] = True  # the call starts cancelled
            else:
                ev.set()
        return pb.CancelResponse()


def _bug(what, e):
    """An exception other than Invalid: its type and message are the call's error,
    its traceback goes to stderr."""
    log.error("%s: %s", what, traceback.format_exc())
    return "%s: %s" % (type(e).__name__, e)


def _handlers(service, shutdown):
    unary = grpc.unary_unary_rpc_method_handler
    stream = grpc.unary_stream_rpc_method_handler

    def u(fn, req):
        return unary(fn, request_deserializer=req.FromString, response_serializer=lambda m: m.SerializeToString())

    def s(fn, req):
        return stream(fn, request_deserializer=req.FromString, response_serializer=lambda m: m.SerializeToString())

    task = grpc.method_handlers_generic_handler("flow.plugin.v1.TaskPlugin", {
        "Schema": u(service.Schema, pb.SchemaRequest),
        "Validate": u(service.Validate, pb.TaskRequest),
        "Check": u(service.Check, pb.TaskRequest),
        "Probe": u(service.Probe, pb.ProbeRequest),
        "Run": s(service.Run, pb.TaskRequest),
        "Cancel": u(service.Cancel, pb.CancelRequest),
        "Destroy": s(service.Destroy, pb.DestroyRequest),
    })
    raw = dict(request_deserializer=None, response_serializer=None)
    # grpc.health.v1.Health/Check, which go-plugin asks: HealthCheckResponse{status: SERVING}.
    health = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
        "Check": unary(lambda req, ctx: b"\x08\x01", **raw)})

    # go-plugin's plugin.GRPCController/Shutdown: flow calls it when it is done with the
    # plugin and waits 2 s for the process to exit before it kills it.
    def stop(req, ctx):
        shutdown.set()
        return b""
    controller = grpc.method_handlers_generic_handler("plugin.GRPCController", {"Shutdown": unary(stop, **raw)})
    return (task, health, controller)


def serve(types, max_workers=16):
    """Serve the task types until flow shuts the plugin down; then exit the process."""
    if _handshake_out is None:
        sys.stderr.write("this is a flow plugin: name it in a flow's plugin block; flow starts it\n")
        sys.exit(1)
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("FLOW_PLUGIN_LOG", "INFO").upper(),
                        format="%(levelname)s %(name)s: %(message)s")
    shutdown = threading.Event()
    service = _Service(list(types))
    # flow (go-plugin) makes a directory for the socket and removes it after the plugin
    # ends, however it ends; started some other way, the plugin makes and removes its own.
    sockdir, own = os.environ.get("PLUGIN_UNIX_SOCKET_DIR"), False
    if not sockdir:
        sockdir, own = tempfile.mkdtemp(prefix="flow-plugin-"), True
    sock = os.path.join(sockdir, "plugin-%d.sock" % os.getpid())
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers))
    server.add_generic_rpc_handlers(_handlers(service, shutdown))
    server.add_insecure_port("unix:" + sock)
    server.start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # Ctrl-C reaches the whole process group: flow decides when the plugin ends.
        signal.signal(sig, signal.SIG_IGN if sig == signal.SIGINT else lambda *_: shutdown.set())
    _handshake_out.write("1|%d|unix|%s|grpc\n" % (PROTOCOL_VERSION, sock))
    _handshake_out.close()
    shutdown.wait()
    server.stop(grace=0.2).wait(0.5)  # the Shutdown call's answer goes out
    if own:
        shutil.rmtree(sockdir, ignore_errors=True)
    sys.stderr.flush()
    os._exit(0)  # the worker threads of unfinished calls must not hold the exit
