"""mx.profiler: MXNet 1.9.1's profiler. The chrome://tracing file parses and holds
the operators run (imperative, executor, custom operators and what their code runs),
the aggregate statistics count them, counters/markers/tasks/frames/events appear,
pause and stop record nothing, and bad arguments raise. No timing assertions."""

import json
import os
from collections import OrderedDict

import numpy as np
import pytest

import oxnet as mx
from oxnet import _core, profiler
from oxnet.base import MXNetError
from oxnet.operator import CustomOp, CustomOpProp, register

nd = mx.nd


@pytest.fixture
def prof(tmp_path):
    """A configured profiler writing to a file in tmp_path; stopped afterwards."""
    path = str(tmp_path / 'trace.json')

    def start(**kw):
        cfg = dict(filename=path, aggregate_stats=True, continuous_dump=False)
        cfg.update(kw)
        profiler.set_config(**cfg)
        profiler.dumps(reset=True)
        profiler.set_state('run')
        return path

    yield start
    profiler.set_state('stop')
    profiler.set_config(filename=str(tmp_path / 'after.json'), continuous_dump=False)
    _core.profiler_drain()


def _trace(path):
    with open(path) as f:
        return json.load(f)['traceEvents']


def _names(events, ph, cat=None):
    return [e['name'] for e in events if e.get('ph') == ph and (cat is None or e['cat'] == cat)]


def _stats(**kw):
    return json.loads(profiler.dumps(format='json', **kw), object_pairs_hook=OrderedDict)


def test_trace_holds_the_imperative_and_executor_ops(prof):
    path = prof()
    x = nd.zeros((10, 10))
    y = nd.sqrt(x)
    x = x + 1
    x = x + 1
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    ex = mx.sym.dot(a, b).bind(mx.cpu(), {'a': nd.ones((3, 4)), 'b': nd.ones((4, 5))})
    ex.forward()
    mx.nd.waitall()
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), np.full((3, 5), 4.0))
    assert y.asnumpy().sum() == 0
    profiler.set_state('stop')
    profiler.dump()
    events = _trace(path)
    begins = _names(events, 'B', 'operator')
    ends = _names(events, 'E', 'operator')
    assert sorted(begins) == sorted(ends)
    for op in ('_zeros', 'sqrt', 'dot'):
        assert begins.count(op) == 1, (op, begins)
    assert begins.count('_plus_scalar') == 2
    for e in events:
        if e['ph'] in 'BE':
            assert e['ts'] > 0 and 'pid' in e and 'tid' in e
    meta = [e['args']['name'] for e in events if e['ph'] == 'M']
    assert 'cpu/0' in meta


def test_aggregate_counts_match_the_ops_run(prof):
    prof()
    x = nd.ones((5, 5))
    for _ in range(3):
        x = x * 2
    nd.relu(x).wait_to_read()
    s = _stats()
    ops = s['Time']['operator']
    assert ops['_mul_scalar']['Count'] == 3
    assert ops['relu']['Count'] == 1
    assert ops['_ones']['Count'] == 1
    for v in ops.values():
        assert set(v) == {'Count', 'Total', 'Min', 'Max', 'Avg'}
        assert v['Min'] <= v['Avg'] <= v['Max'] or v['Count'] == 1
    assert s['Memory'] == {} and s['Unit'] == {'Time': 'ms', 'Memory': 'kB'}
    table = profiler.dumps()
    assert 'Profile Statistics:' in table and '_mul_scalar' in table and 'operator\n===' in table
    assert 'Total Count' in table and 'Avg Time (ms)' in table
    # reset clears what was counted
    profiler.dumps(reset=True)
    assert _stats()['Time'] == {}


def test_stop_and_pause_record_nothing(prof):
    prof()
    profiler.pause()
    nd.exp(nd.ones((3,))).wait_to_read()
    profiler.resume()
    nd.log(nd.ones((3,))).wait_to_read()
    profiler.set_state('stop')
    nd.sin(nd.ones((3,))).wait_to_read()
    ops = _stats()['Time']['operator']
    assert 'log' in ops and 'exp' not in ops and 'sin' not in ops
    assert profiler.state() == 'stop'


def test_off_by_default_records_nothing():
    profiler.set_state('stop')
    _core.profiler_drain()
    nd.cos(nd.ones((4,))).wait_to_read()
    assert _core.profiler_drain() == []
    assert _core.profiler_status()[:3] == (False, False, False)


def test_user_objects_appear_in_the_trace(prof):
    path = prof()
    dom = profiler.Domain('MyDomain')
    task = dom.new_task('my_task')
    frame = profiler.Frame(dom, 'my_frame')
    event = profiler.Event('my_event')
    counter = dom.new_counter('my_counter', 5)
    for o in (task, frame, event):
        o.start()
    counter += 3
    counter -= 1
    counter.increment(2)
    counter.decrement()
    profiler.Marker(dom, 'my_marker').mark('thread')
    dom.new_marker('other_marker').mark()
    for o in (event, frame, task):
        o.stop()
    profiler.dump()
    ev = _trace(path)
    assert _names(ev, 'b', 'MyDomain') == ['my_task'] and _names(ev, 'e', 'MyDomain') == ['my_task']
    assert _names(ev, '(', 'MyDomain,frame') == ['my_frame']
    assert _names(ev, 'B', 'event') == ['my_event'] and _names(ev, 'E', 'event') == ['my_event']
    values = [e['args']['my_counter'] for e in ev if e['ph'] == 'C']
    assert values == [5, 8, 7, 9, 8]
    marks = [(e['name'], e['s']) for e in ev if e['ph'] == 'i']
    assert marks == [('my_marker', 't'), ('other_marker', 'p')]
    assert all(e['cat'] == 'MyDomain,instant_marker' for e in ev if e['ph'] == 'i')
    names = {e['args']['name'] for e in ev if e['ph'] == 'M'}
    assert {'MyDomain', 'MyDomain,frame', 'event'} <= names
    s = _stats()['Time']
    assert s['MyDomain']['my_counter']['Count'] == 5
    assert s['MyDomain']['my_counter']['Max'] == pytest.approx(0.009)
    assert s['MyDomain']['my_task']['Count'] == 1 and s['event']['my_event']['Count'] == 1
    assert str(dom) == 'MyDomain' and str(task) == 'my_task' and str(counter) == 'my_counter'


def test_continuous_dump_appends_and_stays_valid(prof):
    path = prof(continuous_dump=True)
    dom = profiler.Domain('D')
    sizes = []
    for i in range(3):
        profiler.Marker(dom, 'iter-%d' % i).mark()
        nd.ones((2, 2)).wait_to_read()
        profiler.dump(False)
        sizes.append(os.path.getsize(path))
        assert len(_names(_trace(path), 'i')) == i + 1
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    profiler.dump(True)
    # a finished dump ends output until the profiler runs again
    with pytest.raises(MXNetError):
        profiler.dump()
    profiler.set_state('run')
    profiler.Marker(dom, 'again').mark()
    profiler.dump()
    assert _names(_trace(path), 'i') == ['iter-0', 'iter-1', 'iter-2', 'again']


def test_sorting(prof):
    prof()
    x = nd.ones((50, 50))
    for _ in range(3):
        x = x + 1
    nd.sqrt(x).wait_to_read()
    nd.exp(x).wait_to_read()
    keys = {'total': 'Total', 'avg': 'Avg', 'min': 'Min', 'max': 'Max', 'count': 'Count'}
    for sb, key in keys.items():
        for asc in (False, True):
            vals = [v[key] for v in _stats(sort_by=sb, ascending=asc)['Time']['operator'].values()]
            assert vals == sorted(vals, reverse=not asc)


class _Sq(CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        nd.zeros((2, 2))
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])


@register('ProfSq')
class _SqProp(CustomOpProp):
    def __init__(self):
        super(_SqProp, self).__init__(need_top_grad=True)

    def list_arguments(self):
        return ['data']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        return [in_shape[0]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Sq()


@pytest.mark.parametrize('mode', ['imperative', 'symbolic'])
def test_custom_operator_names(prof, mode):
    prof()
    x = nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    if mode == 'imperative':
        with mx.autograd.record():
            y = nd.Custom(x, op_type='ProfSq')
        y.backward()
        np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0, 6.0])
    else:
        sym = mx.sym.Custom(mx.sym.Variable('a'), op_type='ProfSq')
        ex = sym.bind(mx.cpu(), {'a': x})
        ex.forward()
    mx.nd.waitall()
    cust = _stats()['Time']['Custom Operator']
    assert 'ProfSq::pure_python' in cust and 'ProfSq::_zeros' in cust
    assert cust['ProfSq::pure_python']['Count'] == 1
    if mode == 'imperative':
        assert '_backward_ProfSq::pure_python' in cust
    assert not any(n.startswith('ProfSq') for n in _stats()['Time'].get('operator', {}))


def test_dumps_is_empty_without_aggregate_stats(prof):
    prof(aggregate_stats=False)
    nd.ones((2,)).wait_to_read()
    assert profiler.dumps() == '' and profiler.dumps(format='json') == ''


def test_bad_arguments(prof):
    prof()
    with pytest.raises(MXNetError):
        profiler.set_state('bogus')
    with pytest.raises(KeyError):  # what MXNet raises
        profiler.set_state('running')
    for kw in (dict(format='xml'), dict(sort_by='median'), dict(ascending='yes'),
               dict(reset=2)):
        with pytest.raises(MXNetError):
            profiler.dumps(**kw)
        with pytest.raises(AssertionError):  # what MXNet raises
            profiler.dumps(**kw)
    with pytest.raises(MXNetError):
        profiler.set_config(filename='x.json', bogus=True)
    with pytest.raises(MXNetError):
        profiler.set_config(profile_all='maybe')
    with pytest.raises(MXNetError):
        profiler.Marker(profiler.Domain('D'), 'm').mark('galaxy')
    with pytest.raises(MXNetError):
        profiler.Task('not a domain', 't')
    with pytest.raises(MXNetError):
        profiler.Domain('')
    c = profiler.Counter(profiler.Domain('D'), 'c', 1)
    with pytest.raises(MXNetError):
        c -= 2
    with pytest.raises(MXNetError):
        profiler.Event('never started').stop()
    with pytest.raises(MXNetError):
        profiler.dump(profile_process='server')


def test_dump_before_running_raises(tmp_path):
    profiler.set_config(filename=str(tmp_path / 'never.json'), continuous_dump=False)
    profiler.set_state('run')
    profiler.set_state('stop')
    profiler.dump()
    with pytest.raises(MXNetError, match="hasn't been run"):
        profiler.dump()
    _core.profiler_drain()


def test_scope_and_feature():
    with profiler.scope('outer'):
        assert profiler._current_scope.get() == 'outer:'
        with profiler.scope('inner', append_mode=True):
            assert profiler._current_scope.get() == 'outer:inner:'
    assert profiler._current_scope.get() == '<unk>:'
    assert mx.runtime.Features().is_enabled('PROFILER')


def test_autostart_writes_the_trace_at_exit(tmp_path):
    import subprocess
    import sys
    pkg = os.path.dirname(os.path.dirname(mx.__file__))
    env = dict(os.environ, MXNET_PROFILER_AUTOSTART='1',
               PYTHONPATH=os.pathsep.join([pkg, os.environ.get('PYTHONPATH', '')]))
    code = ("import oxnet as mx\n"
            "assert mx.profiler.state() == 'run'\n"
            "mx.nd.sqrt(mx.nd.ones((2,))).wait_to_read()\n")
    subprocess.run([sys.executable, '-c', code], cwd=str(tmp_path), env=env, check=True,
                   timeout=120)
    events = _trace(str(tmp_path / 'profile.json'))
    assert 'sqrt' in _names(events, 'B', 'operator')


@pytest.mark.parametrize('symbolic,imperative', [(True, False), (False, True)])
def test_symbolic_and_imperative_switches(prof, symbolic, imperative):
    prof(profile_symbolic=symbolic, profile_imperative=imperative)
    a = mx.sym.Variable('a')
    ex = mx.sym.tanh(a).bind(mx.cpu(), {'a': nd.ones((2, 2))})
    ex.forward()
    nd.arctan(nd.ones((2, 2))).wait_to_read()
    mx.nd.waitall()
    ops = _stats()['Time'].get('operator', {})
    assert ('tanh' in ops) == symbolic
    assert ('arctan' in ops) == imperative


# The phases of the Trace Event Format (chrome://tracing, Perfetto's JSON importer).
_PHASES = set('BEXiICbneNODstfPM()')
_META = {'process_name', 'thread_name', 'process_sort_index', 'thread_sort_index', 'process_labels'}


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _check_trace_schema(doc):
    """Checks a dumped trace against the Trace Event Format's JSON-object form, the
    rules Perfetto's importer applies: the events, their fields and types, balanced
    duration events per thread, and names for every process and thread."""
    assert isinstance(doc, dict) and isinstance(doc.get('traceEvents'), list), 'top level must hold a traceEvents list'
    assert doc.get('displayTimeUnit', 'ms') in ('ms', 'ns')
    events = doc['traceEvents']
    proc_names, thread_names, used, stacks = {}, {}, set(), {}
    for i, e in enumerate(events):
        assert isinstance(e, dict), e
        assert isinstance(e.get('name'), str), e
        assert e.get('ph') in _PHASES, e
        assert _is_int(e.get('pid')) and _is_int(e.get('tid')), e
        ph = e['ph']
        if ph == 'M':
            assert e['name'] in _META, e
            assert isinstance(e.get('args'), dict), e
            if e['name'] == 'process_name':
                assert proc_names.setdefault(e['pid'], e['args']['name']) == e['args']['name'], e
            elif e['name'] == 'thread_name':
                key = (e['pid'], e['tid'])
                assert thread_names.setdefault(key, e['args']['name']) == e['args']['name'], e
            continue
        assert isinstance(e.get('ts'), (int, float)) and not isinstance(e['ts'], bool) and e['ts'] >= 0, e
        used.add((e['pid'], e['tid']))
        if ph == 'X':
            assert isinstance(e.get('dur'), (int, float)) and e['dur'] >= 0, e
        if ph in 'bne':
            assert 'id' in e and isinstance(e.get('cat'), str), e
        if ph == 'C':
            assert isinstance(e.get('args'), dict) and e['args'], e
            assert all(isinstance(v, (int, float)) for v in e['args'].values()), e
        if ph in 'iI':
            assert e.get('s', 't') in ('g', 'p', 't'), e
        if ph in 'BE':
            stacks.setdefault((e['pid'], e['tid']), []).append((e['ts'], ph == 'B', i, e['name']))
    for key, evs in stacks.items():
        # in time order, events of one instant in the order they were written (a span
        # shorter than the clock's tick begins and ends at one instant); each end
        # closes the innermost open span of its thread, which has its name
        open_ = []
        for ts, begin, _, name in sorted(evs, key=lambda v: (v[0], v[2])):
            if begin:
                open_.append((name, ts))
            else:
                assert open_, ('E without B', key, name)
                bname, bts = open_.pop()
                assert bname == name and bts <= ts, (key, bname, name)
        assert not open_, ('B without E', key, open_)
    for pid, tid in used:
        assert pid in proc_names, ('process without a name', pid)
        assert (pid, tid) in thread_names, ('thread without a name', pid, tid)
    # one track per thread: a thread name never stands for two tids of a process
    seen = {}
    for (pid, tid), name in thread_names.items():
        assert seen.setdefault((pid, name), tid) == tid, ('two tids named', name)
    return events


def test_trace_follows_the_trace_event_format(prof, tmp_path):
    path = prof(profile_all=True)
    a = nd.ones((64, 64))
    outs = [nd.dot(a, a) for _ in range(8)]
    outs.append(mx.sym.exp(mx.sym.Variable('x')).bind(mx.cpu(), {'x': a}).forward()[0])
    dom = profiler.Domain('schema')
    task = dom.new_task('task')
    task.start()
    frame = dom.new_frame('frame')
    frame.start()
    frame.stop()
    task.stop()
    ev = profiler.Event('event')
    ev.start()
    ev.stop()
    dom.new_counter('counter', 5).increment(2)
    dom.new_marker('marker').mark('process')
    mx.nd.waitall()
    profiler.set_state('stop')
    profiler.dump()
    with open(path) as f:
        events = _check_trace_schema(json.load(f))
    ops = [e for e in events if e['ph'] == 'B' and e.get('cat') == 'operator']
    assert sum(e['name'] == 'dot' for e in ops) == 8
    names = {e['args']['name'] for e in events if e['ph'] == 'M' and e['name'] == 'thread_name'}
    assert names, 'no thread is named'
    # the checker rejects what Perfetto would not read
    bad = [dict(name='x', ph='B', ts=1, pid=0, tid=1)]
    with pytest.raises(AssertionError):
        _check_trace_schema({'traceEvents': bad})
    with pytest.raises(AssertionError):
        _check_trace_schema({'traceEvents': [dict(name='x', ph='X', ts=1, pid=0, tid=1)]})
    with pytest.raises(AssertionError):
        _check_trace_schema([])
