#!/usr/bin/python3
"""kscope view's Profile tab on a fresh run with both timers and
per-sample counters, in headless Chromium: the two timers are shown
apart, with the values of the run.

burn_sleep (tests/sample/store: one thread, 20 ms of CPU in burn(), 30 ms
asleep in nap(), repeated; it prints the wall-clock time each took) runs
under `kscope sample --samplers both --counters task-clock,...`; then
`kscope view RUN` is opened as view_test.py opens the bundled samples.
The Profile tab must offer the clock selector, and for each clock:

  - every cell of Top functions and of Counters by function is the API's
    value for that clock (rendered.check_profile_rendered), and the API's
    answer is `kscope report --format json --clock CLOCK [--counters]`'s;
  - the values are the run's: under CPU time burn()'s Total % is at least
    80 and burn() has at least 80% of the task-clock events; under
    wall-clock time nap()'s Total % is the share of the wall-clock time
    the program measured, within 6 points;
  - the timeline's outermost slices count the samples of each timer apart
    (args cpu_samples, wall_samples), as many as profile.db has;
  - no console or page error.

usage: /usr/bin/python3 clocks_test.py --kscope KSCOPE --burn BURN_SLEEP
                                       [--artifacts DIR]
Exits 1 when a check fails or the browser is missing (view_test.py).
"""
import argparse
import glob
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rendered  # noqa: E402  (tests/view/browser/rendered.py)
import view_test  # noqa: E402  (the browser, the server and the page helpers)

TIMEOUT = 120


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith('KSCOPE_')}


def make_run(kscope, burn, parent):
    """The run directory and the nap share the program measured (%)."""
    p = subprocess.run([kscope, 'avail', '--counters', '--format', 'json'],
                       stdout=subprocess.PIPE, timeout=TIMEOUT, env=clean_env())
    sw = [c['name'] for c in json.loads(p.stdout)['counters']
          if c['group'] == 'software' and c['available']]
    if 'task-clock' not in sw:
        raise RuntimeError(f'kscope avail --counters lists {sw} as working software '
                           'counters; this test needs task-clock')
    p = subprocess.run([kscope, 'sample', '-o', parent, '--samplers', 'both', '-F', '1000',
                        '--counters', 'task-clock,context-switches', '--', burn, '1.0'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT,
                       env=clean_env())
    if p.returncode != 0:
        raise RuntimeError(f'kscope sample: exit {p.returncode}: {p.stderr.decode()[-800:]}')
    m = re.search(r'burn_ns=(\d+) nap_ns=(\d+)', p.stdout.decode())
    runs = glob.glob(os.path.join(parent, 'sample_*'))
    if not m or len(runs) != 1:
        raise RuntimeError(f'burn_sleep printed {p.stdout!r}; run directories {runs}')
    return runs[0], 100.0 * int(m.group(2)) / (int(m.group(1)) + int(m.group(2)))


def cli_report(kscope, run_dir, *args):
    p = subprocess.run([kscope, 'report', '--format', 'json', *args, run_dir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT,
                       env=clean_env())
    if p.returncode != 0:
        raise RuntimeError(f'kscope report {args}: {p.stderr.decode()[-500:]}')
    return json.loads(p.stdout)


def row_of(tables, title, function):
    head, rows = tables[title]
    i = head.index('Function')
    return head, next((r for r in rows if len(r) == len(head) and r[i] == function), None)


def check_values(run, where, tables, clock, nap_share):
    """The run's own numbers, as the page shows them."""
    head, burn = row_of(tables, 'Top functions', 'burn')
    _, nap = row_of(tables, 'Top functions', 'nap')
    total = head.index('Total %')
    if burn is None:
        run.fail(where, 'burn is not among the top functions')
        return
    if clock == 'cpu':
        shown = rendered.num(burn[total])
        if shown is None or shown < 80:
            run.fail(where, f'CPU time: burn shows Total % "{burn[total]}", expected 80 or more')
        else:
            run.ok(where, f'CPU time: burn has {burn[total]} of the CPU-time samples')
        head, b = row_of(tables, 'Counters by function', 'burn')
        tc = head.index('task-clock')
        mine = rendered.num(b[tc]) if b else None
        all_tc = sum(rendered.num(r[tc]) or 0 for r in tables['Counters by function'][1]
                     if len(r) == len(head))
        if not mine or mine < 0.8 * all_tc:
            run.fail(where, f'CPU time: burn shows task-clock {b and b[tc]} of {all_tc}')
        else:
            run.ok(where, f'CPU time: burn shows {100 * mine / all_tc:.1f}% of the task-clock events')
    else:
        shown = rendered.num(nap[total]) if nap else None
        if shown is None or abs(shown - nap_share) > 6:
            run.fail(where, f'wall-clock time: nap shows Total % "{nap and nap[total]}", the '
                            f'program slept {nap_share:.1f}% of the time')
        else:
            run.ok(where, f'wall-clock time: nap shows {nap[total]}, the program slept '
                          f'{nap_share:.1f}% of the time')


def check_timeline_args(run, page, card, run_dir):
    """The outermost slices of the program's thread cover each of its
    samples with a call stack once, and say how many each timer took."""
    con = sqlite3.connect(f'file:{run_dir}/profile.db?mode=ro', uri=True)
    want = {k: n for k, n in con.execute(
        'SELECT clock, count(*) FROM samples WHERE stack_id IS NOT NULL GROUP BY clock')}
    con.close()
    procs = page.api('timeline', 'unit/threads', {'cardId': card['cardId']})['body']
    got = {0: 0, 1: 0}
    for pr in procs['processes']:
        for th in pr['threads']:
            r = page.api('timeline', 'unit/threadTraces', {
                'cardId': card['cardId'], 'processId': pr['pid'], 'threadId': th['tid'],
                'startTime': 0, 'endTime': procs['endTime'],
                'timePerPx': max(1, -(-procs['endTime'] // 50000))})
            data = r['body'].get('data') if r.get('result') else None
            if data is None or any(x['count'] != 1 for x in data[0] if data):
                run.fail('timeline', f'thread {th["tid"]}: no single outermost slices: '
                                     f'{str(r)[:300]}')
                return
            for x in data[0] if data else []:
                d = page.api('timeline', 'unit/threadDetail', {
                    'cardId': card['cardId'], 'pid': pr['pid'], 'tid': th['tid'],
                    'id': x['id']})['body']['data']
                args = json.loads(d['args'])
                if args['cpu_samples'] + args['wall_samples'] != args['samples']:
                    run.fail('timeline', f'slice {x["name"]}: args {args}')
                got[0] += args['cpu_samples']
                got[1] += args['wall_samples']
    if got != {0: want.get(0, 0), 1: want.get(1, 0)}:
        run.fail('timeline', f'the outermost slices cover {got} samples per timer '
                             f'(0 CPU time, 1 wall-clock); profile.db has {want}')
    else:
        run.ok('timeline', f'the outermost slices cover the {got[0]} CPU-time and {got[1]} '
                           'wall-clock samples apart')


def main():
    ap = argparse.ArgumentParser(description="the Profile tab's two timers in Chromium")
    ap.add_argument('--kscope', required=True)
    ap.add_argument('--burn', required=True)
    ap.add_argument('--artifacts', default='test-artifacts/view')
    args = ap.parse_args()
    lacking = view_test.missing_tools()
    if lacking:
        for line in lacking:
            print(f'FAIL setup: {line}', flush=True)
        return 1
    os.makedirs(args.artifacts, exist_ok=True)
    run = view_test.Run()
    tmp = tempfile.mkdtemp(prefix='ks-view-clocks-')
    server = driver = None
    try:
        run_dir, nap_share = make_run(args.kscope, args.burn, tmp)
        print(f'run {run_dir}: the program slept {nap_share:.1f}% of its time', flush=True)
        server = view_test.Server(args.kscope, run_dir)
        driver = view_test.start_browser()
        page = view_test.Page(driver)
        driver.get(server.url)
        page.wait_for('the card list',
                      'return document.querySelectorAll("#card-select option").length > 0;')
        card = next(c for c in page.js('return window.kscopeView.app.cards;')
                    if 'profile' in c['kinds'])
        page.click('#tab-profile')
        view_test.check_profile(run, page, 'profile')
        clocks = rendered.profile_clocks(page, card)
        if clocks != ['cpu', 'real']:
            run.fail('profile', f'the API does not give both timers apart: clocks {clocks}')
        for clock in clocks:
            where = f'profile/{clock}'
            rendered.show_profile_clock(page, clock)
            tables = rendered.check_profile_rendered(run, page, where, card, clock)
            for cmd, opts in (('profile/flat', []), ('profile/counters', ['--counters'])):
                api = page.api('profile', cmd, {'cardId': card['cardId'], 'clock': clock})
                if api['body'] != cli_report(args.kscope, run_dir, '--clock', clock, *opts):
                    run.fail(where, f'{cmd} differs from kscope report --clock {clock} {opts}')
                else:
                    run.ok(where, f'{cmd} is kscope report --clock {clock} {" ".join(opts)}')
            if len(tables) == 2:
                check_values(run, where, tables, clock, nap_share)
            else:
                run.fail(where, f'tables shown: {sorted(tables)}')
            page.screenshot(os.path.join(args.artifacts, f'clocks-profile-{clock}.png'))
        check_timeline_args(run, page, card, run_dir)
        for e in view_test.browser_errors(driver):
            run.fail('page', e)
    except Exception as e:  # noqa: BLE001 -- a check that broke is a failure
        run.fail('setup', (str(e).strip().split('\n') or [type(e).__name__])[0]
                 or type(e).__name__)
    finally:
        if driver is not None:
            driver.get('about:blank')
            driver.quit()
        if server is not None and server.stop() != 0:
            run.fail('server', 'kscope view did not exit 0 on SIGINT')
        for root, dirs, _ in os.walk(tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o700)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f'{run.checks} checks passed, {len(run.failures)} failed', flush=True)
    return 1 if run.failures or not run.checks else 0


if __name__ == '__main__':
    sys.exit(main())
