// view_test.mjs: kscope view's page in headless Chromium, on every
// bundled sample result (tests/view/samples).  For each sample it starts
// `kscope view SAMPLE --port 0`, opens the page, and checks that every
// tab that applies renders real content: a timeline slice clicked shows
// its details, a source line clicked selects its instructions (and an
// instruction its line), the roofline has the card's point, the flame
// graph has frames, findings list their kinds, a prediction has its pipe
// table, pie and timeline; and that no console error or page error
// happened anywhere.  Screenshots go to the artifacts directory; with
// KSCOPE_VIEW_SCREENSHOTS=DIR also one per tab as DIR/view-<tab>.png.
//
// usage: node view_test.mjs --kscope KSCOPE --samples DIR --artifacts DIR
// Exits 1 when any check fails.

import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
	if (a.startsWith('--'))
		acc.push([a.slice(2), all[i + 1]]);
	return acc;
}, []));
const KSCOPE = args.kscope || process.env.KSCOPE;
const SAMPLES = args.samples || process.env.KSCOPE_VIEW_SAMPLES;
const ARTIFACTS = args.artifacts || process.env.KSCOPE_VIEW_ARTIFACTS || 'test-artifacts/view';
const SHOTS = process.env.KSCOPE_VIEW_SCREENSHOTS || '';
const ONLY = process.env.KSCOPE_VIEW_ONLY || '';   // a sample name, to debug one
const WAIT = 15000;

if (!KSCOPE || !SAMPLES) {
	console.error('usage: node view_test.mjs --kscope KSCOPE --samples DIR [--artifacts DIR]');
	process.exit(2);
}
mkdirSync(ARTIFACTS, { recursive: true });
if (SHOTS)
	mkdirSync(SHOTS, { recursive: true });

// Which sample makes each README screenshot, best first.
const SHOT_FROM = {
	timeline: ['simulate_matmul', 'predict_vadd', 'sample_demo'],
	source: ['simulate_matmul', 'op_vadd'],
	details: ['op_vadd', 'simulate_matmul'],
	roofline: ['simulate_matmul', 'op_vadd'],
	profile: ['sample_demo'],
	findings: ['falseshare', 'memcheck_uaf'],
	predict: ['predict_vadd'],
};
const shotTaken = new Set();

const failures = [];
let checks = 0;

function fail(where, msg) {
	failures.push(`${where}: ${msg}`);
	console.log(`FAIL ${where}: ${msg}`);
}

function pass(where, msg) {
	checks++;
	console.log(`ok   ${where}: ${msg}`);
}

// Starts kscope view on a sample; resolves to {proc, url} once it prints
// its URL.
function startServer(sample) {
	return new Promise((resolve, reject) => {
		const proc = spawn(KSCOPE, ['view', sample, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
		let stderr = '';
		proc.stderr.on('data', (d) => { stderr += d; });
		const timer = setTimeout(() => {
			proc.kill('SIGKILL');
			reject(new Error(`kscope view printed no URL in 30 s; stderr: ${stderr}`));
		}, 30000);
		const rl = createInterface({ input: proc.stdout });
		rl.once('line', (line) => {
			clearTimeout(timer);
			const m = /^kscope: view: (http:\/\/[^ ]+\/) \(Ctrl\+C stops\)$/.exec(line);
			if (!m) {
				proc.kill('SIGKILL');
				reject(new Error(`unexpected first line: ${line}`));
				return;
			}
			resolve({ proc, url: m[1] });
		});
		proc.on('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`kscope view exited with ${code} before printing its URL; stderr: ${stderr}`));
		});
	});
}

function stopServer(proc) {
	return new Promise((resolve) => {
		if (proc.exitCode !== null) {
			resolve(proc.exitCode);
			return;
		}
		const timer = setTimeout(() => proc.kill('SIGKILL'), 10000);
		proc.once('exit', (code, sig) => {
			clearTimeout(timer);
			resolve(code ?? sig);
		});
		proc.kill('SIGINT');
	});
}

async function api(page, moduleName, command, params) {
	return page.evaluate(async ([m, c, p]) => {
		const r = await fetch('api', { method: 'POST', headers: { 'Content-Type': 'application/json' },
			body: JSON.stringify({ id: 1, moduleName: m, type: 'request', command: c, params: p }) });
		return r.json();
	}, [moduleName, command, params]);
}

async function screenshot(page, name, tab) {
	await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });
	if (SHOTS && tab && !shotTaken.has(tab)) {
		const sample = name.split('-')[0];
		const pref = SHOT_FROM[tab] || [];
		// Take it from the most preferred sample that is present.
		const present = pref.filter((s) => sampleNames.includes(s));
		if (!present.length || present[0] === sample) {
			await page.screenshot({ path: path.join(SHOTS, `view-${tab}.png`) });
			shotTaken.add(tab);
		}
	}
}

// ---------------------------------------------------------------- checks

async function checkTimeline(page, where, hookName, panel) {
	// Functions, not strings: the page's Content-Security-Policy forbids eval.
	const slices = () => page.evaluate((h) => window.kscopeView[h].visibleSlices(), hookName);
	const idle = () => page.waitForFunction((h) => !window.kscopeView[h].pending(), hookName, { timeout: WAIT });
	await page.waitForFunction((h) => window.kscopeView[h] && window.kscopeView[h].visibleSlices().length > 0,
		hookName, { timeout: WAIT });
	// Zoom in until a single (unmerged) slice is wide enough to click.
	let slice = null;
	for (let i = 0; i < 20 && !slice; i++) {
		const all = await slices();
		slice = all.filter((s) => s.count === 1 && s.width >= 6).sort((a, b) => b.width - a.width)[0] || null;
		if (!slice) {
			// Zoom with the wheel around the widest item drawn.
			const target = all.sort((a, b) => b.width - a.width)[0];
			const win = await page.evaluate((h) => window.kscopeView[h].window(), hookName);
			await page.mouse.move(target.x, target.y);
			await page.mouse.wheel(0, -400);
			await page.waitForFunction(([h, w]) => {
				const x = window.kscopeView[h].window();
				return x.end - x.start < w;
			}, [hookName, win.end - win.start], { timeout: WAIT });
			await page.waitForTimeout(150);
			await idle();
		}
	}
	if (!slice) {
		fail(where, 'no single slice became wide enough to click after zooming in');
		return;
	}
	pass(where, `${(await slices()).length} items drawn`);
	// Click where the slice is once nothing more is on its way.
	await idle();
	const pos = await page.evaluate(([h, id]) => window.kscopeView[h].slicePosition(id), [hookName, slice.id]);
	if (!pos) {
		fail(where, `slice ${slice.id} "${slice.name}" is no longer drawn`);
		return;
	}
	await page.mouse.click(pos.x, pos.y);
	try {
		await page.waitForFunction(([sel, name]) => {
			const t = document.querySelector(sel);
			return t && t.textContent === name;
		}, [`${panel} .tl-details .slice-title`, slice.name], { timeout: WAIT });
		const facts = await page.textContent(`${panel} .tl-details dl.facts`);
		if (!/Duration/.test(facts) || !/Self time/.test(facts))
			fail(where, `the details panel lacks duration or self time: ${facts}`);
		else
			pass(where, `clicking slice "${slice.name}" shows its details`);
	} catch {
		const got = await page.textContent(`${panel} .tl-details`).catch(() => '');
		fail(where, `clicking slice "${slice.name}" did not show its details (panel: ${got.slice(0, 200)})`);
	}
}

async function checkSource(page, where) {
	await page.waitForSelector('#panel-source table.code tbody tr', { timeout: WAIT });
	const lines = await page.locator('#panel-source table.code tbody tr').count();
	pass(where, `${lines} source lines shown`);
	const hasInst = await page.locator('#panel-source .inst-table tbody tr').count();
	const dataRows = page.locator('#panel-source table.code tr.has-data');
	const n = await dataRows.count();
	if (!hasInst) {
		fail(where, 'no instruction table');
		return;
	}
	if (!n) {
		fail(where, 'no source line has per-line data');
		return;
	}
	// A line with data selects its instructions.
	let ok = false;
	for (let i = 0; i < Math.min(n, 8) && !ok; i++) {
		await dataRows.nth(i).click();
		ok = await page.locator('#panel-source .inst-table tr.sel').count() > 0;
		if (ok) {
			const line = await dataRows.nth(i).getAttribute('data-line');
			pass(where, `clicking line ${line} highlights ${await page.locator('#panel-source .inst-table tr.sel').count()} instructions`);
		}
	}
	if (!ok) {
		fail(where, 'clicking a line with data highlighted no instruction');
		return;
	}
	// And an instruction selects its line.
	await page.locator('#panel-source table.code tr.sel').evaluate((e) => e.classList.remove('sel'));
	await page.locator('#panel-source .inst-table tr.sel').first().click();
	try {
		await page.waitForSelector('#panel-source table.code tr.sel', { timeout: WAIT });
		pass(where, 'clicking an instruction selects its line');
	} catch {
		fail(where, 'clicking an instruction selected no line');
	}
	// Sorting by a header changes the order (or keeps it if already sorted).
	await page.locator('#panel-source .inst-table th').first().click();
	if (await page.locator('#panel-source .inst-table th[aria-sort]').count() !== 1)
		fail(where, 'clicking a column header did not sort the instruction table');
}

async function checkDetails(page, where) {
	await page.waitForFunction(() => !document.querySelector('#panel-details .loading') &&
		document.querySelectorAll('#panel-details section.box h3').length >= 4, null, { timeout: WAIT });
	const content = await page.locator('#panel-details svg.bars, #panel-details svg.memdiagram, #panel-details table.data, #panel-details dl.facts dd').count();
	if (!content)
		fail(where, 'no details content (no chart, diagram or table)');
	else
		pass(where, `${content} detail charts, diagrams and tables`);
	const paths = await page.locator('#panel-details svg.memdiagram path.mempath').count();
	if (await page.locator('#panel-details svg.memdiagram').count() && !paths)
		fail(where, 'the memory diagram has no paths');
}

async function checkRoofline(page, where, card) {
	await page.waitForSelector('#panel-roofline svg.roofline-chart', { timeout: WAIT });
	const pts = await page.locator(`#panel-roofline .roofline-point[data-card="${card.cardId}"]`).count();
	const ceilings = await page.locator('#panel-roofline .ceiling').count();
	if (card.kinds.includes('roofline') && !pts)
		fail(where, `no roofline point of card ${card.cardId}`);
	else if (!ceilings)
		fail(where, 'no roofline ceilings');
	else
		pass(where, `${pts} points of this card, ${ceilings} ceilings`);
	if (pts) {
		const p = page.locator(`#panel-roofline .roofline-point[data-card="${card.cardId}"]`).first();
		await p.hover({ force: true });
		const tip = await page.locator('.tooltip').textContent();
		if (!/intensity/.test(tip || ''))
			fail(where, `hovering a point shows no values (${tip})`);
	}
}

async function checkProfile(page, where) {
	await page.waitForFunction(() => !document.querySelector('#panel-profile .loading') &&
		document.querySelectorAll('#panel-profile section.box h3').length >= 2, null, { timeout: WAIT });
	const frames = await page.locator('#panel-profile svg.flame .flame-frame').count();
	const rows = await page.locator('#panel-profile table.data tbody tr').count();
	if (frames < 2)
		fail(where, `the flame graph has ${frames} frames`);
	else
		pass(where, `flame graph with ${frames} frames, ${rows} functions`);
	if (!rows)
		fail(where, 'no top functions');
	if (frames >= 2) {
		// Zoom into the deepest frame's parent: the ancestors turn dim.
		await page.locator('#panel-profile svg.flame .flame-frame').nth(1).click();
		if (!await page.locator('#panel-profile svg.flame .flame-frame.dim').count())
			fail(where, 'clicking a frame did not zoom into it');
	}
	const threads = await page.locator('#panel-profile select[aria-label=Thread] option').count();
	if (threads < 2)
		fail(where, 'the thread selector lists no thread');
}

async function checkFindings(page, where, card) {
	await page.waitForFunction(() => !document.querySelector('#panel-findings .loading'), null, { timeout: WAIT });
	const r = await api(page, 'findings', 'findings/list', { cardId: card.cardId });
	const kinds = await page.locator('#panel-findings .finding-group .kind').allTextContents();
	const wantKinds = new Set((r.body.errors || []).map((e) => e.kind));
	if (r.body.analysis === 'falseshare' && r.body.false_sharing && r.body.false_sharing.lines > 0)
		wantKinds.add('false sharing');
	for (const k of wantKinds)
		if (!kinds.includes(k))
			fail(where, `kind "${k}" is not listed (listed: ${kinds.join(', ')})`);
	if (!kinds.length) {
		fail(where, 'no finding listed');
		return;
	}
	pass(where, `kinds listed: ${kinds.join(', ')}`);
	// A global object has no allocation stack: open findings in order
	// until one shows its stack (every report here has such findings).
	const all = page.locator('#panel-findings details.finding');
	let stacked = -1;
	for (let i = 0, n = Math.min(await all.count(), 40); i < n && stacked < 0; i++) {
		const f = all.nth(i);
		if (!await f.evaluate((d) => d.open))
			await f.locator('summary').click();
		if (await f.locator('ol.stack li').count())
			stacked = i;
	}
	if (stacked < 0)
		fail(where, 'no finding among the first 40 shows a stack');
	else
		pass(where, `finding ${stacked + 1} shows its stack`);
	// Open the first finding with a linked frame and follow the link.
	const withLink = page.locator('#panel-findings details.finding', { has: page.locator('a.src-link') }).first();
	if (await withLink.count()) {
		if (!await withLink.evaluate((d) => d.open))
			await withLink.locator('summary').click();
		const link = withLink.locator('a.src-link').first();
		await link.scrollIntoViewIfNeeded();
		const text = await link.textContent();
		await link.click();
		try {
			await page.waitForSelector('#panel-source table.code tr.sel', { timeout: WAIT });
			pass(where, `the frame link ${text} opens the Source tab at its line`);
		} catch {
			fail(where, `the frame link ${text} did not open its line in the Source tab`);
		}
	}
}

async function checkPredict(page, where) {
	await page.waitForSelector('#panel-predict svg.pie .pie-slice', { timeout: WAIT });
	const rows = await page.locator('#panel-predict table.data').first().locator('tbody tr').count();
	if (!rows)
		fail(where, 'the pipe table is empty');
	else
		pass(where, `${rows} pipes, ${await page.locator('#panel-predict .pie-slice').count()} pie slices`);
}

// ---------------------------------------------------------------- main

const sampleNames = readdirSync(SAMPLES).filter((n) => statSync(path.join(SAMPLES, n)).isDirectory())
	.filter((n) => !ONLY || n === ONLY).sort();
if (!sampleNames.length) {
	console.error(`no samples under ${SAMPLES}`);
	process.exit(1);
}

const browser = await chromium.launch({
	executablePath: '/usr/bin/chromium',
	args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
		'--disable-component-update', '--disable-sync'],
});

try {
	for (const name of sampleNames) {
		let server;
		try {
			server = await startServer(path.join(SAMPLES, name));
		} catch (e) {
			fail(name, e.message);
			continue;
		}
		const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
		const page = await context.newPage();
		const errors = [];
		page.on('console', (m) => {
			if (m.type() === 'error')
				errors.push(`console: ${m.text()}`);
		});
		page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
		try {
			await page.goto(server.url);
			await page.waitForSelector('#card-select option', { state: 'attached', timeout: WAIT });
			const cards = await page.evaluate(() => window.kscopeView.app.cards);
			pass(name, `${cards.length} card(s): ${cards.map((c) => `${c.cardId} [${c.kinds.join(',')}]`).join('; ')}`);
			for (const card of cards) {
				await page.selectOption('#card-select', card.cardId);
				const tabs = await page.locator('[role=tab][aria-disabled=false]').evaluateAll((ts) => ts.map((t) => t.dataset.view));
				for (const tab of tabs) {
					const where = `${name}/${card.cardId}/${tab}`;
					// Reach the tab by keyboard when it is the next one, else click.
					await page.click(`#tab-${tab}`);
					try {
						if (tab === 'timeline')
							await checkTimeline(page, where, 'timeline', '#panel-timeline');
						else if (tab === 'source')
							await checkSource(page, where);
						else if (tab === 'details')
							await checkDetails(page, where);
						else if (tab === 'roofline')
							await checkRoofline(page, where, card);
						else if (tab === 'profile')
							await checkProfile(page, where);
						else if (tab === 'findings')
							await checkFindings(page, where, card);
						else if (tab === 'predict') {
							await checkPredict(page, where);
							await page.click('#tab-predict');
							await checkTimeline(page, `${where}/timeline`, 'predictTimeline', '#panel-predict');
						}
					} catch (e) {
						fail(where, e.message.split('\n')[0]);
					}
					const safe = `${name}-${card.cardId.replace(/[^A-Za-z0-9_.-]+/g, '_')}-${tab}`;
					if (tab === 'findings')
						await page.click('#tab-findings');
					await screenshot(page, safe, tab);
				}
			}
			// Keyboard: Right arrow on the selected tab moves to the next active one.
			const active = await page.locator('[role=tab][aria-disabled=false]').count();
			if (active > 1) {
				await page.focus('[role=tab][aria-selected=true]');
				const before = await page.getAttribute('[role=tab][aria-selected=true]', 'id');
				await page.keyboard.press('ArrowRight');
				const after = await page.getAttribute('[role=tab][aria-selected=true]', 'id');
				if (before === after)
					fail(name, 'the Right arrow key did not move to the next tab');
			}
			const bar = await page.locator('#error-bar:not([hidden])').count();
			if (bar)
				fail(name, `the error bar shows: ${await page.textContent('#error-text')}`);
		} catch (e) {
			fail(name, e.message.split('\n')[0]);
			await page.screenshot({ path: path.join(ARTIFACTS, `${name}-failure.png`) }).catch(() => {});
		}
		for (const e of errors)
			fail(name, e);
		if (!errors.length)
			pass(name, 'no console or page errors');
		await context.close();
		const code = await stopServer(server.proc);
		if (code !== 0)
			fail(name, `kscope view exited with ${code} on SIGINT, not 0`);
	}
} finally {
	await browser.close();
}

console.log(`${checks} checks passed, ${failures.length} failed`);
if (SHOTS) {
	const missing = Object.keys(SHOT_FROM).filter((t) => !shotTaken.has(t));
	if (missing.length)
		console.log(`no screenshot for: ${missing.join(', ')}`);
}
process.exit(failures.length ? 1 : 0);
