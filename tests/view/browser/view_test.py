#!/usr/bin/python3
"""kscope view's page in headless Chromium, on every bundled sample result.

For each sample under --samples (tests/view/samples) it starts
`kscope view SAMPLE --port 0`, opens the page in Debian's Chromium through
Debian's ChromeDriver (/usr/bin/chromedriver, driven by python3-selenium),
and checks that every tab that applies renders real content: a timeline
slice clicked shows its details, a source line clicked selects its
instructions (and an instruction its line), the roofline has the card's
point, the flame graph has frames and the profile's tables hold the API's
values cell by cell (per clock for a profile with both timers' samples),
findings list their kinds, a prediction has its pipe table, pie and
timeline; and that no console error or page error happened anywhere.  Each page visited is logged ("visit SAMPLE
URL").  Screenshots of every tab go to the artifacts directory; with
KSCOPE_VIEW_SCREENSHOTS=DIR also one per tab as DIR/view-<tab>.png (the
README's).  KSCOPE_VIEW_ONLY=NAME runs one sample.

usage: /usr/bin/python3 view_test.py --kscope KSCOPE --samples DIR
                                     [--artifacts DIR]
Exits 1 when any check fails, and also when Chromium, ChromeDriver or
Selenium is missing (scripts/install-deps.sh installs them): a browser
test that cannot drive a browser has not passed.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rendered  # noqa: E402  (tests/view/browser/rendered.py)

CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'
WAIT = 15.0          # seconds any one thing on the page may take
VIEWPORT = (1280, 800)

# Which sample makes each README screenshot, best first.
SHOT_FROM = {
    'timeline': ['simulate_matmul', 'predict_vadd', 'sample_demo'],
    'source': ['simulate_matmul', 'op_vadd'],
    'details': ['op_vadd', 'simulate_matmul'],
    'roofline': ['simulate_matmul', 'op_vadd'],
    'profile': ['sample_demo'],
    'findings': ['falseshare', 'memcheck_uaf'],
    'predict': ['predict_vadd'],
}


def missing_tools():
    """What the test needs and this machine lacks, one line each."""
    out = []
    for path, pkg in ((CHROMIUM, 'chromium'), (CHROMEDRIVER, 'chromium-driver')):
        if not os.access(path, os.X_OK):
            out.append(f'{path} is missing (Debian package {pkg})')
    try:
        import selenium  # noqa: F401
    except ImportError:
        out.append(f'Python module selenium is missing for {sys.executable} '
                   '(Debian package python3-selenium)')
    return out


class Run:
    """Counts checks and failures, prints one line each."""

    def __init__(self):
        self.checks = 0
        self.failures = []

    def ok(self, where, msg):
        self.checks += 1
        print(f'ok   {where}: {msg}', flush=True)

    def fail(self, where, msg):
        self.failures.append(f'{where}: {msg}')
        print(f'FAIL {where}: {msg}', flush=True)


class Server:
    """`kscope view SAMPLE --port 0`, up once it has printed its URL."""

    # The URL with the run's token: opening it gives the page its cookie.
    URL_LINE = re.compile(r'^kscope: view: (http://[^ ]+/\?token=[0-9a-f]{48}) '
                          r'\(Ctrl\+C stops\)$')

    def __init__(self, kscope, sample):
        self.proc = subprocess.Popen([kscope, 'view', sample, '--port', '0'],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        first = []
        reader = threading.Thread(target=lambda: first.append(self.proc.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(30)
        if not first:
            self.proc.kill()
            raise RuntimeError(f'kscope view printed no URL in 30 s; stderr: {"".join(self.stderr)}')
        line = first[0].rstrip('\n')
        if not line:
            code = self.proc.wait(10)
            raise RuntimeError(f'kscope view exited with {code} before printing its URL; '
                               f'stderr: {"".join(self.stderr)}')
        m = self.URL_LINE.match(line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f'unexpected first line: {line}')
        self.url = m.group(1)
        # Keep draining stdout so the server never blocks on a full pipe.
        threading.Thread(target=lambda: self.proc.stdout.read(), daemon=True).start()

    def stop(self):
        """SIGINT, then the exit status (SIGKILL after 10 s)."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


class Page:
    """The few page operations the checks use, on one Selenium driver."""

    def __init__(self, driver):
        from selenium.webdriver.common.by import By
        self.d = driver
        self.By = By

    # ---- reading
    def js(self, body, *args):
        """Runs a function body; `arguments` are args.  WebDriver's scripts
        are not subject to the page's Content-Security-Policy."""
        return self.d.execute_script(body, *args)

    def all(self, css, root=None):
        return (root or self.d).find_elements(self.By.CSS_SELECTOR, css)

    def one(self, css, root=None):
        found = self.all(css, root)
        return found[0] if found else None

    def count(self, css, root=None):
        return len(self.all(css, root))

    def text(self, css):
        e = self.one(css)
        return e.get_attribute('textContent') if e is not None else None

    # ---- waiting
    def wait_for(self, what, body, *args, timeout=WAIT):
        """Waits until the function body returns something truthy."""
        end = time.monotonic() + timeout
        while True:
            got = self.js(body, *args)
            if got:
                return got
            if time.monotonic() > end:
                raise TimeoutError(f'waited {timeout:g} s for {what}')
            time.sleep(0.05)

    def wait_css(self, css, timeout=WAIT, visible=True):
        body = ('const e = document.querySelector(arguments[0]);'
                'if (!e) return false;'
                'if (!arguments[1]) return true;'
                'const r = e.getBoundingClientRect();'
                'return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== "hidden";')
        return self.wait_for(css, body, css, visible, timeout=timeout)

    # ---- acting
    def click(self, target):
        e = self.one(target) if isinstance(target, str) else target
        if e is None:
            raise RuntimeError(f'nothing matches {target}')
        self.js('arguments[0].scrollIntoView({block: "center", inline: "nearest"});', e)
        e.click()

    def click_at(self, x, y):
        from selenium.webdriver.common.actions.action_builder import ActionBuilder
        a = ActionBuilder(self.d)
        a.pointer_action.move_to_location(int(round(x)), int(round(y)))
        a.pointer_action.click()
        a.perform()

    def wheel_at(self, x, y, dy):
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
        ActionChains(self.d).scroll_from_origin(
            ScrollOrigin.from_viewport(int(round(x)), int(round(y))), 0, int(dy)).perform()

    def hover(self, e):
        from selenium.webdriver.common.action_chains import ActionChains
        self.js('arguments[0].scrollIntoView({block: "center", inline: "nearest"});', e)
        ActionChains(self.d).move_to_element(e).perform()

    def press(self, key):
        from selenium.webdriver.common.action_chains import ActionChains
        ActionChains(self.d).send_keys(key).perform()

    def screenshot(self, path):
        self.d.save_screenshot(path)

    def api(self, module, command, params):
        return self.d.execute_async_script(
            'const [m, c, p, done] = arguments;'
            'fetch("api", {method: "POST", headers: {"Content-Type": "application/json"},'
            ' body: JSON.stringify({id: 1, moduleName: m, type: "request", command: c, params: p})})'
            '.then((r) => r.json()).then(done, (e) => done({error: String(e)}));',
            module, command, params)


# ---------------------------------------------------------------- checks

def check_timeline(run, page, where, hook, panel):
    slices = lambda: page.js('return window.kscopeView[arguments[0]].visibleSlices();', hook)

    def idle():
        page.wait_for('the timeline to finish loading',
                      'return !window.kscopeView[arguments[0]].pending();', hook)

    page.wait_for('timeline slices',
                  'const h = window.kscopeView && window.kscopeView[arguments[0]];'
                  'return h && h.visibleSlices().length > 0;', hook)
    # Zoom in until a single (unmerged) slice is wide enough to click.
    chosen = None
    for _ in range(20):
        drawn = slices()
        single = [s for s in drawn if s['count'] == 1 and s['width'] >= 6]
        if single:
            chosen = max(single, key=lambda s: s['width'])
            break
        # Zoom with the wheel around the widest item drawn.
        target = max(drawn, key=lambda s: s['width'])
        win = page.js('return window.kscopeView[arguments[0]].window();', hook)
        page.wheel_at(target['x'], target['y'], -400)
        page.wait_for('the timeline to zoom in',
                      'const x = window.kscopeView[arguments[0]].window();'
                      'return x.end - x.start < arguments[1];', hook, win['end'] - win['start'])
        time.sleep(0.15)
        idle()
    if chosen is None:
        run.fail(where, 'no single slice became wide enough to click after zooming in')
        return
    run.ok(where, f'{len(slices())} items drawn')
    # Click where the slice is once nothing more is on its way.
    idle()
    pos = page.js('return window.kscopeView[arguments[0]].slicePosition(arguments[1]);',
                  hook, chosen['id'])
    if not pos:
        run.fail(where, f'slice {chosen["id"]} "{chosen["name"]}" is no longer drawn')
        return
    page.click_at(pos['x'], pos['y'])
    try:
        page.wait_for(f'the details of "{chosen["name"]}"',
                      'const t = document.querySelector(arguments[0]);'
                      'return t && t.textContent === arguments[1];',
                      f'{panel} .tl-details .slice-title', chosen['name'])
        facts = page.text(f'{panel} .tl-details dl.facts') or ''
        if 'Duration' not in facts or 'Self time' not in facts:
            run.fail(where, f'the details panel lacks duration or self time: {facts}')
        else:
            run.ok(where, f'clicking slice "{chosen["name"]}" shows its details')
    except TimeoutError:
        got = page.text(f'{panel} .tl-details') or ''
        run.fail(where, f'clicking slice "{chosen["name"]}" did not show its details '
                        f'(panel: {got[:200]})')


# A trace with counters ("C" events, as op --simulate writes its bandwidth
# chart): each drawn as a row of its process, its samples as written, its
# value shown on hover.
COUNTER_TRACE = {"traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "thread1"}},
    {"ph": "X", "name": "work", "pid": 1, "tid": 1, "ts": 0, "dur": 40},
    {"ph": "C", "name": "L1 -> registers", "cat": "bandwidth", "pid": 1, "ts": 0,
     "args": {"Read GB/s": 1.5, "Write GB/s": 0.25}},
    {"ph": "C", "name": "L1 -> registers", "cat": "bandwidth", "pid": 1, "ts": 10,
     "args": {"Read GB/s": 6.125, "Write GB/s": 2}},
    {"ph": "C", "name": "L1 -> registers", "cat": "bandwidth", "pid": 1, "ts": 30,
     "args": {"Read GB/s": 0, "Write GB/s": 0}},
]}


def check_counters(run, page, kscope, tmp, artifacts):
    where = 'counters'
    d = os.path.join(tmp, 'counters')
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'trace.json'), 'w') as f:
        json.dump(COUNTER_TRACE, f)
    server = Server(kscope, d)
    try:
        page.d.get(server.url)
        page.wait_for('the card list',
                      'return document.querySelectorAll("#card-select option").length > 0;')
        page.click('#tab-timeline')
        rows = page.wait_for('the counter row and its samples',
                             'const h = window.kscopeView && window.kscopeView.timeline;'
                             'if (!h || h.pending()) return null;'
                             'const r = h.counterRows();'
                             'return r.length && r.every((x) => x.data) ? r : null;')
        want = [(e["ts"] * 1000, [e["args"]["Read GB/s"], e["args"]["Write GB/s"]])
                for e in COUNTER_TRACE["traceEvents"] if e["ph"] == "C"]
        got = [(x["startTime"], x["values"]) for x in rows[0]["data"]]
        if len(rows) != 1 or rows[0]["name"] != "L1 -> registers" or got != want:
            run.fail(where, f'counter rows {rows}, expected the samples {want}')
            return
        run.ok(where, 'the counter row holds the samples as written')
        page.screenshot(os.path.join(artifacts, 'counters-timeline.png'))
        x = page.js('return window.kscopeView.timeline.xAt(arguments[0]);', 20000)
        from selenium.webdriver.common.actions.action_builder import ActionBuilder
        a = ActionBuilder(page.d)
        a.pointer_action.move_to_location(int(round(x)), int(round(rows[0]["y"])))
        a.perform()
        tip = page.wait_for('the counter tooltip',
                            'const t = document.querySelector(".tooltip");'
                            'return t && !t.hidden ? t.textContent : null;')
        if 'Read GB/s: 6.125' not in tip or 'Write GB/s: 2' not in tip:
            run.fail(where, f'hovering the counter at 20 us shows {tip!r}')
        else:
            run.ok(where, 'hovering the counter shows its values')
        for e in browser_errors(page.d):
            run.fail(where, e)
        page.d.get('about:blank')
    finally:
        code = server.stop()
        if code != 0:
            run.fail(where, f'kscope view exited with {code} on SIGINT, not 0')


def check_source(run, page, where):
    page.wait_css('#panel-source table.code tbody tr')
    run.ok(where, f'{page.count("#panel-source table.code tbody tr")} source lines shown')
    has_inst = page.count('#panel-source .inst-table tbody tr')
    rows = page.all('#panel-source table.code tr.has-data')
    if not has_inst:
        run.fail(where, 'no instruction table')
        return
    if not rows:
        run.fail(where, 'no source line has per-line data')
        return
    # A line with data selects its instructions.
    ok = False
    for row in rows[:8]:
        page.click(row)
        sel = page.count('#panel-source .inst-table tr.sel')
        if sel:
            ok = True
            run.ok(where, f'clicking line {row.get_attribute("data-line")} highlights '
                          f'{sel} instructions')
            break
    if not ok:
        run.fail(where, 'clicking a line with data highlighted no instruction')
        return
    # And an instruction selects its line.
    page.js('document.querySelectorAll("#panel-source table.code tr.sel")'
            '.forEach((e) => e.classList.remove("sel"));')
    page.click('#panel-source .inst-table tr.sel')
    try:
        page.wait_css('#panel-source table.code tr.sel')
        run.ok(where, 'clicking an instruction selects its line')
    except TimeoutError:
        run.fail(where, 'clicking an instruction selected no line')
    # Sorting by a header changes the order (or keeps it if already sorted).
    page.click('#panel-source .inst-table th')
    if page.count('#panel-source .inst-table th[aria-sort]') != 1:
        run.fail(where, 'clicking a column header did not sort the instruction table')


def check_details(run, page, where):
    page.wait_for('the details panel',
                  'return !document.querySelector("#panel-details .loading") &&'
                  ' document.querySelectorAll("#panel-details section.box h3").length >= 4;')
    content = page.count('#panel-details svg.bars, #panel-details svg.memdiagram, '
                         '#panel-details table.data, #panel-details dl.facts dd')
    if not content:
        run.fail(where, 'no details content (no chart, diagram or table)')
    else:
        run.ok(where, f'{content} detail charts, diagrams and tables')
    paths = page.count('#panel-details svg.memdiagram path.mempath')
    if page.count('#panel-details svg.memdiagram') and not paths:
        run.fail(where, 'the memory diagram has no paths')


def check_roofline(run, page, where, card):
    page.wait_css('#panel-roofline svg.roofline-chart')
    sel = f'#panel-roofline .roofline-point[data-card="{card["cardId"]}"]'
    pts = page.count(sel)
    ceilings = page.count('#panel-roofline .ceiling')
    if 'roofline' in card['kinds'] and not pts:
        run.fail(where, f'no roofline point of card {card["cardId"]}')
    elif not ceilings:
        run.fail(where, 'no roofline ceilings')
    else:
        run.ok(where, f'{pts} points of this card, {ceilings} ceilings')
    if pts:
        page.hover(page.one(sel))
        tip = page.text('.tooltip') or ''
        if 'intensity' not in tip:
            run.fail(where, f'hovering a point shows no values ({tip})')


def check_profile(run, page, where):
    page.wait_for('the profile panel',
                  'return !document.querySelector("#panel-profile .loading") &&'
                  ' document.querySelectorAll("#panel-profile section.box h3").length >= 2;')
    frames = page.all('#panel-profile svg.flame .flame-frame')
    rows = page.count('#panel-profile table.data tbody tr')
    if len(frames) < 2:
        run.fail(where, f'the flame graph has {len(frames)} frames')
    else:
        run.ok(where, f'flame graph with {len(frames)} frames, {rows} functions')
    if not rows:
        run.fail(where, 'no top functions')
    if len(frames) >= 2:
        # Zoom into the deepest frame's parent: the ancestors turn dim.
        page.click(frames[1])
        if not page.count('#panel-profile svg.flame .flame-frame.dim'):
            run.fail(where, 'clicking a frame did not zoom into it')
    if page.count('#panel-profile select[aria-label=Thread] option') < 2:
        run.fail(where, 'the thread selector lists no thread')


def check_fs_parts(run, page, where, body, kinds):
    """A falsely shared object's details show its lines' parts: the
    names, offsets and threads report.json gives."""
    objs = (body.get('false_sharing') or {}).get('objects') or []
    if not objs:
        return
    if 'falsely shared object' not in kinds:
        run.fail(where, 'the falsely shared objects are not listed')
        return
    group = page.one('#panel-findings .finding-group[data-kind="falsely shared object"]')
    first = page.all('details.finding', group)[0]
    title = page.one('.finding-title', first).get_attribute('textContent')
    if title != objs[0]['name']:
        run.fail(where, f'first falsely shared object {title!r}, report.json says {objs[0]["name"]!r}')
    page.click(page.one('summary', first))
    want = [(p['name'], str(p['offset_in_line']), str(p['size']))
            for ln in objs[0]['lines'] for p in ln.get('parts') or []]
    rows = [[c.get_attribute('textContent') for c in page.all('td', tr)]
            for tr in page.all('table.parts tbody tr', first)]
    got = [tuple(r[:3]) for r in rows]
    if got != want:
        run.fail(where, f'parts shown {got}, report.json has {want}')
    else:
        run.ok(where, f'the parts of {title}: {", ".join(n for n, _, _ in got)}')


def check_findings(run, page, where, card):
    page.wait_for('the findings panel', 'return !document.querySelector("#panel-findings .loading");')
    r = page.api('findings', 'findings/list', {'cardId': card['cardId']})
    body = (r or {}).get('body') or {}
    kinds = [e.get_attribute('textContent') for e in page.all('#panel-findings .finding-group .kind')]
    want = {e.get('kind') for e in body.get('errors') or []}
    fs = body.get('false_sharing') or {}
    if body.get('analysis') == 'falseshare' and fs.get('lines', 0) > 0:
        want.add('false sharing')
    for k in sorted(want):
        if k not in kinds:
            run.fail(where, f'kind "{k}" is not listed (listed: {", ".join(kinds)})')
    if not kinds:
        run.fail(where, 'no finding listed')
        return
    run.ok(where, f'kinds listed: {", ".join(kinds)}')
    check_fs_parts(run, page, where, body, kinds)
    # A global object has no allocation stack: open findings in order
    # until one shows its stack (every report here has such findings).
    stacked = -1
    for i, f in enumerate(page.all('#panel-findings details.finding')[:40]):
        if not page.js('return arguments[0].open;', f):
            page.click(page.one('summary', f))
        if page.count('ol.stack li', f):
            stacked = i
            break
    if stacked < 0:
        run.fail(where, 'no finding among the first 40 shows a stack')
    else:
        run.ok(where, f'finding {stacked + 1} shows its stack')
    # Open the first finding with a linked frame and follow the link.
    with_link = next((f for f in page.all('#panel-findings details.finding')
                      if page.count('a.src-link', f)), None)
    if with_link is not None:
        if not page.js('return arguments[0].open;', with_link):
            page.click(page.one('summary', with_link))
        link = page.one('a.src-link', with_link)
        text = link.get_attribute('textContent')
        page.click(link)
        try:
            page.wait_css('#panel-source table.code tr.sel')
            run.ok(where, f'the frame link {text} opens the Source tab at its line')
        except TimeoutError:
            run.fail(where, f'the frame link {text} did not open its line in the Source tab')


def check_predict(run, page, where):
    page.wait_css('#panel-predict svg.pie .pie-slice')
    table = page.one('#panel-predict table.data')
    rows = page.count('tbody tr', table) if table is not None else 0
    if not rows:
        run.fail(where, 'the pipe table is empty')
    else:
        run.ok(where, f'{rows} pipes, {page.count("#panel-predict .pie-slice")} pie slices')


# ---------------------------------------------------------------- main

def start_browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ('--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
              '--disable-background-networking', '--disable-component-update',
              '--disable-sync', '--no-first-run', f'--window-size={VIEWPORT[0]},{VIEWPORT[1]}'):
        opts.add_argument(a)
    # Console messages and uncaught exceptions come back through the log.
    opts.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    # The driver is named: nothing looks for or downloads another one.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_script_timeout(WAIT)
    # The page's viewport, exactly (the window's size includes no chrome
    # in headless mode, but make it certain).
    driver.execute_cdp_cmd('Emulation.setDeviceMetricsOverride',
                           {'width': VIEWPORT[0], 'height': VIEWPORT[1],
                            'deviceScaleFactor': 1, 'mobile': False})
    return driver


def browser_errors(driver):
    """Console errors and uncaught page errors since the last call."""
    return [f'console: {e.get("message", "")}' for e in driver.get_log('browser')
            if e.get('level') == 'SEVERE']


def visit(run, page, name, url, sample_names, args, shots):
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select
    taken = shots['taken']

    def screenshot(file_name, tab):
        page.screenshot(os.path.join(args.artifacts, f'{file_name}.png'))
        if shots['dir'] and tab and tab not in taken:
            present = [s for s in SHOT_FROM.get(tab, []) if s in sample_names]
            # Take it from the most preferred sample that is present.
            if not present or present[0] == name:
                page.screenshot(os.path.join(shots['dir'], f'view-{tab}.png'))
                taken.add(tab)

    print(f'visit {name} {url}', flush=True)
    page.d.get(url)
    page.wait_for('the card list',
                  'return document.querySelectorAll("#card-select option").length > 0;')
    cards = page.js('return window.kscopeView.app.cards;')
    run.ok(name, f'{len(cards)} card(s): '
                 + '; '.join(f'{c["cardId"]} [{",".join(c["kinds"])}]' for c in cards))
    for card in cards:
        Select(page.one('#card-select')).select_by_value(card['cardId'])
        tabs = page.js('return [...document.querySelectorAll("[role=tab][aria-disabled=false]")]'
                       '.map((t) => t.dataset.view);')
        for tab in tabs:
            where = f'{name}/{card["cardId"]}/{tab}'
            print(f'visit {where}', flush=True)
            page.click(f'#tab-{tab}')
            try:
                if tab == 'timeline':
                    page.wait_for('the whole timeline',
                                  'const h = window.kscopeView && window.kscopeView.timeline;'
                                  'return h && h.visibleSlices().length > 0 && !h.pending();')
                    rendered.check_timeline_depths(run, page, where, card)
                    check_timeline(run, page, where, 'timeline', '#panel-timeline')
                    rendered.check_slice_details(run, page, where)
                elif tab == 'source':
                    check_source(run, page, where)
                    rendered.check_source_rendered(run, page, where, card)
                elif tab == 'details':
                    check_details(run, page, where)
                    rendered.check_details(run, page, where, card)
                elif tab == 'roofline':
                    check_roofline(run, page, where, card)
                    rendered.check_roofline_labels(run, page, where)
                elif tab == 'profile':
                    check_profile(run, page, where)
                    for clock in rendered.profile_clocks(page, card):
                        if clock:
                            rendered.show_profile_clock(page, clock)
                        rendered.check_profile_rendered(run, page, where, card, clock)
                elif tab == 'findings':
                    check_findings(run, page, where, card)
                elif tab == 'predict':
                    check_predict(run, page, where)
                    page.click('#tab-predict')
                    check_timeline(run, page, f'{where}/timeline', 'predictTimeline',
                                   '#panel-predict')
            except Exception as e:  # noqa: BLE001 -- a check that broke is a failure
                run.fail(where, (str(e).strip().split('\n') or [type(e).__name__])[0]
                         or type(e).__name__)
            safe = f'{name}-{re.sub(r"[^A-Za-z0-9_.-]+", "_", card["cardId"])}-{tab}'
            if tab == 'findings':
                page.click('#tab-findings')
            screenshot(safe, tab)
    # Keyboard: Right arrow on the selected tab moves to the next active one.
    if page.count('[role=tab][aria-disabled=false]') > 1:
        page.js('document.querySelector("[role=tab][aria-selected=true]").focus();')
        before = page.one('[role=tab][aria-selected=true]').get_attribute('id')
        page.press(Keys.ARROW_RIGHT)
        after = page.one('[role=tab][aria-selected=true]').get_attribute('id')
        if before == after:
            run.fail(name, 'the Right arrow key did not move to the next tab')
    if page.count('#error-bar:not([hidden])'):
        run.fail(name, f'the error bar shows: {page.text("#error-text")}')
    try:
        rendered.check_navigation(run, page, name, cards)
    except Exception as e:  # noqa: BLE001 -- a check that broke is a failure
        run.fail(name, (str(e).strip().split('\n') or [''])[0] or type(e).__name__)
    if page.count('#error-bar:not([hidden])'):
        run.fail(name, f'the error bar shows: {page.text("#error-text")}')


def main():
    ap = argparse.ArgumentParser(description="kscope view's page in headless Chromium")
    ap.add_argument('--kscope', default=os.environ.get('KSCOPE'))
    ap.add_argument('--samples', default=os.environ.get('KSCOPE_VIEW_SAMPLES'))
    ap.add_argument('--artifacts',
                    default=os.environ.get('KSCOPE_VIEW_ARTIFACTS', 'test-artifacts/view'))
    args = ap.parse_args()
    if not args.kscope or not args.samples:
        ap.error('--kscope KSCOPE and --samples DIR are needed')
    lacking = missing_tools()
    if lacking:
        for line in lacking:
            print(f'FAIL setup: {line}', flush=True)
        print('FAIL setup: run scripts/install-deps.sh, which installs them', flush=True)
        return 1

    only = os.environ.get('KSCOPE_VIEW_ONLY', '')   # a sample name, to debug one
    names = sorted(n for n in os.listdir(args.samples)
                   if os.path.isdir(os.path.join(args.samples, n)) and (not only or n == only))
    if not names:
        print(f'FAIL setup: no samples under {args.samples}', flush=True)
        return 1
    os.makedirs(args.artifacts, exist_ok=True)
    shots = {'dir': os.environ.get('KSCOPE_VIEW_SCREENSHOTS', ''), 'taken': set()}
    if shots['dir']:
        os.makedirs(shots['dir'], exist_ok=True)

    run = Run()
    try:
        driver = start_browser()
    except Exception as e:  # noqa: BLE001
        print(f'FAIL setup: Chromium did not start through {CHROMEDRIVER}: {e}', flush=True)
        return 1
    print(f'browser: {driver.capabilities.get("browserName")} '
          f'{driver.capabilities.get("browserVersion")} through {CHROMEDRIVER}', flush=True)
    page = Page(driver)
    try:
        for name in names:
            try:
                server = Server(args.kscope, os.path.join(args.samples, name))
            except RuntimeError as e:
                run.fail(name, str(e))
                continue
            browser_errors(driver)   # what an earlier page left is not this one's
            try:
                visit(run, page, name, server.url, names, args, shots)
            except Exception as e:  # noqa: BLE001
                run.fail(name, (str(e).strip().split('\n') or [''])[0] or type(e).__name__)
                try:
                    page.screenshot(os.path.join(args.artifacts, f'{name}-failure.png'))
                except Exception:  # noqa: BLE001
                    pass
            errors = browser_errors(driver)
            for e in errors:
                run.fail(name, e)
            if not errors:
                run.ok(name, 'no console or page errors')
            # Leave the page before its server goes.
            driver.get('about:blank')
            code = server.stop()
            if code != 0:
                run.fail(name, f'kscope view exited with {code} on SIGINT, not 0')
        if not only:
            with tempfile.TemporaryDirectory(prefix='ks-view-ctr-') as tmp:
                try:
                    check_counters(run, page, args.kscope, tmp, args.artifacts)
                except Exception as e:  # noqa: BLE001 -- a check that broke is a failure
                    run.fail('counters', (str(e).strip().split('\n') or [''])[0]
                             or type(e).__name__)
    finally:
        driver.quit()

    print(f'{run.checks} checks passed, {len(run.failures)} failed', flush=True)
    if shots['dir']:
        missing = [t for t in SHOT_FROM if t not in shots['taken']]
        if missing:
            print(f'no screenshot for: {", ".join(missing)}')
    return 1 if run.failures else 0


if __name__ == '__main__':
    sys.exit(main())
