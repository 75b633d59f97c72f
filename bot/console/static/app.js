// signoff console. Plain ES module, no build step. It never holds a key:
// votes are built as `signoff approve` builds them, checked against the
// pinned gateway key, signed by the person's NIP-07 extension and posted
// to /v1/nostr/events like any reaction.

// The noble libraries load when first needed (a vote, a check), not
// before the list is shown: parsing them is most of the page's start.
let noble = null;
async function crypto() {
  if (!noble) {
    const [c, h, u] = await Promise.all([
      import('./vendor/noble-curves/secp256k1.js'),
      import('./vendor/noble-hashes/sha2.js'),
      import('./vendor/noble-hashes/utils.js'),
    ]);
    noble = { schnorr: c.schnorr, sha256: h.sha256, bytesToHex: u.bytesToHex, hexToBytes: u.hexToBytes };
  }
  return noble;
}

const $ = (id) => document.getElementById(id);
const store = window.sessionStorage;
const enc = new TextEncoder();

// ---- access: the token and pin come in the fragment, live in session storage

function takeFragment() {
  if (!location.hash || location.hash.length < 2) return;
  const f = new URLSearchParams(location.hash.slice(1));
  for (const k of ['token', 'pin', 'admin']) {
    const v = f.get(k);
    if (v) store.setItem('signoff.' + k, v);
  }
  // Out of the address bar and the history: the link is not kept.
  history.replaceState(null, '', location.pathname + location.search);
}

const token = () => store.getItem('signoff.token') || '';
const adminToken = () => store.getItem('signoff.admin') || '';
const pinned = () => (store.getItem('signoff.pin') || '').toLowerCase();

async function api(path, opts = {}, bearer = token()) {
  const headers = Object.assign({}, opts.headers || {});
  if (bearer) headers.Authorization = 'Bearer ' + bearer;
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method: opts.method || 'GET', headers, cache: 'no-store', credentials: 'omit',
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  let body = null;
  try { body = await res.json(); } catch (_) { body = null; }
  if (!res.ok) {
    const err = new Error((body && body.error) || (res.status + ' ' + res.statusText));
    err.status = res.status;
    throw err;
  }
  return body;
}

// ---- escaping: what bot.Escape does for the terminal, as visible marks

// Characters that act on a display rather than being seen: controls,
// format characters (bidi overrides among them), line and paragraph
// separators, anything not graphic (private use, unassigned, surrogates).
const HIDDEN = /[^\p{L}\p{M}\p{N}\p{P}\p{S}\p{Zs}\n]/u;
const HIDDEN_G = /[^\p{L}\p{M}\p{N}\p{P}\p{S}\p{Zs}\n]/gu;

function escMark(c) {
  const n = c.codePointAt(0);
  if (c === '\t') return '\\t';
  if (n < 0x80) return '\\x' + n.toString(16).padStart(2, '0');
  return '\\u' + n.toString(16).padStart(4, '0');
}

// escText is the text as the CLI shows it (bot.EscapeLines when lines
// are kept, else bot.Escape).
export function escText(s, keepLines) {
  s = String(s ?? '');
  if (keepLines) s = s.replace(/\r\n/g, '\n');
  else s = s.replace(/\n/g, '\\n');
  s = s.replace(HIDDEN_G, escMark);
  if (keepLines) while (s.includes('\n\n\n')) s = s.replace(/\n\n\n/g, '\n\n');
  return s;
}

// putText appends s to el, every escaped character in a marked span so
// it is seen as an escape and not as text the agent wrote.
export function putText(el, s, keepLines) {
  s = String(s ?? '');
  // As bot.EscapeLines: never more than one blank line in a row, so text
  // cannot push what follows it off the screen.
  if (keepLines) s = s.replace(/\r\n/g, '\n').replace(/\n{3,}/g, '\n\n');
  let plain = '';
  const flush = () => { if (plain) { el.append(plain); plain = ''; } };
  for (const c of s) {
    if (c === '\n' && keepLines) { plain += c; continue; }
    if (c === '\n' || HIDDEN.test(c)) {
      flush();
      const m = document.createElement('span');
      m.className = 'esc';
      m.textContent = c === '\n' ? '\\n' : escMark(c);
      m.title = 'a hidden character, shown escaped';
      el.append(m);
      continue;
    }
    plain += c;
  }
  flush();
  return el;
}

function h(tag, cls, text) {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) putText(el, text, false);
  return el;
}

// ---- Nostr: the event id, the signature, the request's event

function serialize(ev) {
  // NIP-01: JSON.stringify escapes exactly as go-nostr's serializer does
  // (", \, \b \t \n \f \r short, other controls as \u00xx, the rest verbatim).
  return JSON.stringify([0, ev.pubkey, ev.created_at, ev.kind, ev.tags, ev.content]);
}

const isHex = (s, n) => typeof s === 'string' && s.length === n && /^[0-9a-f]+$/.test(s);

// verifyEvent checks an event's id and BIP-340 signature; throws why not.
export async function verifyEvent(ev) {
  const { schnorr, sha256, bytesToHex, hexToBytes } = await crypto();
  if (!ev || typeof ev !== 'object') throw new Error('no event');
  if (!isHex(ev.id, 64) || !isHex(ev.pubkey, 64) || !isHex(ev.sig, 128)) throw new Error('event id, pubkey or sig is not lowercase hex of the right length');
  if (!Number.isInteger(ev.kind) || !Number.isInteger(ev.created_at) || typeof ev.content !== 'string' || !Array.isArray(ev.tags)) throw new Error('event fields are malformed');
  const id = bytesToHex(sha256(enc.encode(serialize(ev))));
  if (id !== ev.id) throw new Error('event id does not match its content');
  let ok = false;
  try { ok = schnorr.verify(hexToBytes(ev.sig), hexToBytes(ev.id), hexToBytes(ev.pubkey)); } catch (_) { ok = false; }
  if (!ok) throw new Error('event signature does not verify');
  return ev;
}

const tagValue = (tags, name) => { for (const t of tags) if (t.length >= 2 && t[0] === name) return t[1]; return ''; };

async function actionDigest(kind, action) {
  const { sha256, bytesToHex } = await crypto();
  const k = enc.encode(kind || 'command');
  const a = enc.encode(action);
  const b = new Uint8Array(k.length + 1 + a.length);
  b.set(k, 0); b.set(a, k.length + 1);
  return bytesToHex(sha256(b));
}

// verifyRequestEvent is signing.VerifyRequestEvent: the request's event is
// signed by the pinned gateway key, is the one it names, for this request
// and this exact action. Nothing is signed unless it holds.
export async function verifyRequestEvent(r, pin) {
  if (!isHex(pin, 64)) throw new Error('no pinned gateway key: open the console with the link `signoff console` prints');
  if (!r.event) throw new Error(`request ${r.id} carries no signed event`);
  let ev;
  try { ev = await verifyEvent(r.event); } catch (e) { throw new Error(`request ${r.id}'s event: ${e.message}`); }
  if (ev.pubkey !== pin) throw new Error(`request ${r.id}'s event is signed by ${ev.pubkey.slice(0, 12)}…, not the pinned gateway key ${pin.slice(0, 12)}…`);
  if (ev.id !== r.event_id) throw new Error(`request ${r.id} names event ${r.event_id} but carries event ${ev.id}`);
  if (tagValue(ev.tags, 'signoff') !== r.id) throw new Error(`request ${r.id}'s event is for another request`);
  if (tagValue(ev.tags, 'digest') !== await actionDigest(r.kind, r.action)) throw new Error(`request ${r.id} shows an action that its signed event does not carry`);
  return ev;
}

const CONTENT = { approve: '✅', deny: '❌', always: '♾️' };

// unsignedReaction is signing.UnsignedReaction: kind 7, the choice as
// content, the reason tag first when given, then e, p and k.
export function unsignedReaction(ev, choice, reason, at) {
  const tags = [['e', ev.id], ['p', ev.pubkey], ['k', '1']];
  if (reason) tags.unshift(['reason', reason]);
  return { kind: 7, created_at: at, content: CONTENT[choice], tags };
}

function sameTags(a, b) {
  return Array.isArray(b) && a.length === b.length && a.every((t, i) => Array.isArray(b[i]) && t.length === b[i].length && t.every((v, j) => v === b[i][j]));
}

// signReaction checks r against the pin, then asks the extension; what it
// returns must be exactly what was asked, validly signed.
async function signReaction(r, choice, reason) {
  const ev = await verifyRequestEvent(r, pinned()); // throws: nothing is asked
  if (reason && enc.encode(reason).length > 1000) throw new Error('a reason is at most 1000 bytes');
  const signer = window.nostr;
  if (!signer || typeof signer.signEvent !== 'function') throw new Error('no Nostr signer extension (NIP-07) in this browser: votes are signed by your own key');
  const asked = unsignedReaction(ev, choice, reason, Math.floor(Date.now() / 1000));
  let pub = '';
  if (typeof signer.getPublicKey === 'function') pub = await signer.getPublicKey();
  const got = await signer.signEvent(Object.assign({}, asked, pub ? { pubkey: pub } : {}));
  try { await verifyEvent(got); } catch (e) { throw new Error('the signer returned a bad event: ' + e.message); }
  if ((pub && got.pubkey !== pub) || got.kind !== asked.kind || got.content !== asked.content || got.created_at !== asked.created_at || !sameTags(asked.tags, got.tags)) {
    throw new Error('the signer returned an event other than the one asked');
  }
  return { id: got.id, pubkey: got.pubkey, created_at: got.created_at, kind: got.kind, tags: got.tags, content: got.content, sig: got.sig };
}

// ---- state and rendering

const requests = new Map(); // id → request, as last heard
const cards = new Map(); // id → card element
let gatewayKey = '';

function say(msg, bad) {
  const m = $('message');
  m.textContent = '';
  putText(m, msg, false);
  m.className = 'message' + (bad ? ' error' : ' ok');
}

function left(deadline) {
  const ms = Date.parse(deadline) - Date.now();
  if (!(ms > 0)) return 'time is up';
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + 's left';
  const m = Math.floor(s / 60);
  if (m < 60) return m + 'm ' + (s % 60) + 's left';
  return Math.floor(m / 60) + 'h ' + (m % 60) + 'm left';
}

function ttlText(ns) {
  const h = Number(ns) / 3.6e12;
  return h >= 1 ? (Math.round(h * 10) / 10) + 'h' : Math.round(Number(ns) / 6e10) + 'm';
}

// grantText is bot.GrantScope.Text.
function grantText(s) {
  let what;
  if (s.exact) what = 'exactly `' + s.exact + '`';
  else if (s.program) what = '`' + s.program + (s.subcommand ? ' ' + s.subcommand : '') + ' …` (any arguments)';
  else if (s.target) what = s.tool + ' to ' + s.target;
  else what = 'any ' + s.tool + ' call';
  if (s.workspace) what += ' in ' + s.workspace;
  return what;
}

function voteLine(v) {
  const who = v.name || ((v.voter && v.voter.platform) + ':' + (v.voter && v.voter.id));
  const li = h('li', 'vote ' + v.result);
  li.append(h('b', '', who), ' ', h('span', '', v.vote + ' — ' + v.result + (v.why ? ' (' + v.why + ')' : '') + ', ' + v.proof));
  if (v.reason) li.append(h('div', 'vote-reason', 'said: ' + v.reason));
  return li;
}

function card(r) {
  const c = h('article', 'card req ' + (r.level || '') + ' ' + r.status);
  c.dataset.id = r.id;
  // Level and reasons first: what the classifier found before the agent's words.
  const top = h('div', 'risk');
  top.append(h('span', 'level ' + r.level, r.level || 'unclassified'));
  const reasons = h('ul', 'reasons');
  for (const x of r.reasons || []) reasons.append(h('li', '', x));
  top.append(reasons);
  c.append(top);
  const action = document.createElement('pre');
  action.className = 'action';
  putText(action, r.action, true);
  c.append(action);
  const meta = h('dl', 'meta');
  const row = (k, v, cls) => { meta.append(h('dt', '', k)); const d = h('dd', cls || '', v); meta.append(d); return d; };
  row('agent says', r.reason || '(no reason given)', 'agent-reason');
  row('persona', r.persona + ' · ' + r.kind + ' · ' + r.id);
  if (r.status === 'pending') {
    const e = r.electorate || {};
    row('may still answer', (e.needs || '') + ((e.undecided && e.undecided.length) ? ' — not yet: ' + e.undecided.join(', ') : ''), 'needs');
    const t = row('time left', left(r.deadline), 'left');
    t.dataset.deadline = r.deadline;
    if (r.grant_scope) row('Always would grant', grantText(r.grant_scope) + ', for ' + ttlText(r.grant_scope.ttl) + ' after approval', 'grant');
  } else {
    row('outcome', r.status + ((r.decided_by && r.decided_by.length) ? ' by ' + r.decided_by.join(', ') : '') + (r.decided_at ? ' at ' + new Date(r.decided_at).toLocaleString() : ''), 'outcome');
    if (r.decision_reason) row('why', r.decision_reason);
  }
  c.append(meta);
  const votes = h('ul', 'votes');
  for (const v of r.votes || []) votes.append(voteLine(v));
  if (!(r.votes || []).length) votes.append(h('li', 'none', 'no votes yet'));
  c.append(votes);
  if (r.status === 'pending') {
    const act = h('div', 'act');
    const reason = document.createElement('input');
    reason.className = 'vote-reason-input';
    reason.placeholder = 'reason (signed with your vote; needed to deny)';
    reason.maxLength = 1000;
    const b = (label, choice, cls) => {
      const btn = h('button', cls, label);
      btn.type = 'button';
      btn.dataset.choice = choice;
      btn.addEventListener('click', () => castVote(r.id, choice, reason.value.trim(), btn));
      return btn;
    };
    act.append(reason, b('Approve', 'approve', 'approve'), b('Deny', 'deny', 'deny'));
    if (r.grant_scope) act.append(b('Always (don’t ask again)', 'always', 'always'));
    c.append(act);
  } else {
    const more = h('button', 'link', 'whole history');
    more.type = 'button';
    more.addEventListener('click', () => { $('audit-id').value = r.id; show('audit'); loadHistory(r.id); });
    c.append(more);
  }
  return c;
}

async function castVote(id, choice, reason, btn) {
  const r = requests.get(id);
  if (!r) return;
  if (choice === 'deny' && !reason) { say('say why you deny it (the agent is told, so it can ask for something narrower)', true); return; }
  btn.disabled = true;
  try {
    const signed = await signReaction(r, choice, reason);
    const out = await api('/v1/nostr/events', { method: 'POST', body: signed }, '');
    say(`${out.result}${out.reason ? ': ' + out.reason : ''}; request ${out.request_id} is ${out.status}`, out.result !== 'counted');
  } catch (e) {
    say('nothing was sent: ' + e.message, true);
  } finally {
    btn.disabled = false;
  }
}

function place(r) {
  const old = cards.get(r.id);
  const c = card(r);
  cards.set(r.id, c);
  if (r.status === 'pending') {
    if (old && old.parentNode === $('pending-list')) old.replaceWith(c);
    else { if (old) old.remove(); $('pending-list').append(c); }
  } else {
    if (old) old.remove();
    $('history-list').prepend(c);
  }
}

function counts() {
  const n = $('pending-list').childElementCount;
  $('pending-count').textContent = String(n);
  $('pending-empty').hidden = n > 0;
  $('history-empty').hidden = $('history-list').childElementCount > 0;
  document.title = (n ? '(' + n + ') ' : '') + 'signoff console';
}

// snapshot starts the list with its first part (the server sends the
// oldest few first, so they are painted at once); more adds the rest.
function snapshot(s) {
  gatewayKey = s.gateway_pubkey || '';
  requests.clear(); cards.clear();
  $('pending-list').replaceChildren();
  $('history-list').replaceChildren();
  delete document.body.dataset.loaded;
  more(s);
  signerNote();
  // When the list was first painted (ms since navigation): the frame
  // after this one is drawn with it.
  requestAnimationFrame(() => setTimeout(() => { document.body.dataset.painted = String(performance.now()); }, 0));
}

function more(s) {
  const add = (list, rs) => {
    const f = document.createDocumentFragment();
    for (const r of rs) {
      if (requests.has(r.id)) continue; // an update told it meanwhile
      requests.set(r.id, r);
      const c = card(r);
      cards.set(r.id, c);
      f.append(c);
    }
    list.append(f);
  };
  add($('pending-list'), s.pending);
  add($('history-list'), s.history);
  counts();
  if (s.done) {
    document.body.dataset.loaded = String($('pending-list').childElementCount);
    document.body.dataset.complete = String(performance.now());
  }
}

function update(r) {
  const old = requests.get(r.id);
  // A decision stands: an older copy heard late never brings it back.
  if (old && old.status !== 'pending' && r.status === 'pending') return;
  if (old && old.status === 'pending' && r.status === 'pending' && (r.votes || []).length < (old.votes || []).length) return;
  requests.set(r.id, r);
  place(r);
  counts();
  document.body.dataset.heard = r.id + ':' + r.status + ':' + (r.votes || []).length;
  document.body.dataset.heardAt = String(Date.now());
}

function signerNote() {
  const n = $('signer-note');
  const pin = pinned();
  let msg = '';
  if (!isHex(pin, 64)) msg = 'No pinned gateway key in this session: voting is refused. Open the link `signoff console` prints.';
  else if (gatewayKey && gatewayKey !== pin) msg = 'WARNING: this gateway says its key is ' + gatewayKey + ', not the pinned ' + pin + '. Every vote is refused.';
  else if (!window.nostr) msg = 'No Nostr signer extension (NIP-07) found: you can read, but votes need your own key in an extension.';
  n.textContent = msg;
  n.hidden = !msg;
}

// ---- the live feed: server-sent events read with fetch (a bearer header)

let feedAbort = null;
let retry = 500;

async function follow() {
  if (feedAbort) feedAbort.abort();
  const ctl = new AbortController();
  feedAbort = ctl;
  const live = $('live');
  try {
    const res = await fetch('/v1/console/feed', {
      headers: { Authorization: 'Bearer ' + token(), Accept: 'text/event-stream' },
      cache: 'no-store', credentials: 'omit', signal: ctl.signal,
    });
    if (res.status === 401 || res.status === 403) {
      let msg = res.status + '';
      try { msg = (await res.json()).error; } catch (_) { /* keep the status */ }
      loginScreen('The gateway refused the token in this session: ' + msg);
      return;
    }
    if (!res.ok || !res.body) throw new Error('feed answered ' + res.status);
    live.textContent = 'live'; live.className = 'live on';
    retry = 500;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      let from = 0;
      while ((i = buf.indexOf('\n\n', from)) >= 0) {
        const block = buf.slice(from, i);
        from = i + 2;
        let event = 'message';
        let data = '';
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data += line.slice(6);
        }
        if (!data) continue;
        const v = JSON.parse(data);
        if (event === 'snapshot' || event === 'more') {
          if (event === 'snapshot') snapshot(v); else more(v);
          // Let this part be painted before the next is built.
          await new Promise((ok) => requestAnimationFrame(() => setTimeout(ok, 0)));
        }
        else if (event === 'request') update(v);
        else if (event === 'resync') { setTimeout(follow, 0); return; }
      }
      buf = buf.slice(from);
    }
  } catch (e) {
    if (ctl.signal.aborted) return;
  }
  if (feedAbort !== ctl) return;
  live.textContent = 'reconnecting'; live.className = 'live off';
  setTimeout(follow, retry);
  retry = Math.min(retry * 2, 10000);
}

// ---- network requests, revisions

async function loadNetwork() {
  if (!adminToken()) return;
  let l;
  try { l = await api('/v1/network/requests?all=true', {}, adminToken()); } catch (e) { say('network requests: ' + e.message, true); return; }
  const list = $('net-list');
  list.replaceChildren();
  if (!l.requests.length) list.append(h('p', 'empty', 'No network request.'));
  for (const it of l.requests) list.append(netCard(it));
  const d = $('net-drafts');
  d.replaceChildren();
  if (!l.drafts_by_host.length) d.append(h('li', 'empty', 'none'));
  for (const x of l.drafts_by_host) d.append(h('li', '', x.dest + ' ×' + x.count));
  try {
    const rv = await api('/v1/console/network/revisions', {}, adminToken());
    const box = $('net-revisions');
    box.replaceChildren();
    for (const r of rv.revisions) {
      const c = h('article', 'card rev');
      c.append(h('h3', '', 'revision ' + r.n + ' — ' + (r.why || '') + ' — by ' + ((r.by || []).join(', ') || 'nobody') + ' at ' + new Date(r.at).toLocaleString()));
      c.append(diffBlock(r.diff, '(no change)'));
      box.append(c);
    }
  } catch (e) { say('revisions: ' + e.message, true); }
}

function diffBlock(lines, none) {
  const pre = document.createElement('pre');
  pre.className = 'diff';
  if (!lines || !lines.length) { pre.textContent = none; return pre; }
  for (const line of lines) {
    const s = h('span', line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : 'ctx');
    putText(s, line, false);
    pre.append(s, '\n');
  }
  return pre;
}

function netCard(it) {
  const c = h('article', 'card net ' + it.status);
  c.dataset.id = it.id;
  c.append(h('h3', '', it.opens || (it.dest.host + ':' + it.dest.port)));
  const meta = h('dl', 'meta');
  const row = (k, v) => { meta.append(h('dt', '', k), h('dd', '', v)); };
  row('agent says', it.reason || '(no reason given)');
  row('persona', it.persona + ' · ' + it.id);
  row('status', it.status + ((it.decided_by && it.decided_by.length) ? ' by ' + it.decided_by.join(', ') : '') + (it.deny_reason ? ' — ' + it.deny_reason : ''));
  if (it.outside) row('boundary', 'outside the network boundary: it can only be denied');
  c.append(meta);
  if (it.status === 'pending') {
    const act = h('div', 'act');
    const reason = document.createElement('input');
    reason.className = 'vote-reason-input';
    reason.placeholder = 'reason (needed to deny)';
    const btn = (label, cls, fn) => { const b = h('button', cls, label); b.type = 'button'; b.addEventListener('click', () => fn(b)); return b; };
    const panel = h('div', 'preview');
    if (!it.outside) {
      act.append(btn('Approve', 'approve', (b) => netApprove(it.id, false, b)));
      act.append(btn('Approve and save…', 'save', () => netPreview(it.id, panel)));
    }
    act.append(reason, btn('Deny', 'deny', (b) => netDeny(it.id, reason.value.trim(), b)));
    c.append(act, panel);
  }
  return c;
}

async function requestFor(id) {
  return api('/v1/requests/' + encodeURIComponent(id));
}

async function netPreview(id, panel) {
  panel.replaceChildren(h('p', '', 'checking…'));
  let p;
  try { p = await api('/v1/console/network/' + encodeURIComponent(id) + '/preview', {}, adminToken()); } catch (e) { panel.replaceChildren(h('p', 'error', e.message)); return; }
  panel.replaceChildren();
  if (p.change === 'already allowed') panel.append(h('p', '', 'revision ' + p.revision + ' already allows it: approving changes no door'));
  else {
    panel.append(h('p', '', 'revision ' + p.revision + ' would be revision ' + p.next_revision + ':'));
    panel.append(diffBlock(p.diff, '(no change)'));
    if (p.every_method) panel.append(h('p', 'note', 'no method or path was asked: every method on this host and port'));
  }
  if (p.file) {
    panel.append(h('p', '', p.file + ' would change:'));
    panel.append(diffBlock(p.file_diff, '(no change)'));
  }
  panel.append(h('p', 'check ' + (p.can_save ? 'ok' : 'error'), 'check of the edited file: ' + p.check));
  if (p.can_save) {
    const b = h('button', 'approve confirm-save', 'Approve and save to ' + p.file);
    b.type = 'button';
    b.addEventListener('click', () => netApprove(id, true, b));
    panel.append(b);
  }
  panel.append(h('p', 'note', 'Nothing has been approved or written yet.'));
}

async function netApprove(id, save, btn) {
  btn.disabled = true;
  try {
    const r = await requestFor(id);
    const signed = await signReaction(r, 'approve', '');
    const path = save ? '/v1/console/network/' + encodeURIComponent(id) + '/approve' : '/v1/network/requests/' + encodeURIComponent(id) + '/approve';
    const out = await api(path, { method: 'POST', body: save ? { event: signed, save: true } : { event: signed } }, adminToken());
    say((out.message || out.vote.result) + (save ? '; ' + out.saved : ''), out.vote.result !== 'counted');
    loadNetwork();
  } catch (e) {
    say('nothing was sent: ' + e.message, true);
  } finally { btn.disabled = false; }
}

async function netDeny(id, reason, btn) {
  if (!reason) { say('say why you deny it (the agent is told, so it can ask for something narrower)', true); return; }
  btn.disabled = true;
  try {
    const r = await requestFor(id);
    const signed = await signReaction(r, 'deny', reason);
    const out = await api('/v1/network/requests/' + encodeURIComponent(id) + '/deny', { method: 'POST', body: { event: signed, reason } }, adminToken());
    say(out.message || out.vote.result, out.vote.result !== 'counted');
    loadNetwork();
  } catch (e) {
    say('nothing was sent: ' + e.message, true);
  } finally { btn.disabled = false; }
}

// ---- grants and tokens

async function loadAccess() {
  if (!adminToken()) return;
  const gl = $('grant-list');
  try {
    const g = await api('/v1/grants', {}, adminToken());
    gl.replaceChildren();
    if (!g.grants.length) gl.append(h('p', 'empty', 'No live grant.'));
    for (const x of g.grants) {
      const c = h('article', 'card grant');
      c.dataset.id = x.id;
      c.append(h('h3', '', x.text || grantText(x.scope)));
      const meta = h('dl', 'meta');
      const row = (k, v) => meta.append(h('dt', '', k), h('dd', '', v));
      row('persona', x.persona + ' · grant ' + x.id);
      row('made by', (x.by || []).join(', ') + ' at ' + new Date(x.created).toLocaleString() + ' (request ' + x.request + ')');
      row('expires', new Date(x.expires).toLocaleString());
      row('used', String(x.uses));
      c.append(meta);
      const b = h('button', 'deny revoke', 'Revoke');
      b.type = 'button';
      b.addEventListener('click', async () => {
        b.disabled = true;
        try { await api('/v1/grants/' + encodeURIComponent(x.id), { method: 'DELETE' }, adminToken()); say('grant ' + x.id + ' revoked'); loadAccess(); } catch (e) { say(e.message, true); b.disabled = false; }
      });
      c.append(b);
      gl.append(c);
    }
  } catch (e) { say('grants: ' + e.message, true); }
  const tl = $('token-list');
  try {
    const t = await api('/v1/tokens', {}, adminToken());
    tl.replaceChildren();
    for (const x of t.tokens || []) {
      const c = h('article', 'card token');
      c.append(h('h3', '', x.name));
      const meta = h('dl', 'meta');
      const row = (k, v) => meta.append(h('dt', '', k), h('dd', '', v));
      row('scopes', (x.scopes || []).join(', '));
      if (x.personas && x.personas.length) row('personas', x.personas.join(', '));
      row('made', (x.created_by || x.by || '') + ' ' + (x.created ? new Date(x.created).toLocaleString() : ''));
      row('expires', x.expires ? new Date(x.expires).toLocaleString() : 'never');
      c.append(meta);
      const b = h('button', 'deny revoke', 'Revoke');
      b.type = 'button';
      b.addEventListener('click', async () => {
        b.disabled = true;
        try { await api('/v1/tokens/' + encodeURIComponent(x.name), { method: 'DELETE' }, adminToken()); say('token ' + x.name + ' revoked'); loadAccess(); } catch (e) { say(e.message, true); b.disabled = false; }
      });
      c.append(b);
      tl.append(c);
    }
  } catch (e) { say('tokens: ' + e.message, true); }
}

// ---- audit

async function loadAudit() {
  const box = $('audit-state');
  try {
    const s = await api('/v1/console/audit');
    box.replaceChildren();
    box.className = 'card ' + (s.verified ? 'verified' : 'broken');
    box.append(h('h3', '', s.verified ? 'verified: the chain is intact' : 'NOT verified'));
    const meta = h('dl', 'meta');
    const row = (k, v) => meta.append(h('dt', '', k), h('dd', '', v));
    row('records', String(s.records) + ' (last seq ' + s.last_seq + ')');
    row('head', s.head);
    row('checkpoints', s.checkpoints + ' signed by ' + s.signer + '; last at seq ' + s.checkpoint_seq + (s.uncovered ? ', ' + s.uncovered + ' record(s) after it hash-linked only' : ''));
    row('held to', s.witnesses.length ? s.witnesses.join('; ') : 'no published checkpoint or store head: a log cut short at a checkpoint would look whole');
    for (const p of s.problems) row('problem', p);
    row('checked', new Date(s.checked_at).toLocaleString());
    box.append(meta);
  } catch (e) { box.replaceChildren(h('p', 'error', 'audit: ' + e.message)); }
}

async function loadHistory(id) {
  const box = $('audit-history');
  box.replaceChildren(h('p', '', 'reading…'));
  try {
    const hst = await api('/v1/console/audit/' + encodeURIComponent(id));
    box.replaceChildren(card(hst.request));
    const ol = h('ol', 'records');
    for (const rec of hst.records) {
      const li = h('li', 'record ' + rec.type);
      li.append(h('b', '', rec.type), ' ', h('span', '', '#' + rec.seq + ' at ' + rec.time));
      const d = document.createElement('pre');
      d.className = 'json';
      putText(d, JSON.stringify(rec.data, null, 2), true);
      li.append(d);
      if (rec.evidence) {
        li.append(h('div', 'evidence-label', 'evidence (as received, signed):'));
        const e = document.createElement('pre');
        e.className = 'json evidence';
        putText(e, JSON.stringify(rec.evidence, null, 2), true);
        li.append(e);
      }
      ol.append(li);
    }
    if (!hst.records.length) ol.append(h('li', 'empty', 'no audit record of it (yet)'));
    box.append(ol);
  } catch (e) { box.replaceChildren(h('p', 'error', e.message)); }
}

// ---- tabs and start

function show(tab) {
  for (const b of document.querySelectorAll('#tabs button')) b.classList.toggle('on', b.dataset.tab === tab);
  for (const s of document.querySelectorAll('section.tab')) s.hidden = s.id !== tab;
  const admin = !!adminToken();
  for (const n of document.querySelectorAll('.need-admin')) n.hidden = admin;
  for (const n of document.querySelectorAll('.admin-only')) n.hidden = !admin;
  if (tab === 'network') loadNetwork();
  if (tab === 'access') loadAccess();
  if (tab === 'audit') loadAudit();
  document.body.dataset.tab = tab;
}

function loginScreen(err) {
  if (feedAbort) feedAbort.abort();
  for (const s of document.querySelectorAll('section.tab')) s.hidden = true;
  $('tabs').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = err || '';
  document.body.dataset.state = 'login';
}

function start() {
  takeFragment();
  if (!token()) { loginScreen(''); return; }
  $('tabs').hidden = false;
  for (const b of document.querySelectorAll('#tabs button')) b.addEventListener('click', () => show(b.dataset.tab));
  $('audit-refresh').addEventListener('click', loadAudit);
  $('audit-form').addEventListener('submit', (e) => { e.preventDefault(); const id = $('audit-id').value.trim(); if (id) loadHistory(id); });
  show('pending');
  document.body.dataset.state = 'console';
  setInterval(() => {
    for (const el of document.querySelectorAll('#pending-list dd.left')) el.textContent = left(el.dataset.deadline);
  }, 1000);
  // A page left for another lets its feed go (a page kept in the
  // back-forward cache would otherwise hold a connection open), and
  // follows again when it comes back.
  window.addEventListener('pagehide', () => { if (feedAbort) { feedAbort.abort(); feedAbort = null; } });
  window.addEventListener('pageshow', (e) => { if (e.persisted) follow(); });
  follow();
}

start();
