"""Profiler, after MXNet 1.9.1's ``mx.profiler``.

``set_config`` chooses what is recorded and where the trace goes, ``set_state('run')``
starts recording and ``set_state('stop')`` stops it; ``pause``/``resume`` suspend
it. While it runs, every operator the engine executes is timed where it actually runs,
by the Rust engine (``engine::profiler`` in oxnet-core: one atomic check per op when
off), under its registry name in the ``operator`` category: with
``profile_symbolic``, the ops of executors (``bind``/``simple_bind``, Module); with
``profile_imperative``, the others (``mx.nd`` calls, autograd's backward,
hybridized blocks, as in MXNet); operators a custom operator's code
runs are named ``{op_type}::{op}`` in the ``Custom Operator`` category, next to the
custom operator's own Python time, ``{op_type}::pure_python`` (and
``_backward_{op_type}::pure_python``). :class:`Domain`, :class:`Task`, :class:`Frame`,
:class:`Event`, :class:`Counter` and :class:`Marker` record what a program measures
itself.

``dump`` appends the records to the chrome://tracing file (``traceEvents`` with
``B``/``E`` spans for operators and events, ``b``/``e`` for tasks, ``(``/``)`` for
frames, ``C`` for counters, ``i`` for markers, and ``process_name`` metadata naming
each device and category); the file is a complete JSON document after every dump.
``dumps`` returns the aggregate statistics (``aggregate_stats=True``) as MXNet's
table or JSON (``{"Time": {category: {name: {"Count", "Total", "Min", "Max",
"Avg"}}}, "Memory": {...}, "Unit": {...}}``, times in ms).

Differences from MXNet, on purpose: aggregate statistics are updated as records
arrive (MXNet updates them at each dump); markers are chrome instant events
(``"ph": "i"``); nothing is recorded before the first ``set_state('run')``.
Not built: the memory profile (``profile_memory`` records nothing, the ``Memory``
section stays empty), C-API timing (``profile_api``: oxnet has no C API) and
profiling a kvstore server (``profile_process='server'`` raises MXNetError).
``MXNET_PROFILER_AUTOSTART=1`` starts the profiler at import (trace in
``profile.json``, written at exit), as in MXNet.
"""

import atexit
import contextlib
import contextvars
import json
import os
import threading
import warnings
import zlib

from . import _core
from .base import MXNetError

__all__ = ['set_config', 'profiler_set_config', 'set_state', 'profiler_set_state', 'state',
           'dump', 'dump_profile', 'dumps', 'pause', 'resume', 'scope', 'Domain', 'Task',
           'Frame', 'Event', 'Counter', 'Marker']


class _StateError(MXNetError, KeyError):
    """An unknown profiler state or process (MXNet raises KeyError)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ''


class _DumpsError(MXNetError, AssertionError):
    """A bad argument of ``dumps`` (MXNet fails an assertion)."""


_BOOL_KEYS = ('profile_all', 'profile_symbolic', 'profile_imperative', 'profile_memory',
              'profile_api', 'continuous_dump', 'aggregate_stats')
_DEFAULTS = dict(profile_all=False, profile_symbolic=True, profile_imperative=True,
                 profile_memory=True, profile_api=True, filename='profile.json',
                 continuous_dump=True, dump_period=1.0, aggregate_stats=False)

_LOCK = threading.RLock()
_config = dict(_DEFAULTS)
_state = 'stop'
_output_enabled = False   # set by set_state('run'); a finished dump clears it


def _parse_bool(key, val):
    if isinstance(val, bool):
        return val
    s = str(val).strip().lower()
    if s in ('true', '1'):
        return True
    if s in ('false', '0'):
        return False
    raise MXNetError("Invalid Parameter format for %s expect boolean but value='%s'" % (key, val))


def _check_process(profile_process):
    if profile_process not in ('worker', 'server'):
        raise _StateError("profile_process must be 'worker' or 'server', got %r"
                          % (profile_process,))
    if profile_process == 'server':
        raise MXNetError("profiler: profiling a kvstore server (profile_process='server') "
                         "is not supported by oxnet")


# ---------------------------------------------------------------------------
# The trace file


class _Trace(object):
    """The chrome://tracing file being written: a header, the events of every dump
    so far, and a footer that the next dump overwrites, so that the file is valid
    JSON after each dump and grows from one dump to the next."""

    _HEADER = '{\n    "traceEvents": [\n'
    _FOOTER = '\n    ],\n    "displayTimeUnit": "ms"\n}\n'

    def __init__(self, filename):
        self.filename = filename
        self.end = None          # offset of the footer once written
        self.count = 0           # events written
        self.pids = set()        # pids named by a process_name event
        self.tids = set()        # (pid, tid) named by a thread_name event
        self.ncpu = os.cpu_count() or 64

    def _dev_pid(self, dev):
        dev_type, dev_id = dev
        if dev_type == 2:
            return self.ncpu + dev_id, 'gpu/%d' % dev_id
        if dev_type == 3:
            return self.ncpu + 32, 'cpu pinned/'
        if dev_type == 5:
            return self.ncpu + 33, 'cpu shared/'
        return dev_id, 'cpu/%d' % dev_id

    def write(self, records):
        enc = {}

        def s(x):
            v = enc.get(x)
            if v is None:
                v = enc[x] = json.dumps(x)
            return v

        events = []
        threads = None

        def meta(pid, name, tid):
            nonlocal threads
            if pid not in self.pids:
                self.pids.add(pid)
                events.append('        {"ph": "M", "args": {"name": %s}, "pid": %d, "tid": 0, '
                              '"name": "process_name"}' % (s(name), pid))
            if (pid, tid) not in self.tids:
                # one track per thread (each engine worker has its own tid), named
                self.tids.add((pid, tid))
                if threads is None:
                    threads = dict(_core.profiler_thread_names())
                events.append('        {"ph": "M", "args": {"name": %s}, "pid": %d, "tid": %d, '
                              '"name": "thread_name"}' % (s(threads.get(tid, 'thread %d' % tid)), pid, tid))

        for name, cat, kind, ts, extra, tid, dev in records:
            if dev is not None:
                pid, pname = self._dev_pid(dev)
            else:
                pid, pname = zlib.crc32(cat.encode('utf-8')), cat
            meta(pid, pname, tid)
            head = '        {"name": %s, "cat": %s, ' % (s(name), s(cat))
            tail = '"pid": %d, "tid": %d}' % (pid, tid)
            if kind == 'C':
                events.append('%s"ph": "C", "ts": %d, "args": {%s: %d}, %s'
                              % (head, ts, s(name), extra, tail))
            elif kind == 'i':
                events.append('%s"ph": "i", "ts": %d, "s": "%s", %s' % (head, ts, extra, tail))
            else:
                end = {'B': 'E', 'b': 'e', '(': ')'}[kind]
                ident = '"id": %d, ' % tid if kind == 'b' else ''
                events.append('%s"ph": "%s", "ts": %d, %s%s' % (head, kind, ts, ident, tail))
                events.append('%s"ph": "%s", "ts": %d, %s%s' % (head, end, extra, ident, tail))
        if self.end is None:
            mode, body = 'w', self._HEADER
        else:
            mode, body = 'r+', ''
            if not events:
                return
        if events:
            body += (',\n' if self.count else '') + ',\n'.join(events)
        with open(self.filename, mode) as f:
            if self.end is not None:
                f.seek(self.end)
                f.truncate()
            f.write(body)
            self.end = f.tell()
            f.write(self._FOOTER)
        self.count += len(events)


_trace = None


def _new_trace(truncate):
    """A fresh trace for the configured file; ``truncate`` empties the file now (as
    MXNet's ``set_config`` does)."""
    global _trace
    fn = _config['filename']
    _trace = _Trace(fn)
    if fn and truncate:
        with open(fn, 'w'):
            pass


class _DumpTimer(threading.Thread):
    """Dumps every ``dump_period`` seconds while continuous dumping is on."""

    def __init__(self, period):
        super(_DumpTimer, self).__init__(name='DumpProfileTimer', daemon=True)
        self.period = max(float(period), 1e-3)
        self.halt = threading.Event()

    def run(self):
        while not self.halt.wait(self.period):
            with _LOCK:
                if _output_enabled and _config['continuous_dump']:
                    try:
                        _dump_locked(False)
                    except Exception:  # a periodic dump must not kill the program
                        pass


_timer = None


def _stop_timer():
    global _timer
    if _timer is not None:
        _timer.halt.set()
        _timer = None


def _dump_locked(finished):
    global _output_enabled
    records = _core.profiler_drain()
    if _trace is not None and _trace.filename:
        _trace.write(records)
    last = finished or not _config['continuous_dump']
    if finished:
        _stop_timer()
    _output_enabled = _output_enabled and not last


# ---------------------------------------------------------------------------
# The API


def set_config(**kwargs):
    """Sets up the profiler (keyword arguments only).

    Parameters
    ----------
    filename : string
        output file for profile data (default ``profile.json``)
    profile_all : boolean
        all profile types enabled
    profile_symbolic : boolean
        whether to profile symbolic operators (those executors run)
    profile_imperative : boolean
        whether to profile imperative operators (the others)
    profile_memory : boolean
        whether to profile memory usage (records nothing in oxnet)
    profile_api : boolean
        whether to profile the C API (records nothing in oxnet)
    continuous_dump : boolean
        whether to periodically dump profiling data to file
    dump_period : float
        seconds between profile data dumps
    aggregate_stats : boolean
        whether to maintain aggregate stats in memory for console dump (``dumps``)
    profile_process : string
        whether to profile kvstore ``server`` or ``worker`` (default ``worker``)
    """
    global _config, _timer
    kwargs = dict(kwargs)
    _check_process(kwargs.pop('profile_process', 'worker'))
    new = dict(_DEFAULTS)
    for k, v in kwargs.items():
        if k not in _DEFAULTS:
            raise MXNetError("Cannot find argument '%s', Possible Arguments:\n----------------\n%s"
                             % (k, ', '.join(sorted(_DEFAULTS))))
        if k in _BOOL_KEYS:
            new[k] = _parse_bool(k, v)
        elif k == 'dump_period':
            try:
                new[k] = float(v)
            except (TypeError, ValueError):
                raise MXNetError("Invalid Parameter format for dump_period expect float but "
                                 "value='%s'" % (v,)) from None
        else:
            new[k] = str(v)
    if new['continuous_dump'] and not new['dump_period'] > 0:
        raise MXNetError("profiler: dump_period must be positive with continuous_dump, got %s"
                         % (new['dump_period'],))
    with _LOCK:
        _config = new
        _core.profiler_configure(bool(new['profile_all'] or new['profile_symbolic']),
                                 bool(new['profile_all'] or new['profile_imperative']),
                                 bool(new['aggregate_stats']))
        _new_trace(True)
        _stop_timer()
        if new['continuous_dump']:
            _timer = _DumpTimer(new['dump_period'])
            _timer.start()


def profiler_set_config(mode='symbolic', filename='profile.json'):
    """Sets up the profiler (deprecated: use ``set_config``).

    Parameters
    ----------
    mode : string, optional
        ``'symbolic'`` profiles symbolic operators, ``'all'`` everything.
    filename : string, optional
        The name of the output trace file.
    """
    warnings.warn('profiler.profiler_set_config() is deprecated. '
                  'Please use profiler.set_config() instead')
    keys = ['profile_symbolic', 'filename']
    if mode not in ('symbolic', 'all'):
        raise MXNetError("profiler mode must be 'symbolic' or 'all', got %r" % (mode,))
    kwargs = dict(zip(keys, [True, filename]))
    if mode == 'all':
        kwargs['profile_all'] = True
    set_config(**kwargs)


def set_state(state='stop', profile_process='worker'):
    """Sets the profiling state.

    Parameters
    ----------
    state : string, optional
        ``'run'`` to start recording, ``'stop'`` to stop it.
    profile_process : string
        whether to profile kvstore ``server`` or ``worker`` (default ``worker``)
    """
    global _state, _output_enabled
    if state not in ('run', 'stop'):
        raise _StateError("profiler state must be 'run' or 'stop', got %r" % (state,))
    _check_process(profile_process)
    with _LOCK:
        _state = state
        _core.profiler_set_running(state == 'run')
        if state == 'run':
            _output_enabled = True
            if _trace is None:
                _new_trace(False)


def profiler_set_state(state='stop'):
    """Sets the profiling state (deprecated: use ``set_state``)."""
    warnings.warn('profiler.profiler_set_state() is deprecated. '
                  'Please use profiler.set_state() instead')
    set_state(state)


def state():
    """The profiler's state: ``'run'`` or ``'stop'``."""
    return _state


def dump(finished=True, profile_process='worker'):
    """Writes what was recorded since the last dump to the trace file.

    Parameters
    ----------
    finished : boolean
        True for the last dump (it stops continuous dumping; the profiler must be
        set running again before the next dump). False appends and goes on.
    profile_process : string
        whether to profile kvstore ``server`` or ``worker`` (default ``worker``)
    """
    _check_process(profile_process)
    with _LOCK:
        if not _output_enabled:
            raise MXNetError("Profiler hasn't been run. Config and start profiler first")
        _dump_locked(bool(finished))


def dump_profile():
    """Dumps the profile (deprecated: use ``dump``)."""
    warnings.warn('profiler.dump_profile() is deprecated. Please use profiler.dump() instead')
    dump(True)


_SORT_BY = ('total', 'avg', 'min', 'max', 'count')
_MEMORY_CATEGORIES = ('Device Storage', 'Pool Memory')


def _stats_rows(rows, sort_by, ascending):
    """Rows of one category in MXNet's order: by the sort value, largest first
    (smallest first when ascending); ties by name, last first."""
    def value(r):
        _, _, is_counter, count, total, lo, hi = r
        if sort_by == 'total':
            v = total
        elif sort_by == 'avg':
            v = (hi - lo) // 2 if is_counter else (total / count if count else 0.0)
        elif sort_by == 'min':
            v = lo
        elif sort_by == 'max':
            v = hi
        else:
            v = count
        return -v if ascending else v
    return sorted(rows, key=lambda r: (value(r), r[1]), reverse=True)


def _ms(us):
    return us / 1000.0


def _fields(row, is_memory):
    """(count, total, min, max, avg) as MXNet prints them (ms, or kB for memory;
    a counter prints its values divided by 1000 and half its range as average)."""
    _, _, is_counter, count, total, lo, hi = row
    avg = ((hi - lo) // 2) / 1000.0 if is_counter else (_ms(total / count) if count else 0.0)
    return count, _ms(total), lo / 1000.0, hi / 1000.0, avg


def _by_category(stats):
    cats = {}
    for r in stats:
        cats.setdefault(r[0], []).append(r)
    return cats


def _dump_table(stats, sort_by, ascending):
    out = ['\nProfile Statistics:\n\tNote the difference in units for different entries.\n']
    for cat, rows in sorted(_by_category(stats).items()):
        mem = cat in _MEMORY_CATEGORIES
        out.append('%s\n=================\n' % cat)
        if mem:
            out.append('%-25s%16s %16s %16s %16s\n' % ('Name', 'Total Count', 'Min Use  (kB)',
                                                       'Max Use  (kB)', 'Avg Use  (kB)'))
            out.append('%-25s%16s %16s %16s %16s\n' % ('----', '-----------', '-------------',
                                                       '-------------', '-------------'))
        else:
            out.append('%-25s%16s %16s %16s %16s %16s\n' % ('Name', 'Total Count', 'Time (ms)',
                                                            'Min Time (ms)', 'Max Time (ms)',
                                                            'Avg Time (ms)'))
            out.append('%-25s%16s %16s %16s %16s %16s\n' % ('----', '-----------', '---------',
                                                            '-------------', '-------------',
                                                            '-------------'))
        for r in _stats_rows(rows, sort_by, ascending):
            count, total, lo, hi, avg = _fields(r, mem)
            if mem:
                out.append('%-25s%16d %16.4f %16.4f %16.4f\n' % (r[1], count, lo, hi, avg))
            else:
                out.append('%-25s%16d %16.4f %16.4f %16.4f %16.4f\n'
                           % (r[1], count, total, lo, hi, avg))
        out.append('\n')
    return ''.join(out)


def _dump_json(stats, sort_by, ascending):
    sections = {'Time': [], 'Memory': []}
    for cat, rows in sorted(_by_category(stats).items()):
        mem = cat in _MEMORY_CATEGORIES
        items = []
        for r in _stats_rows(rows, sort_by, ascending):
            count, total, lo, hi, avg = _fields(r, mem)
            lines = ['                "Count": %d' % count]
            if not mem:
                lines.append('                "Total": %.4g' % total)
            lines += ['                "Min": %.4g' % lo, '                "Max": %.4g' % hi,
                      '                "Avg": %.4g' % avg]
            items.append('            %s: {\n%s\n            }\n' % (json.dumps(r[1]),
                                                                    ',\n'.join(lines)))
        sections['Memory' if mem else 'Time'].append(
            '        %s: {\n%s        }\n' % (json.dumps(cat), '            ,\n'.join(items)))
    return ('{\n    "Time": {\n%s    }\n    ,\n    "Memory": {\n%s    }\n,\n'
            '    "Unit": {\n        "Time": "ms",\n        "Memory": "kB"\n    }\n}\n'
            % ('        ,\n'.join(sections['Time']), '        ,\n'.join(sections['Memory'])))


def dumps(reset=False, format='table', sort_by='total', ascending=False):
    """Returns the aggregate statistics (``set_config(aggregate_stats=True)``) as a
    string; empty when they are not kept.

    Parameters
    ----------
    reset : boolean
        whether to clear the statistics collected so far
    format : string
        ``'table'`` (default) or ``'json'``
    sort_by : string
        ``'total'`` (default), ``'avg'``, ``'min'``, ``'max'`` or ``'count'``: the
        statistic the entries of each category are sorted by
    ascending : boolean
        whether to sort ascendingly (default False)
    """
    if format not in ('table', 'json'):
        raise _DumpsError("Invalid value provided for format: {0}. Support: 'table', 'json'"
                          .format(format))
    if sort_by not in _SORT_BY:
        raise _DumpsError("Invalid value provided for sort_by: {0}. Support: 'total', 'avg', "
                          "'min', 'max', 'count'".format(sort_by))
    if ascending not in (False, True):
        raise _DumpsError("Invalid value provided for ascending: {0}. Support: False, True"
                          .format(ascending))
    if reset not in (False, True):
        raise _DumpsError("Invalid value provided for reset: {0}. Support: False, True"
                          .format(reset))
    if not _core.profiler_status()[3]:
        return ''
    stats = _core.profiler_aggregate(bool(reset))
    if format == 'table':
        return _dump_table(stats, sort_by, bool(ascending))
    return _dump_json(stats, sort_by, bool(ascending))


def pause(profile_process='worker'):
    """Pauses recording (``resume`` goes on)."""
    _check_process(profile_process)
    _core.profiler_set_paused(True)


def resume(profile_process='worker'):
    """Resumes recording after ``pause``."""
    _check_process(profile_process)
    _core.profiler_set_paused(False)


_current_scope = contextvars.ContextVar('profilerscope', default='<unk>:')


@contextlib.contextmanager
def scope(name='<unk>:', append_mode=False):
    """Names the profiler scope of the memory profiler (kept for MXNet programs; the
    memory profile records nothing in oxnet).

    Parameters
    ----------
    name : string
        the scope's name (a ``:`` is appended when missing)
    append_mode : boolean
        whether to append to the current scope instead of replacing it
    """
    name = name + ":" if not name.endswith(":") else name
    token = _current_scope.set(_current_scope.get() + name if append_mode else name)
    try:
        yield
    finally:
        _current_scope.reset(token)


@contextlib.contextmanager
def _custom_op(op_type):
    """Around a custom operator's Python code: the code's time is recorded as
    ``{op_type}::pure_python`` and the operators it runs as ``{op_type}::{op}``, in
    the ``Custom Operator`` category, as MXNet does (a no-op while not recording)."""
    if not _core.profiler_status()[1]:
        yield
        return
    prev = _core.profiler_set_scope(op_type)
    start = _core.profiler_now()
    try:
        yield
    finally:
        _core.profiler_set_scope(prev)
        _core.profiler_span(op_type + '::pure_python', 'Custom Operator', 'task', start)


def _check_name(what, name):
    name = str(name)
    if not name:
        raise MXNetError("profiler: a %s needs a non-empty name" % what)
    return name


def _check_domain(what, domain):
    if not isinstance(domain, Domain):
        raise MXNetError("profiler: a %s needs a profiler.Domain, got %r" % (what, domain))
    return domain


class Domain(object):
    """Profiling domain, used to group sub-objects like tasks, counters, etc. into
    categories (for chrome://tracing, the category).

    Parameters
    ----------
    name : string
        Name of the domain
    """

    def __init__(self, name):
        self.name = _check_name('domain', name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        """Creates a new Task object owned by this domain."""
        return Task(self, name)

    def new_frame(self, name):
        """Creates a new Frame object owned by this domain."""
        return Frame(self, name)

    def new_counter(self, name, value=None):
        """Creates a new Counter object owned by this domain."""
        return Counter(self, name, value)

    def new_marker(self, name):
        """Creates a new Marker object owned by this domain."""
        return Marker(self, name)


class _Duration(object):
    _phase = 'duration'

    def _category(self):
        raise NotImplementedError

    def start(self):
        """Starts timing the scope of this object."""
        self._start = _core.profiler_now()

    def stop(self):
        """Stops timing the scope of this object and records it."""
        start = getattr(self, '_start', None)
        if start is None:
            raise MXNetError("profiler: %s '%s' stopped before it was started"
                             % (type(self).__name__, self.name))
        _core.profiler_span(self.name, self._category(), self._phase, start)

    def __str__(self):
        return self.name


class Task(_Duration):
    """Profiling Task: a thread-granular time block in a domain (a ``b``/``e`` pair
    in chrome://tracing).

    Parameters
    ----------
    domain : Domain object
        Domain to which this object belongs
    name : string
        Name of the task
    """
    _phase = 'task'

    def __init__(self, domain, name):
        self.domain = _check_domain('task', domain)
        self.name = _check_name('task', name)

    def _category(self):
        return self.domain.name


class Frame(_Duration):
    """Profiling Frame: a process-granular time block in a domain.

    Parameters
    ----------
    domain : Domain object
        Domain to which this object belongs
    name : string
        Name of the frame
    """
    _phase = 'frame'

    def __init__(self, domain, name):
        self.domain = _check_domain('frame', domain)
        self.name = _check_name('frame', name)

    def _category(self):
        return self.domain.name + ',frame'


class Event(_Duration):
    """Profiling Event: a thread-granular time block in the ``event`` category.

    Parameters
    ----------
    name : string
        Name of the event
    """

    def __init__(self, name):
        self.name = _check_name('event', name)

    def _category(self):
        return 'event'


class Counter(object):
    """Profiling Counter: a named non-negative integer whose values are recorded.

    Parameters
    ----------
    domain : Domain object
        Domain to which this object belongs
    name : string
        Name of the counter
    value : integer, optional
        Initial value of the counter
    """

    def __init__(self, domain, name, value=None):
        self.domain = _check_domain('counter', domain)
        self.name = _check_name('counter', name)
        self._value = 0
        if value is not None:
            self.set_value(value)

    def _send(self, v):
        if v < 0:
            raise MXNetError("profiler: counter '%s' cannot go below zero (value %d)"
                             % (self.name, v))
        self._value = v
        _core.profiler_counter(self.name, self.domain.name, v)

    def set_value(self, value):
        """Sets the counter's value."""
        self._send(int(value))

    def increment(self, delta=1):
        """Increments the counter's value by ``delta``."""
        self._send(self._value + int(delta))

    def decrement(self, delta=1):
        """Decrements the counter's value by ``delta``."""
        self._send(self._value - int(delta))

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


_MARKER_SCOPES = {'global': 'g', 'process': 'p', 'thread': 't', 'task': 'p', 'marker': 'p'}


class Marker(object):
    """Set marker for an instant in time.

    Parameters
    ----------
    domain : Domain object
        Domain to which this object belongs
    name : string
        Name of the marker
    """

    def __init__(self, domain, name):
        self.domain = _check_domain('marker', domain)
        self.name = _check_name('marker', name)

    def mark(self, scope='process'):
        """Records the marker now.

        Parameters
        ----------
        scope : string, optional
            ``'global'``, ``'process'``, ``'thread'``, ``'task'`` or ``'marker'``
        """
        letter = _MARKER_SCOPES.get(scope)
        if letter is None:
            raise MXNetError("Invalid Input: '%s', valid values are: {'global', 'marker', "
                             "'process', 'task', 'thread'}" % (scope,))
        _core.profiler_instant(self.name, self.domain.name + ',instant_marker', letter)


def _at_exit():
    """Writes what is left, as MXNet's profiler does when it is destroyed."""
    with _LOCK:
        _stop_timer()
        if _output_enabled:
            try:
                _dump_locked(True)
            except Exception:  # nothing to do about it at exit
                pass


atexit.register(_at_exit)

if os.environ.get('MXNET_PROFILER_AUTOSTART', '0').strip() not in ('', '0'):
    set_config(continuous_dump=False)
    set_state('run')
