"""kscope.predict: kernel performance models in Python (docs/predict.md).

The same models as kscope predict's .kpp files and its C API, written the
way msKPP's Python DSL writes them, for its users:

    from kscope.predict import Chip, Tensor, vadd

    with Chip("ascend910b", output="run_dir") as chip:
        x = Tensor("GM", "FP16", [1024], format="ND")
        y = Tensor("GM", "FP16", [1024], format="ND")
        z = Tensor("GM", "FP16", [1024], format="ND")
        xu, yu, zu = Tensor("UB"), Tensor("UB"), Tensor("UB")
        xu.load(x)          # xu takes x's shape and data type
        yu.load(y)
        out = vadd(xu, yu, zu)()   # inputs, then the output
        z.load(out[0])
    print(chip.cycles, chip.time_us)

Each call goes straight to libkscope-predict.so through ctypes (standard
library only), after telling it the caller's file:line:column, so that
messages and the trace point into the script.  A model error raises
PredictError with the library's message.  Leaving the `with` block
normally schedules the model, and writes the outputs when output= is
given.

The library is $KSCOPE_PREDICT_LIB, or found next to this module: in a
build tree <build>/python/kscope/ -> <build>/lib/libkscope-predict.so, when
installed <prefix>/lib/kscope/python/kscope/ -> <prefix>/lib/libkscope-predict.so.
"""

import ctypes
import os
import sys
import threading

__all__ = [
    "PredictError", "Chip", "Tensor", "Slice", "Instruction",
    "vadd", "vsub", "vmul", "vdiv", "vmax", "vmin",
    "vexp", "vln", "vabs", "vrelu", "vconv", "vreduce_sum", "vreduce_max",
    "mmad", "scalar", "instr", "register", "set_flag", "wait_flag", "library_path",
    "set_cache_hit_ratio", "Core", "set_core",
]

_LIBNAME = "libkscope-predict.so"
_MAX_OPERANDS = 8      # KS_PRED_MAX_OPERANDS
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_ERRSIZE = 4096


class PredictError(Exception):
    """A model kscope refused, with the library's message (str(e))."""


# ------------------------------------------------------------------
# The library
# ------------------------------------------------------------------

class _CSlice(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("pipe", ctypes.c_char_p),
                ("start", ctypes.c_double), ("end", ctypes.c_double),
                ("bytes", ctypes.c_double), ("ops", ctypes.c_double),
                ("location", ctypes.c_char_p)]


_lib = None
_lib_lock = threading.Lock()


def library_path():
    """The libkscope-predict.so this module uses; PredictError if none."""
    env = os.environ.get("KSCOPE_PREDICT_LIB")
    if env:
        if not os.path.isfile(env):
            raise PredictError(f"KSCOPE_PREDICT_LIB is {env!r}, which is not a file")
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    tried = [os.path.normpath(os.path.join(here, "..", "..", "lib", _LIBNAME)),
             os.path.normpath(os.path.join(here, "..", "..", "..", _LIBNAME))]
    for path in tried:
        if os.path.isfile(path):
            return path
    raise PredictError(f"{_LIBNAME} not found: looked for {tried[0]} (build tree) and "
                       f"{tried[1]} (installed); set KSCOPE_PREDICT_LIB to its path")


def _library():
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        path = library_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise PredictError(f"cannot load {path}: {e}") from None
        p, i, c, d = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_double
        ip = ctypes.POINTER(ctypes.c_int)
        dp = ctypes.POINTER(ctypes.c_double)
        sigs = {
            "ks_pred_model_new": (p, [c, c, ctypes.c_size_t]),
            "ks_pred_model_free": (None, [p]),
            "ks_pred_error": (c, [p]),
            "ks_pred_warnings": (c, [p]),
            "ks_pred_set_location": (None, [p, c, i, i]),
            "ks_pred_chip_name": (c, [p]),
            "ks_pred_chip_clock_hz": (d, [p]),
            "ks_pred_tensor": (i, [p, c, c, c, ctypes.POINTER(ctypes.c_int64), i, c]),
            "ks_pred_split": (i, [p, i, i, i, ip]),
            "ks_pred_load": (i, [p, i, i]),
            "ks_pred_instr": (i, [p, c, ip, i, ip, i]),
            "ks_pred_scalar": (i, [p, ctypes.c_int64, ip, i, ip, i]),
            "ks_pred_register": (i, [p, c, c, c, dp, dp, ctypes.c_size_t, d]),
            "ks_pred_run": (i, [p, dp]),
            "ks_pred_count": (ctypes.c_size_t, [p]),
            "ks_pred_slice": (i, [p, i, ctypes.POINTER(_CSlice)]),
            "ks_pred_write": (i, [p, c, c]),
            "ks_pred_set_outputs": (i, [p, ctypes.c_uint]),
            "ks_pred_set_flag": (i, [p, c, c, i]),
            "ks_pred_wait_flag": (i, [p, c, c, i]),
            "ks_pred_set_cache_hit_ratio": (i, [p, d]),
            "ks_pred_set_core": (i, [p, c]),
        }
        for name, (res, args) in sigs.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise PredictError(f"{path} has no {name}: is it kscope's "
                                   f"{_LIBNAME}?") from None
            fn.restype = res
            fn.argtypes = args
        _lib = lib
        return lib


def _enc(s, what):
    if s is None:
        return None
    if not isinstance(s, str):
        raise TypeError(f"{what} must be a str, not {type(s).__name__}")
    return s.encode()


def _int64(v, what):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{what} must be an int, not {type(v).__name__}")
    if not _INT64_MIN <= v <= _INT64_MAX:
        raise _error(f"{what} is {v}, which does not fit in 64 bits")
    return v


def _int(v, what):
    v = _int64(v, what)
    if not -(1 << 31) <= v < (1 << 31):
        raise _error(f"{what} is {v}, which is out of range")
    return v


# ------------------------------------------------------------------
# Where a call comes from
# ------------------------------------------------------------------

_columns = {}   # (code, instruction offset) -> column


def _caller():
    """(file, line, column) of the first frame outside this module."""
    here = globals()
    f = sys._getframe(1)
    while f is not None and f.f_globals is here:
        f = f.f_back
    if f is None:
        return None, 0, 0
    code, lasti = f.f_code, f.f_lasti
    key = (code, lasti)
    col = _columns.get(key)
    if col is None:
        col = 0
        positions = getattr(code, "co_positions", None)   # Python 3.11
        if positions is not None and lasti >= 0:
            for k, pos in enumerate(positions()):
                if k == lasti // 2:
                    if pos[2] is not None:
                        col = pos[2] + 1
                    break
        if len(_columns) < 65536:
            _columns[key] = col
    return code.co_filename, f.f_lineno or 0, col


def _error(msg):
    """A PredictError for msg at the caller's line, as the library's own
    errors are: the program's line that made the call comes first."""
    return PredictError(_located(*_caller(), msg))


def _located(file, line, col, msg):
    """msg with the location first ("file:line:column: "), as the library
    writes locations, unless it is there already."""
    if not file:
        return msg
    prefix = f"{file}:{line}:{col}: " if col > 0 else f"{file}:{line}: "
    return msg if msg.startswith(prefix) else prefix + msg


# ------------------------------------------------------------------
# Chips
# ------------------------------------------------------------------

_state = threading.local()


def _chips():
    if not hasattr(_state, "chips"):
        _state.chips = []
    return _state.chips


def _current(what):
    chips = _chips()
    if not chips:
        raise _error(f"{what} needs a chip: use it inside `with Chip(...):`")
    return chips[-1]


class Slice:
    """One scheduled instruction: name, pipe, start and end (cycles),
    bytes, ops, and location ("file:line:column" or "")."""

    __slots__ = ("name", "pipe", "start", "end", "bytes", "ops", "location")

    def __init__(self, name, pipe, start, end, nbytes, ops, location):
        self.name, self.pipe, self.start, self.end = name, pipe, start, end
        self.bytes, self.ops, self.location = nbytes, ops, location

    def __repr__(self):
        return (f"Slice({self.name!r}, {self.pipe!r}, start={self.start!r}, "
                f"end={self.end!r})")


class Chip:
    """A model on a chip: a chip name (looked up as kscope predict does)
    or a path to a chip file.  As a context manager, it is where Tensor
    and the instructions put their work; leaving the block without an
    exception schedules the model (run) and, when output is given, writes
    the outputs there (measured, if given, adds measured/predicted
    ratios; trace=False leaves out the pipeline chart, metrics=False the
    statistics, as msKPP's enable_trace and enable_metrics)."""

    def __init__(self, name, output=None, measured=None, trace=True, metrics=True,
                 cache_hit_ratio=None):
        self._lib = _library()
        self._m = None
        err = ctypes.create_string_buffer(_ERRSIZE)
        m = self._lib.ks_pred_model_new(_enc(name, "the chip"), err, _ERRSIZE)
        if not m:
            file, line, col = _caller()
            msg = err.value.decode(errors="replace")
            raise PredictError(_located(file, line, col, msg))
        self._m = m
        if not isinstance(trace, bool) or not isinstance(metrics, bool):
            raise TypeError("trace and metrics must be True or False")
        self._lib.ks_pred_set_outputs(m, (1 if trace else 0) | (2 if metrics else 0))
        self.name = name
        self.output = output
        self.measured = measured
        self.cycles = None    # the predicted time, once run
        self._done = False
        if cache_hit_ratio is not None:
            self.set_cache_hit_ratio(cache_hit_ratio)

    # -- the with statement --
    def __enter__(self):
        _chips().append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        chips = _chips()
        if self in chips:
            chips.remove(self)
        if exc_type is None and not self._done:
            self.run()
            if self.output is not None:
                self.write(self.output, self.measured)
        return False

    def close(self):
        """Frees the model; the chip cannot be used afterwards."""
        if self._m:
            self._lib.ks_pred_model_free(self._m)
            self._m = None

    def __del__(self):
        try:
            self.close()
        except Exception:   # interpreter shutdown: nothing to report to
            pass

    # -- calls --
    def _model(self):
        if not self._m:
            raise PredictError("the chip's model is closed")
        return self._m

    def _locate(self):
        file, line, col = _caller()
        self._lib.ks_pred_set_location(self._model(), _enc(file, "file") if file else None,
                                       line, col)
        return file, line, col

    def _fail(self, where, rc):
        msg = (self._lib.ks_pred_error(self._m) or b"").decode(errors="replace")
        if not msg:
            msg = f"the call failed ({os.strerror(-rc) if rc < 0 else rc})"
        raise PredictError(_located(*where, msg))

    def _check(self, where, rc):
        if rc < 0:
            self._fail(where, rc)
        return rc

    # -- settings --
    def set_cache_hit_ratio(self, config):
        """As msKPP's chip.set_cache_hit_ratio({"cache_hit_ratio": 0.6}):
        the fraction (0 to 1) of reads from a cached space (GM) that hit
        the cache; a dict with the key "cache_hit_ratio" or the number
        itself.  A model-level setting: every load out of GM is costed
        with it when the model is scheduled."""
        if isinstance(config, dict):
            if set(config) != {"cache_hit_ratio"}:
                raise _error(f"set_cache_hit_ratio: the config has the keys "
                             f"{sorted(config)}; accepted: {{'cache_hit_ratio': R}}")
            config = config["cache_hit_ratio"]
        if isinstance(config, bool) or not isinstance(config, (int, float)):
            raise TypeError(f"the cache hit ratio must be a number, not "
                            f"{type(config).__name__}")
        where = self._locate()
        self._check(where, self._lib.ks_pred_set_cache_hit_ratio(self._model(),
                                                                 float(config)))

    def set_config(self, config):
        """As msKPP's chip.set_config: the keys it knows ("cache_hit_ratio")."""
        self.set_cache_hit_ratio(config)

    # -- results --
    @property
    def chip_name(self):
        """The chip file's name."""
        return self._lib.ks_pred_chip_name(self._model()).decode()

    @property
    def clock_hz(self):
        return self._lib.ks_pred_chip_clock_hz(self._model())

    @property
    def time_us(self):
        """The predicted time in microseconds, once run (else None)."""
        if self.cycles is None:
            return None
        return self.cycles / self.clock_hz * 1e6

    @property
    def warnings(self):
        """The model's warnings, one per line ("" if none)."""
        return (self._lib.ks_pred_warnings(self._model()) or b"").decode(errors="replace")

    def run(self):
        """Schedules the model; returns the predicted cycles."""
        cycles = ctypes.c_double()
        where = self._locate()
        self._check(where, self._lib.ks_pred_run(self._model(), ctypes.byref(cycles)))
        self._done = True
        self.cycles = cycles.value
        return self.cycles

    def write(self, output, measured=None):
        """Writes the outputs into the directory output (run first)."""
        if not self._done:
            self.run()
        where = self._locate()
        self._check(where, self._lib.ks_pred_write(self._model(), _enc(str(output), "output"),
                                                   _enc(measured and str(measured),
                                                        "measured")))

    def slices(self):
        """The schedule: a Slice per instruction, in creation order."""
        if not self._done:
            raise PredictError("the model is not scheduled yet: leave the with block "
                               "or call run() first")
        m = self._model()
        out = []
        s = _CSlice()
        for k in range(self._lib.ks_pred_count(m)):
            rc = self._lib.ks_pred_slice(m, k, ctypes.byref(s))
            if rc < 0:
                self._fail((None, 0, 0), rc)
            out.append(Slice((s.name or b"").decode(), (s.pipe or b"").decode(), s.start,
                             s.end, s.bytes, s.ops,
                             (s.location or b"").decode(errors="replace")))
        return out


# ------------------------------------------------------------------
# Tensors
# ------------------------------------------------------------------

class Tensor:
    """A tensor of the current chip: its memory space ("GM", "UB", ...),
    data type ("FP16", ...), shape (a list of ints) and format ("ND",
    "NZ", ...).  As in msKPP, a tensor given only its space (and maybe
    its format) takes its shape and data type from what first writes it:
    the first load into it, or the instruction that outputs it."""

    def __init__(self, space, dtype=None, shape=None, format=None, name=None):
        self._chip = _current("Tensor()")
        self.space = space
        self.dtype = dtype
        self.shape = None if shape is None else [_int64(d, "a dimension") for d in shape]
        self.format = format
        self.name = name
        self._id = None
        if self.dtype is not None and self.shape is not None:
            self._create(self._chip._locate())

    def __repr__(self):
        return (f"Tensor({self.space!r}, {self.dtype!r}, {self.shape!r}, "
                f"format={self.format!r})")

    def _create(self, where):
        chip = self._chip
        arr = (ctypes.c_int64 * max(len(self.shape), 1))(*self.shape)
        self._id = chip._check(where, chip._lib.ks_pred_tensor(
            chip._model(), _enc(self.name, "name"), _enc(self.space, "space"),
            _enc(self.dtype, "dtype"), arr, len(self.shape), _enc(self.format, "format")))

    def _take(self, dtype, shape, where):
        """Completes a tensor that has no shape yet, for its first writer."""
        if self._id is not None:
            return
        if self.dtype is None:
            self.dtype = dtype
        if self.shape is None:
            self.shape = list(shape)
        self._create(where)

    def _need(self, what):
        if self._id is None:
            raise _error(f"{what}: the tensor {self!r} has no shape or data type yet; "
                               f"give them, or load into it first")
        return self._id

    def load(self, src):
        """self <- src: a transfer from src's space to self's."""
        chip = self._chip
        _same_chip(chip, src)
        where = chip._locate()
        sid = src._need("load")
        self._take(src.dtype, src.shape, where)
        chip._check(where, chip._lib.ks_pred_load(chip._model(), self._id, sid))
        return self

    def split(self, axis, parts):
        """The tensor cut along axis into parts pieces (the last one smaller
        when the extent does not divide): a list of Tensors, each ready
        when this one is."""
        chip = self._chip
        where = chip._locate()
        tid = self._need("split")
        axis = _int(axis, "the axis")
        parts = _int(parts, "the number of pieces")
        # The library refuses a bad axis or number of pieces before it
        # writes any id: room for them only when they can be right.
        ok = 0 <= axis < len(self.shape) and 1 <= parts <= self.shape[axis]
        ids = (ctypes.c_int * (parts if ok else 1))()
        chip._check(where, chip._lib.ks_pred_split(chip._model(), tid, axis, parts, ids))
        extent = self.shape[axis]
        step = -(-extent // parts)
        out = []
        for k in range(parts):
            t = Tensor.__new__(Tensor)
            t._chip, t.space, t.dtype, t.format = chip, self.space, self.dtype, self.format
            t.name = None
            shape = list(self.shape)
            shape[axis] = min(step, extent - k * step)
            t.shape = shape
            t._id = ids[k]
            out.append(t)
        return out


def _same_chip(chip, *tensors):
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"expected a Tensor, got {type(t).__name__}")
        if t._chip is not chip:
            raise _error(f"{t!r} belongs to another chip")


# ------------------------------------------------------------------
# Instructions
# ------------------------------------------------------------------

def _issue(name, inputs, outputs, count=None):
    """Issues one instruction on the chip of its tensors (or the current
    one); shapeless outputs take the first input's shape and data type."""
    tensors = list(inputs) + list(outputs)
    chip = tensors[0]._chip if tensors and isinstance(tensors[0], Tensor) else _current(name)
    _same_chip(chip, *tensors)
    if len(inputs) > _MAX_OPERANDS or len(outputs) > _MAX_OPERANDS:
        raise PredictError(f"{name}: an instruction takes at most {_MAX_OPERANDS} inputs "
                           f"and {_MAX_OPERANDS} outputs")
    where = chip._locate()
    ins = [t._need(name) for t in inputs]
    for t in outputs:
        if t._id is None:
            if not inputs or inputs[0]._id is None:
                t._need(name)
            t._take(inputs[0].dtype, inputs[0].shape, where)
    outs = [t._id for t in outputs]
    ia = (ctypes.c_int * max(len(ins), 1))(*ins)
    oa = (ctypes.c_int * max(len(outs), 1))(*outs)
    m = chip._model()
    if count is not None:
        rc = chip._lib.ks_pred_scalar(m, count, ia, len(ins), oa, len(outs))
    else:
        rc = chip._lib.ks_pred_instr(m, _enc(name, "the instruction"), ia, len(ins), oa,
                                     len(outs))
    return chip._check(where, rc)


class Instruction:
    """An issued instruction, as msKPP's instruction classes: constructing
    it issues it (inputs first, then the outputs); calling it returns the
    list of its output tensors.  .id is its number in the model."""

    name = None
    ninputs = 1
    noutputs = 1

    def __init__(self, *tensors):
        cls = type(self)
        want = cls.ninputs + cls.noutputs
        if len(tensors) != want:
            raise TypeError(f"{cls.name}() takes {cls.ninputs} input(s) and "
                            f"{cls.noutputs} output(s), {want} tensors; got {len(tensors)}")
        self.inputs = list(tensors[:cls.ninputs])
        self.outputs = list(tensors[cls.ninputs:])
        self._shape_outputs()
        self.id = _issue(cls.name, self.inputs, self.outputs)

    def _shape_outputs(self):
        """Gives shapeless outputs the shape this instruction makes (by
        default: the first input's, done in _issue)."""

    def __call__(self):
        return list(self.outputs)


def _instruction(name, ninputs, doc):
    return type(name, (Instruction,), {"name": name, "ninputs": ninputs, "noutputs": 1,
                                       "__doc__": doc, "__module__": __name__})


vadd = _instruction("vadd", 2, "vadd(x, y, z): z = x + y, element by element.")
vsub = _instruction("vsub", 2, "vsub(x, y, z): z = x - y, element by element.")
vmul = _instruction("vmul", 2, "vmul(x, y, z): z = x * y, element by element.")
vdiv = _instruction("vdiv", 2, "vdiv(x, y, z): z = x / y, element by element.")
vmax = _instruction("vmax", 2, "vmax(x, y, z): z = max(x, y), element by element.")
vmin = _instruction("vmin", 2, "vmin(x, y, z): z = min(x, y), element by element.")
vexp = _instruction("vexp", 1, "vexp(x, y): y = exp(x), element by element.")
vln = _instruction("vln", 1, "vln(x, y): y = ln(x), element by element.")
vabs = _instruction("vabs", 1, "vabs(x, y): y = |x|, element by element.")
vrelu = _instruction("vrelu", 1, "vrelu(x, y): y = max(x, 0), element by element.")


class _Reduce(Instruction):
    ninputs = 1

    def _shape_outputs(self):
        x, y = self.inputs[0], self.outputs[0]
        if y._id is None and x.shape is not None:
            y.shape = y.shape or x.shape[:-1] + [1]


class vreduce_sum(_Reduce):
    """vreduce_sum(x, y): y = the sums along x's last axis (reduced to 1)."""
    name = "vreduce_sum"


class vreduce_max(_Reduce):
    """vreduce_max(x, y): y = the maxima along x's last axis (reduced to 1)."""
    name = "vreduce_max"


class vconv(Instruction):
    """vconv(x, y[, dtype]): y = x converted to y's data type (dtype gives it
    when y has none yet, as msKPP's vconv(x, y, "FP32"))."""
    name = "vconv"

    def __init__(self, x, y, dtype=None):
        if dtype is not None and isinstance(y, Tensor) and y._id is None and y.dtype is None:
            y.dtype = dtype
        super().__init__(x, y)


_ACCUMULATOR = {"fp16": "fp32", "bf16": "fp32", "int8": "int32", "uint8": "int32"}


class mmad(Instruction):
    """mmad(a, b, c): c[m, n] = a[m, k] x b[k, n] on the cube.  A c with
    no shape yet gets [m, n], and the cube's accumulator type: fp32 for
    fp16 and bf16, int32 for int8 and uint8, else a's type."""
    name = "mmad"
    ninputs = 2

    def _shape_outputs(self):
        a, b, c = self.inputs[0], self.inputs[1], self.outputs[0]
        if c._id is None and a.shape is not None and b.shape is not None:
            if c.shape is None:
                c.shape = [a.shape[0], b.shape[-1]]
            if c.dtype is None and a.dtype is not None:
                c.dtype = _ACCUMULATOR.get(a.dtype.lower(), a.dtype)


def instr(name, inputs=(), outputs=()):
    """Any instruction by name (built in, the chip's, or registered), with
    lists of input and output tensors; returns its id."""
    return _issue(name, list(inputs), list(outputs))


def scalar(count, inputs=(), outputs=()):
    """count operations on the SCALAR pipe, reading inputs and writing
    outputs (lists of tensors); returns its id."""
    count = _int64(count, "the scalar count")
    return _issue("scalar", list(inputs), list(outputs), count=count)


def _flag(what, src, dst, event_id):
    chip = _current(f"{what}()")
    event = _int(event_id, "the event id")
    where = chip._locate()
    fn = chip._lib.ks_pred_set_flag if what == "set_flag" else chip._lib.ks_pred_wait_flag
    return chip._check(where, fn(chip._model(), _enc(src, "the source pipe"),
                                 _enc(dst, "the destination pipe"), event))


def set_flag(pipe_src, pipe_dst, event_id):
    """As msKPP's set_flag: on pipe_src, when its instructions before
    this one have finished, signals event_id (0 to 65535) to pipe_dst;
    takes no time.  Returns its id."""
    return _flag("set_flag", pipe_src, pipe_dst, event_id)


def wait_flag(pipe_src, pipe_dst, event_id):
    """As msKPP's wait_flag: on pipe_dst, blocks that pipe until the
    matching set_flag (the k-th wait of a (src, dst, event) takes its
    k-th set); takes no time.  Returns its id."""
    return _flag("wait_flag", pipe_src, pipe_dst, event_id)


def set_core(name):
    """Issues the instructions that follow to core name ("AIC0", "AIV1")
    of the current chip, or to none when name is None (ks_pred_set_core)."""
    chip = _current("set_core()")
    where = chip._locate()
    chip._check(where, chip._lib.ks_pred_set_core(
        chip._model(), None if name is None else _enc(name, "the core")))
    chip._core = name


class Core:
    """As msKPP's Core: `with Core("AIV0"):` issues the instructions of
    the block to that core of the current chip (a chip whose file has
    "cores"); the core selected before comes back when the block ends."""

    def __init__(self, core_type_name):
        self.name = core_type_name
        self._before = None

    def __enter__(self):
        chip = _current("Core()")
        self._before = getattr(chip, "_core", None)
        set_core(self.name)
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            set_core(self._before)
        return False


def set_cache_hit_ratio(config):
    """The current chip's cache hit ratio (Chip.set_cache_hit_ratio)."""
    _current("set_cache_hit_ratio()").set_cache_hit_ratio(config)


def register(name, pipe, formula=None, table=None, ops=0.0, ninputs=None, noutputs=1):
    """Defines the instruction name on the current chip's pipe, with its
    cost given by a formula (cycles, over size, bytes, in_bytes,
    out_bytes, d0..d7) or a table of (elements, elements per cycle) pairs;
    ops is its operations per element.  Returns an Instruction class:
    f(*tensors) issues it, the last noutputs tensors being outputs (all
    others inputs, unless ninputs fixes their number)."""
    chip = _current("register()")
    if (formula is None) == (table is None):
        raise PredictError(f"register {name}: give either formula= or table=")
    sizes = thr = None
    n = 0
    if table is not None:
        pairs = [tuple(p) for p in table]
        if not pairs or any(len(p) != 2 for p in pairs):
            raise PredictError(f"register {name}: the table is a list of "
                               f"(elements, elements per cycle) pairs")
        n = len(pairs)
        sizes = (ctypes.c_double * n)(*[float(p[0]) for p in pairs])
        thr = (ctypes.c_double * n)(*[float(p[1]) for p in pairs])
    where = chip._locate()
    chip._check(where, chip._lib.ks_pred_register(
        chip._model(), _enc(name, "the name"), _enc(pipe, "the pipe"),
        _enc(formula, "the formula"), sizes, thr, n, float(ops)))
    nout = _int(noutputs, "noutputs")

    class Registered(Instruction):
        def __init__(self, *tensors):
            cls = type(self)
            if cls.fixed_inputs is not None:
                cls_in = cls.fixed_inputs
            else:
                cls_in = len(tensors) - nout
            if cls_in < 0 or len(tensors) != cls_in + nout:
                raise TypeError(f"{name}() takes {'' if cls.fixed_inputs is None else cls_in} "
                                f"input(s) and {nout} output(s); got {len(tensors)} tensors")
            self.inputs = list(tensors[:cls_in])
            self.outputs = list(tensors[cls_in:])
            self.id = _issue(name, self.inputs, self.outputs)

    Registered.name = name
    Registered.noutputs = nout
    Registered.fixed_inputs = ninputs
    Registered.__name__ = Registered.__qualname__ = name
    Registered.__doc__ = f"{name}: a registered instruction on {pipe}."
    return Registered
