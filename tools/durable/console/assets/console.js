// The durable console: plain JS over the server's JSON API (/api/...). Every string that came from
// the database is put in the page as text (text nodes, never innerHTML), and there is no inline
// script or style anywhere: the Content-Security-Policy forbids both.
'use strict';

const STATUSES = ['running', 'completed', 'failed', 'cancelled', 'continued'];
const TOKEN_KEY = 'durable.console.token';
const CSRF = document.querySelector('meta[name="durable-csrf"]').content;
const READ_ONLY = document.querySelector('meta[name="durable-read-only"]').content === 'true';
const SVG = 'http://www.w3.org/2000/svg';

// ---- building the page ---------------------------------------------------------------------

// h('a', {href: '#/runs', class: 'x'}, 'text', child, ...): strings become text nodes.
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {  // lists of nodes nest (shown() in a list)
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

function pad(n) { return String(n).padStart(2, '0'); }

function formatTime(ms) {
  if (ms === null || ms === undefined) return '';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function formatDuration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3600000) return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
  return `${Math.floor(ms / 3600000)} h ${Math.round((ms % 3600000) / 60000)} min`;
}

function statusBadge(status) { return h('span', {class: `status ${status}`}, status); }

function blockedMarker(run) {
  return run.blocked ? h('span', {class: 'blocked', title: 'blocked by a non-determinism error'}, 'blocked') : null;
}

function runLink(runId, text) { return h('a', {href: `#/run/${encodeURIComponent(runId)}`, class: 'run-link'}, text); }

// ---- stored values ---------------------------------------------------------------------------

// With a payload codec (EngineOptions::codec) durable stores a JSON value as
// {"$encoded": {"key": K, "data": BASE64}} and a text as "$encoded:K:BASE64". A console whose
// engine has the codec gets them decoded; one without it gets them as stored. The key id, or null.
function encodedKey(value) {
  if (typeof value === 'string') {
    const m = /^\$encoded:([^:]*):/.exec(value);
    return m ? m[1] : null;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const keys = Object.keys(value);
  const e = value.$encoded;
  return keys.length === 1 && keys[0] === '$encoded' && e && typeof e.key === 'string' && typeof e.data === 'string'
    ? e.key : null;
}

const ENCODED_TIP = 'encoded by a payload codec; start the console with the services\' codec ' +
    '(durable --codec-plugin ...) to read it';

// The nodes showing a stored value: a text (asJson false) as itself, anything else as indented
// JSON. An encoded value, at any depth, shows as a marker naming its key, never as its data.
function shown(value, asJson = true, indent = '') {
  const key = encodedKey(value);
  if (key !== null) return [h('span', {class: 'encoded', title: ENCODED_TIP, 'data-key': key}, `encoded · key ${key}`)];
  if (!asJson) return [value ?? ''];
  if (value === null || typeof value !== 'object') return [JSON.stringify(value)];
  const list = Array.isArray(value);
  const entries = list ? value.map(v => [null, v]) : Object.entries(value);
  const [open, close] = list ? ['[', ']'] : ['{', '}'];
  if (!entries.length) return [open + close];
  const inner = `${indent}  `;
  const out = [open];
  entries.forEach(([name, v], i) => {
    out.push(`\n${inner}${name === null ? '' : `${JSON.stringify(name)}: `}`, ...shown(v, true, inner),
        i + 1 < entries.length ? ',' : '');
  });
  out.push(`\n${indent}${close}`);
  return out;
}

// A stored JSON value, pretty-printed, collapsible.
function jsonBlock(title, value, open) {
  return h('details', {class: 'json', open: open}, h('summary', {}, title), h('pre', {class: 'mono'}, shown(value)));
}

function showError(message) {
  const box = document.getElementById('error');
  box.textContent = message || '';
  box.hidden = !message;
}

function setPage(...children) {
  const main = document.getElementById('main');
  main.replaceChildren(...children.flat().filter(Boolean));
}

// ---- talking to the server -------------------------------------------------------------------

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

function authHeaders() {
  const t = token();
  return t ? {'Authorization': `Bearer ${t}`} : {};
}

async function answer(res) {
  let body;
  try {
    body = await res.json();
  } catch (e) {
    body = {error: `${res.status} ${res.statusText}`};
  }
  if (!res.ok) throw new Error(body.error || `${res.status} ${res.statusText}`);
  return body;
}

async function get(path, params) {
  const query = params ? `?${new URLSearchParams(params)}` : '';
  return answer(await fetch(`/api/${path}${query}`, {headers: authHeaders(), credentials: 'same-origin'}));
}

// Actions carry the token, the page's CSRF token and a JSON body (see docs/console.md).
async function post(verb, body) {
  const res = await fetch(`/api/actions/${verb}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: {...authHeaders(), 'Content-Type': 'application/json', 'X-Durable-CSRF': CSRF},
    body: JSON.stringify(body),
  });
  return answer(res);
}

// ---- routing: #/overview, #/runs?status=..., #/run/<run id>, #/schedules, #/queues, #/queue/<name> --

function route() {
  const hash = location.hash.replace(/^#/, '');
  const [path, query] = hash.split('?');
  const parts = path.split('/').filter(Boolean);
  return {page: parts[0] || 'runs', arg: parts[1] ? decodeURIComponent(parts[1]) : '', params: new URLSearchParams(query || '')};
}

async function render() {
  const {page, arg, params} = route();
  for (const a of document.querySelectorAll('header nav a')) {
    const parent = {run: 'runs', queue: 'queues'}[page];
    a.classList.toggle('active', a.dataset.page === page || a.dataset.page === parent);
  }
  showError('');
  const main = document.getElementById('main');
  main.dataset.loaded = '';
  try {
    if (page === 'overview') await renderOverview();
    else if (page === 'schedules') await renderSchedules();
    else if (page === 'queues') await renderQueues();  // queues.js
    else if (page === 'queue') await renderQueue(arg);
    else if (page === 'run') await renderRun(arg);
    else await renderRuns(params);
    main.dataset.loaded = page;
  } catch (e) {
    showError(e.message);
    main.dataset.loaded = 'error';
  }
}

// ---- runs --------------------------------------------------------------------------------------

function filterParams(params) {
  const out = {};
  for (const key of ['status', 'name', 'prefix', 'blocked']) if (params.get(key)) out[key] = params.get(key);
  return out;
}

function runsHash(params) {
  const query = new URLSearchParams(params).toString();
  return `#/runs${query ? `?${query}` : ''}`;
}

// A count the server stopped at (more than `cappedAt`) reads "10,000+".
function countText(n, cappedAt) {
  return cappedAt && n > cappedAt ? `${cappedAt.toLocaleString('en')}+` : String(n);
}

async function renderRuns(params) {
  const filter = filterParams(params);
  const query = {...filter, limit: 50};
  if (params.get('cursor')) query.cursor = params.get('cursor');
  const [page, counts] = await Promise.all([get('runs', query), get('counts', filter)]);

  const chips = h('div', {class: 'chips', id: 'counts'},
      STATUSES.map(s => h('a', {class: 'chip', href: runsHash({...filter, status: s}), 'data-status': s},
          statusBadge(s), h('b', {}, countText(counts.counts[s], counts.capped_at)))));

  const statusSelect = h('select', {id: 'f-status', name: 'status'}, h('option', {value: ''}, 'any status'),
      STATUSES.map(s => h('option', {value: s, selected: filter.status === s}, s)));
  const name = h('input', {id: 'f-name', name: 'name', placeholder: 'workflow name', value: filter.name || ''});
  const prefix = h('input', {id: 'f-prefix', name: 'prefix', placeholder: 'workflow id starts with', value: filter.prefix || ''});
  const blocked = h('input', {id: 'f-blocked', type: 'checkbox', checked: filter.blocked === '1'});
  const form = h('form', {class: 'filters', id: 'filters', onsubmit: (event) => {
    event.preventDefault();
    const next = {};
    if (statusSelect.value) next.status = statusSelect.value;
    if (name.value) next.name = name.value;
    if (prefix.value) next.prefix = prefix.value;
    if (blocked.checked) next.blocked = '1';
    location.hash = runsHash(next);
  }},
  h('label', {}, 'Status', statusSelect), h('label', {}, 'Name', name), h('label', {}, 'Id prefix', prefix),
  h('label', {}, 'Blocked only', blocked), h('button', {id: 'f-apply', type: 'submit', class: 'primary'}, 'Apply'),
  h('a', {href: '#/runs'}, 'clear'));

  const rows = page.runs.map(r => h('tr', {'data-run-id': r.run_id},
      h('td', {class: 'c-id mono'}, runLink(r.run_id, r.workflow_id)),
      h('td', {class: 'c-name'}, r.workflow_name),
      h('td', {class: 'c-status'}, statusBadge(r.status), blockedMarker(r)),
      h('td', {}, r.started_by, r.origin ? ` (${r.origin})` : ''),
      h('td', {}, formatTime(r.created_at)),
      h('td', {}, formatTime(r.ended_at)),
      h('td', {class: 'mono'}, r.app_version)));
  const table = h('table', {id: 'runs'},
      h('thead', {}, h('tr', {}, ['Workflow id', 'Name', 'Status', 'Started by', 'Created', 'Ended', 'App version']
          .map(t => h('th', {}, t)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', {colspan: 7, class: 'muted'}, 'No runs match.'))));

  const pager = h('div', {class: 'pager'},
      params.get('cursor') ? h('a', {href: runsHash(filter), id: 'first-page'}, '« first page') : null,
      page.next_cursor ? h('a', {href: runsHash({...filter, cursor: page.next_cursor}), id: 'next-page'}, 'next page »') : null);
  setPage(h('h1', {}, 'Runs'), chips, form, table, pager);
}

// ---- one run -------------------------------------------------------------------------------------

function fact(label, ...value) { return [h('dt', {}, label), h('dd', {}, ...value)]; }

async function renderRun(runId) {
  const [run, history] = await Promise.all([get('run', {id: runId}), get('history', {id: runId})]);
  const events = [...history.events];
  const attempts = [...history.attempts];

  const facts = h('dl', {class: 'facts'},
      fact('Run id', h('span', {class: 'mono', id: 'run-id'}, run.run_id)),
      fact('Workflow', run.workflow_name),
      fact('Status', h('span', {id: 'run-status'}, statusBadge(run.status)), blockedMarker(run),
          run.latest ? '' : h('span', {class: 'muted'}, ' (not the latest run of its id)')),
      fact('Started by', run.started_by, run.origin ? ` (${run.origin})` : ''),
      fact('App version', h('span', {class: 'mono'}, run.app_version || '—')),
      fact('Created', formatTime(run.created_at)),
      fact('Updated', formatTime(run.updated_at)),
      fact('Ended', run.ended_at ? formatTime(run.ended_at) : '—'),
      fact('Journal', `${run.journal_length} events, ${run.activities} activities, ${run.attempts} attempts ` +
          `(${run.failed_attempts} failed)`),
      run.parent_run_id ? fact('Parent', runLink(run.parent_run_id, run.parent_run_id)) : null,
      run.forked_from_run ? fact('Forked from', runLink(run.forked_from_run, run.forked_from_run),
          ` at step ${run.forked_from_step}`) : null,
      run.continued_from_run ? fact('Continued from', runLink(run.continued_from_run, run.continued_from_run)) : null,
      run.continued_as_run ? fact('Continued as', runLink(run.continued_as_run, run.continued_as_run)) : null);

  const blocked = run.blocked_by ? h('div', {class: 'panel run-blocked', id: 'blocked-by'},
      h('h2', {}, 'Blocked'),
      h('p', {}, `Since ${formatTime(run.blocked_at)}, by app version ${run.blocked_by.app_version || '(unversioned)'}, ` +
          `${run.blocked_by.times} time(s), at step ${run.blocked_by.step}: the journal holds ` +
          `${run.blocked_by.journaled}, the code asked for ${run.blocked_by.asked}.`),
      h('pre', {class: 'mono'}, shown(run.blocked_by.message, false))) : null;

  const outcome = run.error_type || run.error_message
    ? h('div', {class: 'panel run-error', id: 'run-error'}, h('h2', {}, 'Error'),
        h('pre', {class: 'mono'}, `${run.error_type}: `, shown(run.error_message, false)))
    : run.status === 'completed' ? h('div', {class: 'panel', id: 'run-result'}, jsonBlock('Result', run.result, true)) : null;

  const children = run.children.length ? h('div', {class: 'panel', id: 'children'}, h('h2', {}, 'Children'),
      h('ul', {}, run.children.map(c => h('li', {}, runLink(c.run_id, c.workflow_id), ' ', statusBadge(c.status)))),
      run.more_children ? h('p', {class: 'muted'}, 'Only the first 100 are shown.') : null) : null;

  const timeline = h('div', {class: 'panel', id: 'timeline'});
  const journal = h('div', {class: 'panel', id: 'journal'});
  const drawHistory = () => {
    drawTimeline(timeline, run, attempts, history.now);
    drawJournal(journal, events);
  };
  let nextSeq = history.next_seq;
  const more = h('button', {id: 'more-history', hidden: nextSeq === null, onclick: async () => {
    try {
      const page = await get('history', {id: runId, from_seq: nextSeq});
      events.push(...page.events);
      attempts.push(...page.attempts);
      nextSeq = page.next_seq;
      more.hidden = nextSeq === null;
      drawHistory();
    } catch (e) {
      showError(e.message);
    }
  }}, 'Load more history');
  drawHistory();

  setPage(h('h1', {id: 'run-title'}, run.workflow_id), h('div', {class: 'panel', id: 'run-facts'}, facts), blocked,
      actionsPanel(run), outcome, h('div', {class: 'panel', id: 'run-input'}, jsonBlock('Input', run.input, true)), children,
      timeline, journal, more);
}

// Every attempt of the run's activities as a bar from its start to its end (to now while running),
// on one time axis from the run's creation to its end, with each failure's error beside it.
function drawTimeline(panel, run, attempts, now) {
  const title = h('h2', {}, 'Activity attempts');
  if (!attempts.length) {
    panel.replaceChildren(title, h('p', {class: 'muted'}, 'No activity attempts.'));
    return;
  }
  const endOf = a => a.ended_at ?? now;
  let t0 = run.created_at;
  let t1 = run.ended_at ?? now;
  for (const a of attempts) {
    if (a.started_at !== null) t0 = Math.min(t0, a.started_at);
    t1 = Math.max(t1, endOf(a));
  }
  const span = Math.max(t1 - t0, 1);
  const rows = attempts.map(a => {
    const start = a.started_at ?? endOf(a);
    const x = ((start - t0) / span) * 1000;
    const width = Math.max(((endOf(a) - start) / span) * 1000, 3);
    const tip = `${a.activity} attempt ${a.attempt}: ${a.outcome}, ${formatTime(a.started_at)} → ` +
        `${a.ended_at ? formatTime(a.ended_at) : 'now'} (${formatDuration(endOf(a) - start)})`;
    return h('tr', {class: `attempt ${a.outcome}`, 'data-step': a.step, 'data-attempt': a.attempt},
        h('td', {class: 'mono'}, `step ${a.step} · ${a.activity} #${a.attempt}`),
        h('td', {class: 'bar-cell'}, svg('svg', {viewBox: '0 0 1000 14', preserveAspectRatio: 'none'},
            svg('rect', {class: `bar ${a.outcome}`, x: x.toFixed(1), y: 0, width: width.toFixed(1), height: 14},
                svg('title', {}, tip)))),
        h('td', {}, a.outcome, ' ', h('span', {class: 'muted'}, formatDuration(endOf(a) - start))),
        h('td', {class: 'attempt-error'}, a.error_type || a.error_message ? [`${a.error_type}: `, shown(a.error_message, false)] : null,
            a.retry_at ? h('span', {class: 'muted'}, ` (next attempt due ${formatTime(a.retry_at)})`) : null));
  });
  const axis = h('div', {class: 'axis'}, h('span', {}, formatTime(t0)), h('span', {}, formatDuration(t1 - t0)),
      h('span', {}, run.ended_at ? formatTime(t1) : 'now'));
  panel.replaceChildren(title, h('table', {class: 'timeline'},
      h('thead', {}, h('tr', {}, h('th', {}, 'Attempt'), h('th', {}, axis), h('th', {}, 'Outcome'), h('th', {}, 'Error'))),
      h('tbody', {}, rows)));
}

function drawJournal(panel, events) {
  panel.replaceChildren(h('h2', {}, `Journal (${events.length} events)`), h('table', {class: 'journal'},
      h('thead', {}, h('tr', {}, ['Seq', 'At', 'Event', 'Step', 'Name', 'Data'].map(t => h('th', {}, t)))),
      h('tbody', {}, events.map(e => h('tr', {class: `event ${e.kind}`},
          h('td', {}, e.seq), h('td', {}, formatTime(e.at)), h('td', {class: 'mono'}, e.kind),
          h('td', {}, e.step >= 0 ? e.step : ''), h('td', {class: 'mono'}, e.name),
          h('td', {}, e.data === null ? '' : jsonBlock('data', e.data, false)))))));
}

// Opens in `formSlot` a form asking for an action's reason (and the token, when this tab has none),
// with `fields` besides; `send(reason)` carries it out and returns a note for `message`, where a
// refusal goes too.
function reasonForm(label, danger, fields, send, formSlot, message) {
  message.replaceChildren();
  const reason = h('input', {id: 'act-reason', class: 'reason', required: true, placeholder: 'why (goes to the audit trail)'});
  const tokenInput = h('input', {id: 'act-token', type: 'password', placeholder: 'console token'});
  const form = h('form', {class: 'action', id: 'action-form', onsubmit: async (event) => {
    event.preventDefault();
    if (!reason.value.trim()) {
      message.replaceChildren(h('span', {class: 'error'}, 'A reason is required.'));
      return;
    }
    if (!token() && tokenInput.value) sessionStorage.setItem(TOKEN_KEY, tokenInput.value.trim());
    try {
      const note = await send(reason.value);
      formSlot.replaceChildren();
      message.replaceChildren(h('span', {class: 'ok'}, `${label} done.${note}`));
    } catch (e) {
      message.replaceChildren(h('span', {class: 'error', id: 'act-error'}, `${label} refused: ${e.message}`));
    }
  }},
  h('label', {}, `${label}: reason`, reason),
  fields,
  token() ? null : h('label', {}, 'Token', tokenInput),
  h('button', {type: 'submit', id: 'act-submit', class: danger ? 'danger' : 'primary'}, label),
  h('button', {type: 'button', onclick: () => formSlot.replaceChildren()}, 'Back'));
  formSlot.replaceChildren(form);
  reason.focus();
}

// Cancel, resume, fork and terminate: each asks for a reason, which goes to the audit trail.
function actionsPanel(run) {
  if (READ_ONLY) return h('div', {class: 'panel muted', id: 'actions'}, 'Read-only console: actions are off.');
  const message = h('div', {id: 'act-message'});
  const formSlot = h('div', {});
  const running = run.status === 'running';
  const open = (verb, label, danger) => () => {
    const step = h('input', {id: 'act-step', type: 'number', min: 0, value: 0});
    const newId = h('input', {id: 'act-workflow-id', placeholder: 'new workflow id (optional)'});
    const fields = verb === 'fork' ? [h('label', {}, 'From step', step), h('label', {}, 'Workflow id', newId)] : null;
    reasonForm(label, danger, fields, async (reason) => {
      const body = {run_id: run.run_id, reason};
      if (verb === 'fork') {
        body.from_step = Number(step.value);
        if (newId.value) body.workflow_id = newId.value;
      }
      const done = await post(verb, body);
      setTimeout(() => {
        if (done.run_id && done.run_id !== run.run_id) location.hash = `#/run/${encodeURIComponent(done.run_id)}`;
        else render();
      }, 800);
      return done.run_id ? ` New run: ${done.workflow_id}.` : done.changed ? '' : ' (the run had ended already)';
    }, formSlot, message);
  };
  return h('div', {class: 'panel', id: 'actions'},
      h('div', {class: 'actions'},
          running ? h('button', {id: 'act-cancel', onclick: open('cancel', 'Cancel')}, 'Cancel…') : null,
          running ? h('button', {id: 'act-terminate', onclick: open('terminate', 'Terminate', true)}, 'Terminate…') : null,
          run.status === 'failed' || run.blocked ? h('button', {id: 'act-resume', onclick: open('resume', 'Resume')}, 'Resume…') : null,
          h('button', {id: 'act-fork', onclick: open('fork', 'Fork')}, 'Fork…')),
      formSlot, message);
}

// ---- schedules ---------------------------------------------------------------------------------

async function renderSchedules() {
  const {schedules} = await get('schedules');
  const rows = schedules.map(s => h('tr', {},
      h('td', {class: 'mono'}, h('a', {href: runsHash({prefix: `${s.id}:`})}, s.id)),
      h('td', {}, s.workflow), h('td', {class: 'mono'}, s.cron), h('td', {}, s.time_zone),
      h('td', {}, s.paused ? '—' : formatTime(s.next_fire)), h('td', {}, s.paused ? 'paused' : ''),
      h('td', {}, s.fires_started), h('td', {}, s.fires_dropped)));
  setPage(h('h1', {}, 'Schedules'), h('table', {id: 'schedules'},
      h('thead', {}, h('tr', {}, ['Id', 'Workflow', 'Cron', 'Time zone', 'Next fire', 'Paused', 'Fires started',
        'Fires dropped'].map(t => h('th', {}, t)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', {colspan: 8, class: 'muted'}, 'No schedules.')))));
}

// ---- overview ----------------------------------------------------------------------------------

async function renderOverview() {
  const data = await get('overview');
  const cards = h('div', {class: 'cards', id: 'overview-counts'},
      STATUSES.map(s => h('a', {class: 'card', href: runsHash({status: s}), 'data-status': s},
          h('span', {class: 'n'}, data.counts[s]), h('span', {class: 'label'}, s))),
      h('a', {class: 'card', href: runsHash({blocked: '1'}), id: 'overview-blocked'},
          h('span', {class: 'n'}, data.blocked), h('span', {class: 'label'}, 'blocked')),
      h('a', {class: 'card', href: '#/schedules', id: 'overview-schedules'},
          h('span', {class: 'n'}, data.schedules), h('span', {class: 'label'}, 'schedules')),
      h('a', {class: 'card', href: '#/queues', id: 'overview-queues'},
          h('span', {class: 'n'}, data.queues), h('span', {class: 'label'}, 'named queues')));
  const oldest = data.oldest_running;
  const oldestLine = h('p', {id: 'overview-oldest'}, oldest
    ? ['Oldest running run: ', runLink(oldest.run_id, oldest.workflow_id), ` (${oldest.workflow_name}), created `,
      formatTime(oldest.created_at), `, running for ${formatDuration(Math.max(data.at - oldest.created_at, 0))}`]
    : h('span', {class: 'muted'}, 'No run is running.'));
  const seconds = x => `${x.toFixed(1)} s`;
  const activities = smallTable('overview-activity-queues', ['Activity', 'Ready', 'Delayed', 'Running', 'Oldest ready'],
      data.activity_queues.map(q => h('tr', {'data-activity': q.activity},
          h('td', {class: 'mono c-activity'}, q.activity), h('td', {}, q.ready), h('td', {}, q.delayed),
          h('td', {}, q.running), h('td', {}, q.ready ? seconds(q.oldest_ready_seconds) : '—'))));
  const workflows = smallTable('overview-workflow-queues', ['Workflow', 'Waiting', 'Oldest'],
      data.workflow_queues.map(q => h('tr', {'data-workflow': q.workflow},
          h('td', {class: 'mono c-workflow'}, q.workflow), h('td', {}, q.waiting),
          h('td', {}, seconds(q.oldest_waiting_seconds)))));
  const engines = smallTable('overview-engines',
      ['Engine', 'App version', 'Leased / slots', 'Saturation', 'Runners', 'Last seen'],
      data.engines.map(e => h('tr', {'data-owner': e.owner, 'data-alive': String(e.alive)},
          h('td', {class: 'mono c-owner'}, e.owner),
          h('td', {class: 'mono'}, e.app_version || '—'),
          h('td', {class: 'c-leased'}, h('span', {class: 'leased'}, e.activities_leased), ` / ${e.activity_capacity}`),
          h('td', {}, e.saturation === null ? '—' : `${Math.round(e.saturation * 100)}%`),
          h('td', {}, e.workflow_capacity),
          h('td', {}, e.seen_at === null ? h('span', {class: 'muted'}, 'leases only')
            : [`${formatDuration(Math.max(data.at - e.seen_at, 0))} ago`,
              e.alive ? null : h('span', {class: 'gone', title: 'it stopped renewing its row'}, 'gone')]))));
  setPage(h('h1', {}, 'Overview'), cards, h('h2', {}, 'Runs created per hour, last 24 hours'), hourlyChart(data.hours),
      h('div', {class: 'legend'}, STATUSES.map(s => h('span', {class: s}, s))), oldestLine,
      h('h2', {}, 'Activity queues'), activities, h('h2', {}, 'Workflows waiting for a replay'), workflows,
      h('h2', {}, 'Engines'), engines);
}

// A table of the overview's: a header row and `rows`, or one "none" row.
function smallTable(id, headings, rows) {
  return h('table', {id, class: 'small'},
      h('thead', {}, h('tr', {}, headings.map(t => h('th', {}, t)))),
      h('tbody', {}, rows.length ? rows : h('tr', {class: 'none'}, h('td', {colspan: headings.length, class: 'muted'}, 'none'))));
}

// Stacked bars, one per hour, in SVG (attributes, not styles: the CSP allows no inline style).
function hourlyChart(hours) {
  const width = 960;
  const height = 200;
  const top = 10;
  const bottom = 20;
  const left = 30;
  const slot = (width - left) / hours.length;
  const totals = hours.map(b => STATUSES.reduce((sum, s) => sum + b.counts[s], 0));
  const max = Math.max(1, ...totals);
  const scale = (height - top - bottom) / max;
  const chart = svg('svg', {class: 'chart', id: 'hourly', viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: 'none'},
      svg('line', {x1: left, y1: height - bottom, x2: width, y2: height - bottom}),
      svg('text', {x: 2, y: top + 8}, max), svg('text', {x: 2, y: height - bottom}, 0));
  hours.forEach((bucket, i) => {
    let y = height - bottom;
    const x = left + i * slot + 2;
    for (const s of STATUSES) {
      const n = bucket.counts[s];
      if (!n) continue;
      y -= n * scale;
      chart.append(svg('rect', {class: `seg ${s}`, x: x.toFixed(1), y: y.toFixed(1), width: (slot - 4).toFixed(1),
        height: (n * scale).toFixed(1)}, svg('title', {}, `${formatTime(bucket.from)}: ${n} ${s}`)));
    }
    if (i % 3 === 0) {
      const d = new Date(bucket.from);
      chart.append(svg('text', {x: x.toFixed(1), y: height - 6}, `${pad(d.getHours())}:00`));
    }
  });
  return chart;
}

// ---- start -----------------------------------------------------------------------------------

// `durable console` prints a URL ending in #token=...: keep the token for this tab only, and take
// it out of the address bar.
if (location.hash.startsWith('#token=')) {
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(location.hash.slice('#token='.length)));
  history.replaceState(null, '', `${location.pathname}#/runs`);
}
document.getElementById('mode').textContent =
    (READ_ONLY ? 'read-only' : token() ? 'actions enabled' : 'actions need the token') + ' · ' + location.host;
window.addEventListener('hashchange', render);
render();
