// api.js: the page's one way to talk to kscope view's server.  Every
// request is a POST of {id, moduleName, type:"request", command, params}
// to /api; a response with result:false becomes an ApiError carrying the
// server's message, and the page shows it in the error bar.

let nextId = 1;

export class ApiError extends Error {
	constructor(command, message) {
		super(`${command}: ${message}`);
		this.command = command;
		this.serverMessage = message;
	}
}

// Listeners told about every failed request (the error bar).
const errorListeners = [];
export function onApiError(fn) {
	errorListeners.push(fn);
}

function reportError(err) {
	for (const fn of errorListeners)
		fn(err);
}

// Sends one request and resolves to its body.  With quiet set, a failure
// is only thrown, not reported (for probes whose failure is expected).
export async function request(moduleName, command, params = {}, { quiet = false } = {}) {
	const id = nextId++;
	let resp;
	try {
		const r = await fetch('api', {
			method: 'POST',
			headers: { 'Content-Type': 'application/json' },
			body: JSON.stringify({ id, moduleName, type: 'request', command, params }),
		});
		if (!r.ok)
			throw new ApiError(command, `the server answered HTTP ${r.status} ${r.statusText}`);
		resp = await r.json();
	} catch (e) {
		const err = e instanceof ApiError ? e
			: new ApiError(command, `the server could not be reached (${e.message})`);
		if (!quiet)
			reportError(err);
		throw err;
	}
	if (!resp || resp.result !== true) {
		const msg = resp && resp.body && typeof resp.body.message === 'string'
			? resp.body.message : 'the request failed without a message';
		const err = new ApiError(command, msg);
		if (!quiet)
			reportError(err);
		throw err;
	}
	return resp.body;
}
