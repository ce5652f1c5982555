"""What kscope view's page renders, compared with the API's answer and with
the files the answer comes from (view_test.py runs these on every sample).

Each check reads the page as a user sees it -- the text of table cells,
chart labels and their boxes on screen, the slices drawn on the timeline
-- and compares it with what the server answers (the Page.api helper) and
with the result's own files (Memory.csv, trace.json), read here.  They
never compare with fixed numbers: the samples are remade from real runs.
"""
import csv
import json
import math
import os
import re

NUMBER = re.compile(r'-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?')


def num(text):
    """The number a cell or label shows ("4,096" -> 4096.0), or None."""
    m = NUMBER.search(text or '')
    return float(m.group(0).replace(',', '')) if m else None


def close(shown, want, digits=3):
    """Whether a number shown with at most `digits` decimals is want."""
    return shown is not None and abs(shown - want) <= 0.5 * 10 ** -digits + 1e-9 * abs(want)


def table_cells(page, table):
    """[header texts], [[cell texts]] of a rendered table element."""
    return page.js(
        'const t = arguments[0];'
        'return [[...t.querySelectorAll("thead th")].map((e) => e.textContent),'
        ' [...t.querySelectorAll("tbody tr")].map((r) =>'
        '   [...r.querySelectorAll("td")].map((e) => e.textContent))];', table)


def same_file(a, b):
    return bool(a) and bool(b) and (a == b or a.endswith('/' + b) or b.endswith('/' + a))


# ---------------------------------------------------------------- details

# Memory.csv's columns under the names kscope op gives them in the 0x09
# block's header (op's memory table is Memory.csv, one row per buffer).
MEMORY_CSV = {'bytes': 'bytes', 'flags': 'flags', 'bytes read': 'bytes_read',
              'read basis': 'read_basis', 'bytes written': 'bytes_written',
              'write basis': 'write_basis', 'share of traffic (%)': 'traffic_share_pct',
              'bandwidth (GB/s)': 'bandwidth_gbps'}


def check_details(run, page, where, card):
    """Every memory-table cell is the API's value, and (kscope op) the
    value of Memory.csv; no value cell of a row with values is empty."""
    r = page.api('source', 'source/details/memoryTable',
                 {'cardId': card['cardId'], 'showAs': 'bandwidth'})
    if not r.get('result'):
        return
    tables = [t for b in r['body']['memoryTable'] for t in b.get('tableDetail') or []]
    # The memory tables: the last section of the Details tab.
    rendered = page.all('#panel-details > section.box:last-of-type table.data')
    if len(rendered) != len(tables):
        run.fail(where, f'{len(tables)} memory tables answered, {len(rendered)} rendered')
        return
    csv_path = os.path.join(card.get('cardPath') or '', 'Memory.csv')
    by_arg = {}
    if os.path.isfile(csv_path):
        with open(csv_path, newline='') as f:
            by_arg = {f'arg {row["arg"]} {row["name"]}': row for row in csv.DictReader(f)}
    checked = 0
    for t, elem in zip(tables, rendered):
        head, rows = table_cells(page, elem)
        names = t['headerName']
        nvals = max((len(x['value']) for x in t['row']), default=0)
        value_heads = names[1:] if len(names) == nvals + 1 else names
        if head[1:] != value_heads:
            run.fail(where, f'table {t["tableName"]}: headers {head[1:]}, the API names '
                            f'{value_heads}')
            continue
        for want, got in zip(t['row'], rows):
            if got[0] != want['name']:
                run.fail(where, f'row "{got[0]}" where the API has "{want["name"]}"')
                continue
            csv_row = by_arg.get(want['name'])
            for i, v in enumerate(want['value']):
                cell = got[i + 1]
                n = num(v) if NUMBER.fullmatch(v or '') else None
                if (n is not None and not close(num(cell), n)) or (n is None and cell != v):
                    run.fail(where, f'{want["name"]} / {head[i + 1]}: shows "{cell}", '
                                    f'the API says "{v}"')
                checked += 1
                col = MEMORY_CSV.get(head[i + 1])
                if csv_row is not None and col:
                    fv = csv_row[col]
                    if (num(fv) is not None and NUMBER.fullmatch(fv) and
                            not close(num(cell), num(fv))) or \
                            (not NUMBER.fullmatch(fv) and cell != fv):
                        run.fail(where, f'{want["name"]} / {head[i + 1]}: shows "{cell}", '
                                        f'Memory.csv has "{fv}"')
                    checked += 1
            if csv_row is not None:
                by_arg.pop(want['name'])
    if by_arg:
        run.fail(where, f'Memory.csv rows not in the memory table: {", ".join(by_arg)}')
    if checked:
        run.ok(where, f'{checked} memory-table cells equal the API and Memory.csv')


# ---------------------------------------------------------------- timeline

def check_timeline_depths(run, page, where, card):
    """A sampled thread's depth-0 slices are its outermost frames (the
    profile tree's roots, their children at depth 1); a trace whose
    slices do not overlap on a thread (op --simulate's) is drawn on one
    row per thread, whatever their sub-nanosecond lengths."""
    drawn = page.js('return window.kscopeView.timeline.visibleSlices();')
    if any('depth' not in x for x in drawn):
        run.fail(where, 'the timeline does not say at which depth it draws its slices')
        return
    if 'profile' in card['kinds']:
        tree = page.api('profile', 'profile/tree', {'cardId': card['cardId'], 'minPct': 0})
        roots = tree['body']['roots']
        top = {x['function'] for x in roots}
        second = {c['function'] for x in roots for c in x.get('children') or []}
        single = [s for s in drawn if s['count'] == 1]
        bad0 = sorted({s['name'] for s in single if s['depth'] == 0} - top)
        bad1 = sorted({s['name'] for s in single if s['depth'] == 1} - second)
        if not any(s['depth'] == 0 for s in single):
            run.fail(where, 'no single slice drawn at depth 0')
        elif bad0 or bad1:
            run.fail(where, f'depth 0 shows {bad0}, depth 1 shows {bad1}: not the outermost '
                            f'frames of the profile (roots {sorted(top)})')
        else:
            run.ok(where, 'the depth-0 slices are the outermost frames of the call stacks')
    trace = os.path.join(card.get('cardPath') or '', 'trace.json')
    if card.get('command') == 'simulate' and os.path.isfile(trace):
        with open(trace) as f:
            doc = json.load(f)
        events = doc['traceEvents'] if isinstance(doc, dict) else doc
        per = {}
        for e in events:
            if e.get('ph') == 'X':
                per.setdefault((str(e['pid']), str(e['tid'])), []).append(
                    (e['ts'], e['ts'] + e.get('dur', 0)))
        nested = set()
        for k, spans in per.items():
            spans.sort()
            if any(b[0] < a[1] - 1e-9 for a, b in zip(spans, spans[1:])):
                nested.add(k)
        brief = sum(1 for spans in per.values() for a, b in spans if 0 < b - a < 0.001)
        threads = page.api('timeline', 'unit/threads', {'cardId': card['cardId']})['body']
        deep = [(p['pid'], t['tid'], t['maxDepth']) for p in threads['processes']
                for t in p['threads'] if t['maxDepth'] > 0 and (p['pid'], t['tid']) not in nested]
        deep_drawn = [s for s in drawn if s['depth'] > 0 and (s['pid'], s['tid']) not in nested]
        if deep or deep_drawn:
            run.fail(where, f'slices that do not overlap in trace.json nest: threads {deep}, '
                            f'{len(deep_drawn)} drawn below depth 0')
        else:
            run.ok(where, f'every thread one row deep ({brief} slices under 1 ns in trace.json)')


def check_slice_details(run, page, where):
    """A clicked slice's details never print "null", and a sampled frame
    with a file and line shows it as its code location."""
    # The arguments are the slice's own JSON, where null may be a value.
    text = page.js('const d = document.querySelector("#panel-timeline .tl-details");'
                   'if (!d) return "";'
                   'const c = d.cloneNode(true); c.querySelectorAll("pre.args").forEach((e) => e.remove());'
                   'return c.textContent;')
    if 'null' in text:
        run.fail(where, f'the slice details print "null": {text[:300]}')
    else:
        run.ok(where, 'the slice details print no "null"')


# ---------------------------------------------------------------- roofline

def check_roofline_labels(run, page, where):
    """Every ceiling of every chart the API answers has a label showing
    its value; no two labels overlap on screen; no number is printed with
    more digits than it has (the API's text included)."""
    r = page.api('roofline', 'roofline/charts', {})
    charts = []
    for c in r['body']['cards']:
        figs = page.js('const s = [...document.querySelectorAll("#panel-roofline section.box")]'
                       '.find((e) => e.dataset.card === arguments[0]);'
                       'return s ? [...s.querySelectorAll("figure.roofline")] : [];', c['cardId'])
        if len(figs) != len(c['charts']):
            run.fail(where, f'card {c["cardId"]}: {len(c["charts"])} charts answered, '
                            f'{len(figs)} drawn')
            return
        charts += list(zip(c['charts'], figs))
    for ch, fig in charts:
        labels = page.js(
            'return [...arguments[0].querySelectorAll(".ceiling-label, .roof-label, .point-label")]'
            '.map((e) => { const b = e.getBoundingClientRect();'
            ' return {cls: e.getAttribute("class"), text: e.textContent,'
            ' l: b.left, r: b.right, t: b.top, b: b.bottom}; });', fig)
        frame = page.js('const b = arguments[0].querySelector("svg.roofline-chart")'
                        '.getBoundingClientRect(); return {l: b.left, r: b.right, t: b.top,'
                        ' b: b.bottom};', fig)
        cut = [x['text'] for x in labels if x['l'] < frame['l'] - 0.5 or x['r'] > frame['r'] + 0.5
               or x['t'] < frame['t'] - 0.5 or x['b'] > frame['b'] + 0.5]
        if cut:
            run.fail(where, f'{ch.get("title")}: labels cut off at the chart\'s edge: {cut}')
        slope_texts = [x['text'] for x in labels if x['cls'] == 'ceiling-label']
        roof_texts = [x['text'] for x in labels if x['cls'] == 'roof-label']
        missing = []
        def shows(texts, v):
            return any(close(float(n.replace(',', '')), float(v))
                       for t in texts for n in NUMBER.findall(t))

        for rl in ch['rooflines']:
            if not shows(slope_texts, rl['bw']):
                missing.append(f'bandwidth {rl.get("bw_name")} {rl["bw"]}')
            if not shows(roof_texts, rl['computility']):
                missing.append(f'compute {rl.get("computility_name")} {rl["computility"]}')
        if missing:
            run.fail(where, f'{ch.get("title")}: no label shows {"; ".join(missing)} '
                            f'(labels: {slope_texts + roof_texts})')
        overlaps = [(a['text'], b['text']) for i, a in enumerate(labels) for b in labels[i + 1:]
                    if a['l'] < b['r'] and b['l'] < a['r'] and a['t'] < b['b'] and b['t'] < a['b']]
        if overlaps:
            run.fail(where, f'{ch.get("title")}: labels overlap: {overlaps[:4]}')
        long_numbers = [t for x in labels for t in NUMBER.findall(x['text'])
                        if len(re.sub(r'[^0-9]', '', t.split('e')[0]).lstrip('0')) > 10]
        if long_numbers:
            run.fail(where, f'numbers printed with too many digits: {long_numbers}')
        if not (missing or overlaps or long_numbers or cut):
            run.ok(where, f'{ch.get("title")}: {len(labels)} labels, each ceiling with its '
                          'value, none overlapping')
    raw = page.js('return fetch("api", {method: "POST", headers: {"Content-Type":'
                  ' "application/json"}, body: JSON.stringify({id: 1, moduleName: "roofline",'
                  ' type: "request", command: "roofline/charts", params: {}})})'
                  '.then((r) => r.text());')
    longest = [t for t in re.findall(r'(?<=[:\[,])-?\d+\.\d+(?:e[-+]?\d+)?', raw)
               if repr(float(t)) != t and len(t) > len(repr(float(t)))]
    if longest:
        run.fail(where, f'the API prints numbers longer than they are: {longest[:5]}')


# ---------------------------------------------------------------- source

def check_source_rendered(run, page, where, card):
    """The instruction table lists the instructions of the selected file
    (as many as the 0x04 block has there) and no other; hit rates show as
    the percentages of the API's fractions."""
    file = page.js('return document.querySelector("#panel-source select[aria-label=\'Source file\']").value;')
    core = page.js('const s = document.querySelector("#panel-source select[aria-label=Core]");'
                   'return s ? s.value : "";')
    body = page.api('source', 'source/api/instructions', {'cardId': card['cardId']})['body']
    insts = json.loads(body['instructions'])['Instructions']

    def loc_file(i):
        m = re.match(r'^(.*?):(\d+)(?::\d+)?$', str(i.get('Source Location') or ''))
        return m.group(1) if m else None

    want = [i for i in insts if same_file(loc_file(i), file)]
    head, rows = table_cells(page, page.one('#panel-source .inst-table'))
    if 'Source Location' not in head:
        run.fail(where, f'the instruction table has no Source Location column: {head}')
        return
    k = head.index('Source Location')
    others = [r[k] for r in rows if not same_file(r[k].rsplit(':', 1)[0], file)]
    if others or len(rows) != len(want):
        run.fail(where, f'{len(rows)} instructions listed for {file}, which has {len(want)} '
                        f'of {len(insts)}; from other files: {others[:3]}')
    else:
        run.ok(where, f'the {len(rows)} instructions listed are those of {file} '
                      f'({len(insts)} in all)')
    params = {'cardId': card['cardId'], 'sourceName': file}
    if core:
        params['coreName'] = core
    lines = page.api('source', 'source/api/line', params)['body']
    rate_cols = [c for c in lines['dtype'] if re.search(r'(rate|ratio)$', c, re.I)]
    chead = page.js('return [...document.querySelectorAll("#panel-source table.code thead th")]'
                    '.map((e) => e.textContent);')
    bad, seen = [], 0
    for c in rate_cols:
        if c not in chead:
            continue
        j = chead.index(c)
        for ln in lines['lines']:
            v = ln.get(c)
            if not isinstance(v, (int, float)):
                continue
            cell = page.js('const r = document.querySelector(`#panel-source table.code '
                           'tr[data-line="${arguments[0]}"]`);'
                           'return r ? r.children[arguments[1]].textContent : null;',
                           ln['Line'], j)
            seen += 1
            if not cell or not cell.endswith('%') or not close(num(cell), v * 100, 2):
                bad.append(f'line {ln["Line"]} {c}: "{cell}" for {v}')
    if bad:
        run.fail(where, f'hit rates not shown as percentages: {bad[:4]}')
    elif seen:
        run.ok(where, f'{seen} hit rates shown as percentages of the API\'s fractions')


# ---------------------------------------------------------------- profile

# What the Profile tab says it counts, per clock parameter.
CLOCK_WORDS = {'cpu': 'CPU-time samples', 'real': 'wall-clock samples'}


def profile_place(r):
    """A function's Function, Location and Module cells as the page
    writes them: words where the profile does not know."""
    loc = (f'{r["file"]}{":" + str(r["line"]) if r.get("line") else ""}'
           if r.get('file') else 'unknown')
    return r.get('function') or 'unknown', loc, r.get('module') or 'unknown'


def profile_clocks(page, card):
    """The clocks the Profile tab shows one at a time: ['cpu', 'real'] for
    a profile with samples of both timers, [None] for one."""
    t = page.api('profile', 'profile/threads', {'cardId': card['cardId']})['body']
    return ['cpu', 'real'] if t.get('by_clock') else [None]


def show_profile_clock(page, clock):
    """Picks clock in the Profile tab's clock selector and waits until
    the tables count that timer's samples."""
    page.js('const s = document.querySelector("#panel-profile select[aria-label=Clock]");'
            's.value = arguments[0]; s.dispatchEvent(new Event("change"));', clock)
    page.wait_for(f'the profile of the {CLOCK_WORDS[clock]}',
                  'const p = document.getElementById("panel-profile");'
                  'return !p.querySelector(".loading") && p.querySelector("table.data") &&'
                  ' [...p.querySelectorAll("section.box p.hint")].some((e) =>'
                  '  e.textContent.includes(arguments[0] + " counted"));', CLOCK_WORDS[clock])


def profile_table(page, title):
    """[header texts], [[cell texts]] of the table in the Profile tab's
    section headed title, or None when the section has no table."""
    box = page.js('return [...document.querySelectorAll("#panel-profile > section.box")]'
                  '.find((b) => { const h = b.querySelector("h3");'
                  ' return h && h.textContent === arguments[0]; }) || null;', title)
    table = page.one('table.data', box) if box is not None else None
    return table_cells(page, table) if table is not None else None


def match_rows(run, where, what, head, rows, want, cells_ok):
    """Each rendered row (by its Function, Location and Module) is one of
    the API's rows want and cells_ok(cells, api_row) holds; as many rows
    as the API has (or the table's 500), no cell empty."""
    fi, li, mi = head.index('Function'), head.index('Location'), head.index('Module')
    by_key = {}
    for r in want:
        by_key.setdefault(profile_place(r), []).append(r)
    full = [r for r in rows if len(r) == len(head)]
    bad = [f'"{r[fi]}"' for r in full if any(not c.strip() for c in r)]
    if bad:
        run.fail(where, f'{what}: rows with an empty cell: {", ".join(bad[:5])}')
    wrong = []
    for r in full:
        cands = by_key.get((r[fi], r[li], r[mi]), [])
        hit = next((c for c in cands if cells_ok(r, c)), None)
        if hit is None:
            wrong.append(f'{r} (the API: {cands[:1]})')
        else:
            cands.remove(hit)
    if len(full) != min(len(want), 500):
        run.fail(where, f'{what}: {len(full)} rows shown, the API has {len(want)}')
    elif wrong:
        run.fail(where, f'{what}: rows unlike the API\'s: {wrong[:3]}')
    elif not bad:
        run.ok(where, f'{what}: {len(full)} rows, each cell the API\'s value')


def check_profile_rendered(run, page, where, card, clock=None):
    """The Profile tab's Top functions and Counters by function show, cell
    by cell, what the API answers for the clock shown (clock None: the
    profile has one timer and no selector), no cell empty, a missing value
    in words; the clock selector is there exactly for a profile with both
    timers' samples.  Returns the rendered tables, {title: (head, rows)}."""
    params = {'cardId': card['cardId']}
    if clock:
        params['clock'] = clock
    sel = page.js('const l = document.querySelector("#panel-profile select[aria-label=Clock]");'
                  'return !!l && !l.closest("label").hidden;')
    if sel != (clock is not None):
        run.fail(where, f'the clock selector is {"shown" if sel else "hidden"} for a profile '
                        f'with {"both timers" if clock else "one timer"}')
    flat = page.api('profile', 'profile/flat', params)['body']
    tables = {}
    got = profile_table(page, 'Top functions')
    if got is None:
        run.fail(where, 'Top functions has no table')
        return tables
    head, rows = got
    tables['Top functions'] = got
    if head != ['Self %', 'Total %', 'Self', 'Total', 'Function', 'Location', 'Module']:
        run.fail(where, f'Top functions: headers {head}')
        return tables

    def flat_ok(r, f):
        return (all(r[i].endswith('%') and close(num(r[i]), f[k], 1 if f[k] >= 10 else 2)
                    for i, k in ((0, 'self_pct'), (1, 'total_pct'))) and
                num(r[2]) == f['self'] and num(r[3]) == f['total'])

    match_rows(run, where, f'Top functions{" (" + clock + ")" if clock else ""}', head, rows,
               flat['functions'], flat_ok)
    if flat.get('counters_recorded', 0) == 0:
        text = page.js('return [...document.querySelectorAll("#panel-profile > section.box")]'
                       '.map((b) => b.textContent).join(" ");')
        if 'This profile has no per-sample counters.' not in text:
            run.fail(where, 'a profile without counters does not say so')
        else:
            run.ok(where, 'a profile without counters says so in words')
        return tables
    cnt = page.api('profile', 'profile/counters', params)['body']
    got = profile_table(page, 'Counters by function')
    if got is None:
        run.fail(where, 'the profile has counters, and Counters by function has no table')
        return tables
    head, rows = got
    tables['Counters by function'] = got
    names = [c['name'] for c in cnt['counters']]
    supported = {c['name']: c['supported'] for c in cnt['counters']}
    if head != names + ['Self', 'Function', 'Location', 'Module']:
        run.fail(where, f'Counters by function: headers {head}, counters {names}')
        return tables

    def counters_ok(r, f):
        for i, n in enumerate(names):
            v = f['counters'].get(n)
            if not supported[n] or v is None:
                if r[i] != 'not supported':
                    return False
            elif num(r[i]) != v:
                return False
        return num(r[len(names)]) == f['self']

    match_rows(run, where, f'Counters by function{" (" + clock + ")" if clock else ""}',
               head, rows, cnt['functions'], counters_ok)
    return tables


# ---------------------------------------------------------------- navigation

def check_navigation(run, page, where, cards):
    """Changing #tab= (and #card=) on the loaded page switches to it; an
    unknown card is said so in the error bar, naming it."""
    card = cards[-1]
    tabs = [t for t in ('timeline', 'source', 'details', 'roofline', 'profile', 'findings',
                        'predict', 'causal') if t in card['kinds']]
    cur = page.js('return window.kscopeView.app.tab;')
    target = next((t for t in tabs if t != cur), None)
    if target is not None:
        page.js('location.hash = arguments[0];', f'tab={target}&card={card["cardId"]}')
        try:
            page.wait_for(f'tab {target} after a change of #tab=',
                          'const t = document.querySelector("[role=tab][aria-selected=true]");'
                          'return t && t.dataset.view === arguments[0] &&'
                          ' !document.getElementById("panel-" + arguments[0]).hidden;', target)
            run.ok(where, f'changing the address to #tab={target} shows that tab')
        except TimeoutError:
            run.fail(where, f'changing the address to #tab={target} did not show that tab')
    page.js('location.hash = "tab=timeline&card=no-such-card";')
    try:
        page.wait_for('the error bar',
                      'const b = document.getElementById("error-bar");'
                      'return !b.hidden && b.textContent.includes("no-such-card");')
        run.ok(where, 'an unknown card in the address is named in the error bar')
    except TimeoutError:
        run.fail(where, 'an unknown card in the address shows no message')
    if page.count('#error-bar:not([hidden])'):
        page.click('#error-close')
