#!/usr/bin/python3
"""kscope view's Causal tab on a fresh kscope causal run, in headless
Chromium.

examples/causal/balance.c runs under `kscope causal` (tests/view/
causal_run.py); then `kscope view RUN` is opened as view_test.py opens
the bundled samples, and the Causal tab is compared with the run's
causal.csv, read here with Python's csv module:

  - the tab is active for the causal card (and the card has no other
    tab); one chart per curve, in the file's order, each titled
    FILE-BASENAME:LINE (the whole path its tooltip), "in FUNCTION" beside
    it (causal.csv's function column), its impact the mean
    program speedup of its points above 0% (to the tenth shown);
  - as many circles as causal.csv has rows, each chart as many as its
    curve has points, and one interval bar per point with a known
    interval; every circle where its values fall on the chart's own tick
    labels (0%, 25%, ... across, the program speedup up), and every chart
    with the same y tick labels (one scale for all);
  - the table under the charts: one row per row of causal.csv, each cell
    the CSV's value as the page formats it (util.js fmtNum: at most three
    decimals, thousands separated; "?" for an unknown interval end);
  - a copy of the run whose causal.csv has a cell that is not a number
    lists the import's message, naming the file and the line, above the
    charts, and draws the rows that could be read; its source file,
    renamed to hold markup, is shown as text (no element made of it);
  - no console or page error.

usage: /usr/bin/python3 causal_test.py --kscope KSCOPE --examples DIR
                                       --include DIR [--artifacts DIR]
Exits 1 when a check fails or the browser is missing (view_test.py).
"""
import argparse
import math
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/view
import causal_run  # noqa: E402  (tests/view/causal_run.py)
import rendered  # noqa: E402  (tests/view/browser/rendered.py)
import view_test  # noqa: E402  (the browser, the server and the page helpers)

HEAD = ['Line', 'Function', 'Progress point', 'Line speedup (%)', 'Program speedup (%)', '95% low (%)',
        '95% high (%)', 'Experiments', 'Visits']


def fmt(v):
    """A number as util.js fmtNum(v) writes it (en-US, at most three
    decimals, exponent form below 0.001 and from 1e9); "?" for None."""
    if v is None:
        return '?'
    n = float(v) + 0.0   # -0 is shown as 0
    if n.is_integer() and abs(n) < 1e21:
        return f'{int(n):,}'
    a = abs(n)
    if a < 1e-3 or a >= 1e9:
        m, e = f'{n:.2e}'.split('e')
        return f'{m}e{int(e):+d}'
    return f'{n:,.3f}'.rstrip('0').rstrip('.')


def base(path):
    return path.rsplit('/', 1)[-1] if not path.endswith('/') else path


def show_causal(page, server_url):
    page.d.get(server_url)
    page.wait_for('the card list',
                  'return document.querySelectorAll("#card-select option").length > 0;')
    page.click('#tab-causal')
    page.wait_for('the Causal tab',
                  'const p = document.getElementById("panel-causal");'
                  'return !p.hidden && !p.querySelector(".loading") &&'
                  ' (p.querySelector("figure.causal-panel") || p.querySelector(".empty"));')


def charts(page):
    """Per chart: its title, tooltip, impact text, circles (cx, cy), the
    number of interval bars, and its tick labels {text, x, y, anchor}."""
    return page.js(
        'return [...document.querySelectorAll("#panel-causal figure.causal-panel")].map((f) => ({'
        ' title: f.querySelector(".causal-title").textContent,'
        ' tip: f.querySelector(".causal-title").getAttribute("title"),'
        ' impact: f.querySelector(".causal-impact").textContent,'
        ' func: f.querySelector(".causal-function")?.textContent ?? null,'
        ' circles: [...f.querySelectorAll("svg circle.causal-point")].map((c) =>'
        '   [+c.getAttribute("cx"), +c.getAttribute("cy")]),'
        ' bars: f.querySelectorAll("svg .causal-ci").length,'
        ' ticks: [...f.querySelectorAll("svg text.tick")].map((t) => ({text: t.textContent,'
        '   x: +t.getAttribute("x"), y: +t.getAttribute("y"),'
        '   anchor: t.getAttribute("text-anchor")}))}));')


def axis(ticks, anchor, coord):
    """The map value -> SVG coordinate that the ticks of one axis give
    (their labels "V%" at their places); None when under two ticks."""
    pts = [(float(t['text'].rstrip('%')), t[coord]) for t in ticks if t['anchor'] == anchor]
    if len(pts) < 2:
        return None
    (v0, c0), (v1, c1) = pts[0], pts[-1]
    return lambda v: c0 + (v - v0) * (c1 - c0) / (v1 - v0)


def check_charts(run, page, want):
    where = 'causal/charts'
    got = charts(page)
    titles = [g['title'] for g in got]
    expect = [f'{base(c["file"])}:{c["line"]}' for c in want]
    if titles != expect:
        run.fail(where, f'chart titles {titles}, causal.csv has {expect}')
        return
    run.ok(where, f'{len(got)} charts, titled {", ".join(titles)}, in the file\'s order')
    bad = [f'{g["title"]}: tooltip {g["tip"]!r}' for g, c in zip(got, want)
           if g['tip'] != c['file']]
    bad += [f'{g["title"]}: function {g["func"]!r}, causal.csv has {c["function"]!r}'
            for g, c in zip(got, want)
            if g['func'] != (f'in {c["function"]}' if c['function'] else None)]
    for g, c in zip(got, want):
        shown = rendered.num(g['impact'])
        if c['impact_pct'] is None:
            if g['impact'] != 'impact ?%':
                bad.append(f'{g["title"]}: "{g["impact"]}" for a curve without points above 0%')
        elif not g['impact'].startswith('impact ') or not g['impact'].endswith('%') or \
                shown is None or abs(shown - c['impact_pct']) > 0.05 + 1e-9:
            bad.append(f'{g["title"]}: "{g["impact"]}", the mean of causal.csv is '
                       f'{c["impact_pct"]:.4f}')
    if bad:
        run.fail(where, '; '.join(bad[:4]))
    else:
        run.ok(where, 'each chart shows its file\'s whole path as tooltip, its function '
                      'and its impact')

    rows = sum(len(c['points']) for c in want)
    circles = page.count('#panel-causal svg circle')
    if circles != rows:
        run.fail(where, f'{circles} circles drawn, causal.csv has {rows} points')
    else:
        run.ok(where, f'{circles} circles, one per row of causal.csv')

    yticks = [[t['text'] for t in g['ticks'] if t['anchor'] == 'end'] for g in got]
    xticks = [[t['text'] for t in g['ticks'] if t['anchor'] == 'middle'] for g in got]
    if any(x != ['0%', '25%', '50%', '75%', '100%'] for x in xticks):
        run.fail(where, f'x tick labels {xticks[0]}')
    elif any(y != yticks[0] for y in yticks) or len(yticks[0]) < 2:
        run.fail(where, f'the charts\' y tick labels differ or are missing: {yticks}')
    else:
        run.ok(where, f'every chart has the same y tick labels {yticks[0]} and 0%..100% across')

    misplaced = []
    for g, c in zip(got, want):
        xm, ym = axis(g['ticks'], 'middle', 'x'), axis(g['ticks'], 'end', 'y')
        if xm is None or ym is None:
            misplaced.append(f'{g["title"]}: no axis ticks')
            continue
        pts = sorted(c['points'], key=lambda p: p['line_speedup_pct'])
        if len(g['circles']) != len(pts):
            misplaced.append(f'{g["title"]}: {len(g["circles"])} circles for {len(pts)} points')
            continue
        for (cx, cy), p in zip(g['circles'], pts):
            if not (math.isclose(cx, xm(p['line_speedup_pct']), abs_tol=0.01) and
                    math.isclose(cy, ym(p['program_speedup_pct']), abs_tol=0.01)):
                misplaced.append(f'{g["title"]}: the point ({p["line_speedup_pct"]}%, '
                                 f'{p["program_speedup_pct"]}%) drawn at ({cx:.2f}, {cy:.2f})')
        bars = sum(1 for p in pts if p['ci_low_pct'] is not None and p['ci_high_pct'] is not None)
        if g['bars'] != bars:
            misplaced.append(f'{g["title"]}: {g["bars"]} interval bars for {bars} known intervals')
    if misplaced:
        run.fail(where, '; '.join(misplaced[:4]))
    else:
        run.ok(where, 'each point drawn where its values fall on the chart\'s ticks, with its '
                      'interval bar')


def check_table(run, page, want):
    where = 'causal/table'
    table = page.one('#panel-causal table.data')
    if table is None:
        run.fail(where, 'no table of the curve points')
        return
    head, rows = rendered.table_cells(page, table)
    if head != HEAD:
        run.fail(where, f'headers {head}, expected {HEAD}')
        return
    expect = [[f'{base(c["file"])}:{c["line"]}', c['function'] or '?', c['point'],
               fmt(p['line_speedup_pct']),
               fmt(p['program_speedup_pct']), fmt(p['ci_low_pct']), fmt(p['ci_high_pct']),
               fmt(p['experiments']), fmt(p['visits'])]
              for c in want for p in c['points']]
    if len(rows) != len(expect):
        run.fail(where, f'{len(rows)} rows, causal.csv has {len(expect)}')
        return
    bad = [f'row {i + 1} {HEAD[k]}: "{g[k]}", causal.csv gives "{w[k]}"'
           for i, (g, w) in enumerate(zip(rows, expect)) for k in range(len(HEAD)) if g[k] != w[k]]
    if bad:
        run.fail(where, '; '.join(bad[:5]))
    else:
        run.ok(where, f'{len(rows)} rows, {len(rows) * len(HEAD)} cells, each causal.csv\'s value')


# A file name that would be an element with a handler if the page wrote
# text as markup.
MARKUP = '<img src=x onerror=window.kscopePwned=1>'


def check_malformed(run, page, kscope, run_dir, tmp, want, artifacts):
    """A cell that is not a number: the message above the charts, and the
    rows that could be read drawn; a file name with markup shown as
    text."""
    where = 'causal/malformed'
    d = os.path.join(tmp, 'bad', os.path.basename(run_dir))
    shutil.copytree(run_dir, d)
    csv_path = os.path.join(d, 'causal.csv')

    def edit(lines):
        row = lines[2].split(',')
        row[4] = 'n/a'
        lines = lines[:2] + [','.join(row)] + lines[3:]
        return [x.replace('.c,', MARKUP + '.c,', 1) if i else x for i, x in enumerate(lines)]
    causal_run.rewrite(csv_path, edit)
    server = view_test.Server(kscope, d)
    try:
        show_causal(page, server.url)
        msgs = page.js('return [...document.querySelectorAll('
                       '"#panel-causal ul.causal-messages li")].map((e) => e.textContent);')
        expect = [f'{csv_path}: line 3: program_speedup_pct is "n/a"; a number is expected '
                  '(the row is left out)']
        if msgs != expect:
            run.fail(where, f'messages shown {msgs}, expected {expect}')
        else:
            run.ok(where, 'the message naming the file and line 3 is shown')
        rows = sum(len(c['points']) for c in want) - 1
        circles = page.count('#panel-causal svg circle.causal-point')
        if circles != rows:
            run.fail(where, f'{circles} circles for the {rows} rows that could be read')
        else:
            run.ok(where, f'the {rows} rows that could be read are drawn')
        titles = page.js('return [...document.querySelectorAll("#panel-causal .causal-title")]'
                         '.map((e) => e.textContent);')
        cells = page.js('return [...document.querySelectorAll("#panel-causal table.data tbody tr")]'
                        '.map((r) => r.children[0].textContent);')
        expect = [f'{base(c["file"])[:-2]}{MARKUP}.c:{c["line"]}' for c in want]
        if sorted(set(cells)) != sorted(set(expect)):
            run.fail(where, f'the table\'s Line cells {sorted(set(cells))}, expected '
                            f'{sorted(set(expect))}')
        made = page.js('return document.querySelectorAll("#panel-causal img").length +'
                       ' (window.kscopePwned ? 1000 : 0);')
        if titles != expect or made:
            run.fail(where, f'titles {titles} (expected {expect}); {made} elements or '
                            'handlers made of the file name')
        else:
            run.ok(where, 'a file name with markup is shown as text, in titles and table')
        page.screenshot(os.path.join(artifacts, 'causal-malformed.png'))
        for e in view_test.browser_errors(page.d):
            run.fail(where, e)
        page.d.get('about:blank')
    finally:
        if server.stop() != 0:
            run.fail(where, 'kscope view did not exit 0 on SIGINT')


def main():
    ap = argparse.ArgumentParser(description='the Causal tab in Chromium')
    ap.add_argument('--kscope', required=True)
    ap.add_argument('--examples', required=True, help='examples/causal')
    ap.add_argument('--include', required=True, help="kscope's include directory")
    ap.add_argument('--artifacts', default='test-artifacts/view')
    args = ap.parse_args()
    lacking = view_test.missing_tools()
    if lacking:
        for line in lacking:
            print(f'FAIL setup: {line}', flush=True)
        return 1
    os.makedirs(args.artifacts, exist_ok=True)
    run = view_test.Run()
    tmp = tempfile.mkdtemp(prefix='ks-view-causal-')
    server = driver = None
    try:
        run_dir = causal_run.make_run(args.kscope, args.examples, args.include, tmp)
        want = causal_run.read_curves(os.path.join(run_dir, 'causal.csv'))
        print(f'run {run_dir}: {len(want)} curves', flush=True)
        if not want:
            raise RuntimeError('the run has no curves to show')
        server = view_test.Server(args.kscope, run_dir)
        driver = view_test.start_browser()
        page = view_test.Page(driver)
        show_causal(page, server.url)
        tabs = page.js('return [...document.querySelectorAll("[role=tab][aria-disabled=false]")]'
                       '.map((t) => t.dataset.view);')
        if tabs != ['causal']:
            run.fail('causal', f'active tabs {tabs}, expected the Causal tab alone')
        else:
            run.ok('causal', 'the causal card has the Causal tab, and only it')
        check_charts(run, page, want)
        check_table(run, page, want)
        page.screenshot(os.path.join(args.artifacts, 'causal.png'))
        for e in view_test.browser_errors(driver):
            run.fail('page', e)
        driver.get('about:blank')
        check_malformed(run, page, args.kscope, run_dir, tmp, want, args.artifacts)
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
