// app.js: the page's shell.  It imports the result (import/action), fills
// the card selector, and switches between the views; each card's kinds
// decide which tabs are active.  Views are created on first use and told
// when the selected card changes.

import { request, onApiError } from './api.js';
import { el, clear, emptyState } from './util.js';
import { TimelineView } from './timeline.js';
import { SourceView } from './source.js';
import { DetailsView } from './details.js';
import { RooflineView } from './roofline.js';
import { ProfileView } from './profile.js';
import { FindingsView } from './findings.js';
import { PredictView } from './predict.js';
import { CausalView } from './causal.js';

const VIEWS = [
	{ id: 'timeline', kind: 'timeline', make: (p, a) => new TimelineView(p, a), missing: 'timeline' },
	{ id: 'source', kind: 'source', make: (p, a) => new SourceView(p, a), missing: 'source hot-spot data or source files' },
	{ id: 'details', kind: 'details', make: (p, a) => new DetailsView(p, a), missing: 'basic info, compute workload or memory details' },
	{ id: 'roofline', kind: 'roofline', make: (p, a) => new RooflineView(p, a), missing: 'roofline', anyCard: true },
	{ id: 'profile', kind: 'profile', make: (p, a) => new ProfileView(p, a), missing: 'sampled profile' },
	{ id: 'findings', kind: 'findings', make: (p, a) => new FindingsView(p, a), missing: 'memory-analysis findings' },
	{ id: 'predict', kind: 'predict', make: (p, a) => new PredictView(p, a), missing: 'prediction' },
	{ id: 'causal', kind: 'causal', make: (p, a) => new CausalView(p, a), missing: 'causal profile' },
];

class App {
	constructor() {
		this.cards = [];
		this.imported = null;
		this.card = null;
		this.tab = null;
		this.views = new Map();
		this.select = document.getElementById('card-select');
		this.tabs = [...document.querySelectorAll('[role=tab]')];
		this.errorBar = document.getElementById('error-bar');
		this.errorText = document.getElementById('error-text');
		document.getElementById('error-close').addEventListener('click', () => this.hideError());
		onApiError((err) => this.showError(err.message));
		window.addEventListener('error', (ev) => this.showError(`page error: ${ev.message}`));
		this.select.addEventListener('change', () => this.selectCard(this.select.value));
		for (const t of this.tabs) {
			t.addEventListener('click', () => this.showTab(t.dataset.view, true));
			t.addEventListener('keydown', (ev) => this.tabKey(ev, t));
		}
		window.addEventListener('hashchange', () => this.followHash());
		window.kscopeView = { app: this };
	}

	showError(msg) {
		this.errorText.textContent = msg;
		this.errorBar.hidden = false;
	}

	hideError() {
		this.errorBar.hidden = true;
	}

	// Left/Right/Home/End move between the active tabs (WAI-ARIA tabs).
	tabKey(ev, tab) {
		const active = this.tabs.filter((t) => t.getAttribute('aria-disabled') !== 'true');
		let i = active.indexOf(tab);
		if (ev.key === 'ArrowRight')
			i = (i + 1) % active.length;
		else if (ev.key === 'ArrowLeft')
			i = (i - 1 + active.length) % active.length;
		else if (ev.key === 'Home')
			i = 0;
		else if (ev.key === 'End')
			i = active.length - 1;
		else
			return;
		ev.preventDefault();
		active[i].focus();
		this.showTab(active[i].dataset.view, true);
	}

	async start() {
		const start = document.getElementById('start-state');
		try {
			this.imported = await request('timeline', 'import/action', {});
		} catch (e) {
			clear(start).append(el('p', { text: 'The result could not be loaded.' }),
				el('p.hint', { text: e.serverMessage || e.message }));
			return;
		}
		this.cards = Array.isArray(this.imported.result) ? this.imported.result : [];
		if (!this.cards.length) {
			clear(start).append(el('p', { text: 'This result holds nothing kscope view can show.' }));
			return;
		}
		start.remove();
		for (const c of this.cards)
			this.select.append(el('option', { value: c.cardId, text: c.cardName || c.cardId }));
		this.followHash();
	}

	// Shows what the address's #tab=...&card=... names: on load, and
	// whenever the address changes (a link, the Back button, an edit).
	// A card or tab that is not here is said so in the error bar, and the
	// first card, or the card's first tab, is shown instead.
	followHash() {
		if (!this.cards.length)
			return;
		const want = new URLSearchParams(location.hash.slice(1));
		const wantCard = want.get('card'), wantTab = want.get('tab');
		const problems = [];
		let card = this.card || this.cards[0];
		if (wantCard !== null) {
			const found = this.cardById(wantCard);
			if (found)
				card = found;
			else
				problems.push(`there is no result "${wantCard}" here (the results are: ${this.cards.map((c) => c.cardId).join(', ')}); showing "${card.cardName || card.cardId}"`);
		}
		if (wantTab !== null && !VIEWS.some((v) => v.id === wantTab))
			problems.push(`there is no tab "${wantTab}" (the tabs are: ${VIEWS.map((v) => v.id).join(', ')})`);
		if (problems.length)
			this.showError(`The address asks for what this page cannot show: ${problems.join('; ')}.`);
		const tab = VIEWS.some((v) => v.id === wantTab) ? wantTab : null;
		if (card === this.card && (tab === null || tab === this.tab))
			return;
		this.select.value = card.cardId;
		if (card === this.card)
			this.showTab(tab, true);
		else
			this.selectCard(card.cardId, tab);
	}

	cardById(id) {
		return this.cards.find((c) => c.cardId === id) || null;
	}

	hasKind(card, kind) {
		return !!card && Array.isArray(card.kinds) && card.kinds.includes(kind);
	}

	viewActive(v, card) {
		if (v.anyCard)
			return this.cards.some((c) => this.hasKind(c, v.kind));
		return this.hasKind(card, v.kind);
	}

	selectCard(id, tab) {
		const card = this.cardById(id);
		if (!card)
			return;
		this.card = card;
		this.select.value = id;
		const info = document.getElementById('card-info');
		info.textContent = [card.command && `kscope ${card.command}`, card.cardPath].filter(Boolean).join(' · ');
		info.title = card.cardPath || '';
		for (const t of this.tabs) {
			const v = VIEWS.find((x) => x.id === t.dataset.view);
			const on = this.viewActive(v, card);
			t.setAttribute('aria-disabled', on ? 'false' : 'true');
			t.classList.toggle('inactive', !on);
			t.title = on ? '' : `This result has no ${v.missing}`;
		}
		let want = tab || this.tab;
		const wv = VIEWS.find((x) => x.id === want);
		if (!wv || !this.viewActive(wv, card)) {
			const first = VIEWS.find((x) => this.viewActive(x, card));
			want = first ? first.id : 'timeline';
		}
		this.showTab(want, false, true);
	}

	showTab(id, user = false, cardChanged = false) {
		const v = VIEWS.find((x) => x.id === id);
		if (!v)
			return;
		const changed = this.tab !== id;
		this.tab = id;
		for (const t of this.tabs) {
			const sel = t.dataset.view === id;
			t.setAttribute('aria-selected', sel ? 'true' : 'false');
			t.tabIndex = sel ? 0 : -1;
		}
		for (const x of VIEWS)
			document.getElementById(`panel-${x.id}`).hidden = x.id !== id;
		const panel = document.getElementById(`panel-${id}`);
		history.replaceState(null, '', `#tab=${id}&card=${encodeURIComponent(this.card.cardId)}`);
		if (!this.viewActive(v, this.card) && !(id === 'source' && this.pendingSource)) {
			const view = this.views.get(id);
			if (view && view.hide)
				view.hide();
			this.views.delete(id);
			clear(panel).append(emptyState(`This result has no ${v.missing}.`,
				user ? 'Choose another result above, or another tab.' : null));
			return;
		}
		let view = this.views.get(id);
		if (!view) {
			clear(panel);
			view = v.make(panel, this);
			this.views.set(id, view);
		}
		if (changed || cardChanged || !view.shownCard)
			view.show(this.card);
		view.shownCard = this.card;
		if (view.visible)
			view.visible();
	}

	// Opens the Source tab on a file (and a line) of a card.
	openSource(cardId, file, line) {
		if (cardId && (!this.card || this.card.cardId !== cardId))
			this.selectCard(cardId, 'source');
		this.pendingSource = { file, line };
		const tab = this.tabs.find((t) => t.dataset.view === 'source');
		tab.setAttribute('aria-disabled', 'false');
		tab.classList.remove('inactive');
		if (!this.views.get('source')) {
			const panel = document.getElementById('panel-source');
			clear(panel);
			this.views.set('source', new SourceView(panel, this));
		}
		this.showTab('source', true, true);
	}
}

const app = new App();
app.start();
