// The durable console's queues pages (#/queues, #/queue/<name>): the named queues with their
// limits, pause and counts, and one queue with its busiest keys, paused and resumed from there.
// Loaded just before console.js, whose helpers (h, get, post, fact, reasonForm, ...) these
// functions call once the page runs. Keys and pause reasons are user text: they go in as text
// nodes, never as HTML; a reason stored encoded by a payload codec the console lacks shows as its
// marker (shown()).
'use strict';

// A limit, or "none" when the queue has no limit of that kind.
function limitText(n) { return n === null || n === undefined ? 'none' : String(n); }

// A period in its largest whole unit, as `durable queues define` takes it ("1s", "5m").
function periodText(ms) {
  for (const [unit, size] of [['d', 86400000], ['h', 3600000], ['m', 60000], ['s', 1000]]) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

// A rate as `durable queues define --rate` takes it: COUNT/PERIOD.
function rateText(rate) { return rate ? `${rate.count}/${periodText(rate.period_ms)}` : 'none'; }

// Priority aging: how long queued work waits for each priority it rises.
function agingText(ms) { return ms ? `+1 priority a ${periodText(ms)} waited` : 'none'; }

function oldestText(queued, seconds) { return queued ? `${seconds.toFixed(1)} s` : '—'; }

function queueLink(name) { return h('a', {href: `#/queue/${encodeURIComponent(name)}`, class: 'queue-link'}, name); }

function pausedMarker(q) {
  return q.paused ? [h('span', {class: 'paused', title: `paused by ${q.paused_by}`}, 'yes'), ' ',
    h('span', {class: 'muted'}, shown(q.paused_reason, false))] : 'no';
}

function activitiesText(q) {
  return `${q.activities_running} running, ${q.activities_waiting} waiting`;
}

async function renderQueues() {
  const {queues, paused_types: pausedTypes} = await get('queues');
  const rows = queues.map(q => h('tr', {'data-queue': q.name},
      h('td', {class: 'c-name mono'}, queueLink(q.name)),
      h('td', {class: 'c-concurrency'}, limitText(q.concurrency)),
      h('td', {class: 'c-key-concurrency'}, limitText(q.key_concurrency)),
      h('td', {class: 'c-rate'}, rateText(q.rate)),
      h('td', {class: 'c-key-rate'}, rateText(q.key_rate)),
      h('td', {class: 'c-paused'}, pausedMarker(q)),
      h('td', {class: 'c-queued'}, q.queued),
      h('td', {class: 'c-running'}, q.running),
      h('td', {class: 'c-throttled'}, q.throttled),
      h('td', {class: 'c-oldest'}, oldestText(q.queued, q.oldest_queued_seconds)),
      h('td', {class: 'c-activities'}, activitiesText(q))));
  const headings = ['Queue', 'Concurrency', 'Per key', 'Rate', 'Key rate', 'Paused', 'Queued', 'Running',
    'Throttled', 'Oldest queued', 'Activities'];
  setPage(h('h1', {}, 'Queues'), h('table', {id: 'queues', class: 'numbers'},
      h('thead', {}, h('tr', {}, headings.map(t => h('th', {}, t)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', {colspan: headings.length, class: 'muted'},
          'No named queues. Runs started without StartOptions::queue are on the default queue, which has no limits.')))),
  h('p', {class: 'muted'}, 'Queued: waiting for admission. Running: admitted and not ended. Throttled: queued ' +
      'behind a concurrency limit (all queued runs when the queue is full, else those of keys at their limit). ' +
      'Activities: attempts of activities on the queue running, and tasks due that wait for a place; ' +
      'the limits count them apart from the runs.'),
  pausedTypes.length ? h('div', {class: 'panel', id: 'paused-types-panel'}, h('h2', {}, 'Paused types'),
      h('table', {id: 'paused-types'},
          h('thead', {}, h('tr', {}, ['Kind', 'Name', 'Since', 'By', 'Reason'].map(t => h('th', {}, t)))),
          h('tbody', {}, pausedTypes.map(t => h('tr', {'data-kind': t.kind, 'data-name': t.name},
              h('td', {}, t.kind), h('td', {class: 'mono'}, t.name), h('td', {}, formatTime(t.paused_at)),
              h('td', {}, t.paused_by), h('td', {}, shown(t.paused_reason, false))))))) : '');
}

// The keys' weights as text ("gold=3, silver=2"): keys are text, whatever bytes they hold.
function weightsText(weights) {
  const entries = Object.entries(weights || {});
  return entries.length ? entries.map(([key, weight]) => `${key}=${weight}`).join(', ') : 'none';
}

async function renderQueue(name) {
  const q = await get(`queues/${encodeURIComponent(name)}`);
  const facts = h('dl', {class: 'facts'},
      fact('Concurrency', limitText(q.concurrency), q.concurrency ? ' admitted runs at once, all engines together' : ''),
      fact('Per key', limitText(q.key_concurrency)),
      fact('Rate', rateText(q.rate)),
      fact('Key rate', rateText(q.key_rate)),
      fact('Key weights', h('span', {id: 'queue-key-weights'}, weightsText(q.key_weights))),
      fact('Priority aging', h('span', {id: 'queue-priority-aging'}, agingText(q.priority_aging_ms))),
      fact('Paused', h('span', {id: 'queue-paused'}, q.paused
        ? [`yes, since ${formatTime(q.paused_at)} by ${q.paused_by}: `, shown(q.paused_reason, false)] : 'no')),
      fact('Queued', h('span', {id: 'queue-queued'}, q.queued)),
      fact('Running', h('span', {id: 'queue-running'}, q.running)),
      fact('Throttled', h('span', {id: 'queue-throttled'}, q.throttled)),
      fact('Oldest queued', oldestText(q.queued, q.oldest_queued_seconds)),
      fact('Activities', h('span', {id: 'queue-activities'}, activitiesText(q))));
  const rows = q.keys.map(k => h('tr', {'data-key': k.key},
      h('td', {class: 'c-key mono'}, k.key === '' ? h('span', {class: 'muted'}, '(no key)') : k.key),
      h('td', {class: 'c-queued'}, k.queued),
      h('td', {class: 'c-running'}, k.running),
      h('td', {class: 'c-oldest'}, oldestText(k.queued, k.oldest_queued_seconds))));
  const keys = h('div', {class: 'panel', id: 'queue-keys-panel'},
      h('h2', {}, q.keys.length === 20 ? 'The 20 keys with the most queued runs' : 'Keys, the most queued first'),
      h('table', {id: 'queue-keys', class: 'numbers'},
          h('thead', {}, h('tr', {}, ['Key', 'Queued', 'Running', 'Oldest queued'].map(t => h('th', {}, t)))),
          h('tbody', {}, rows.length ? rows
            : h('tr', {}, h('td', {colspan: 4, class: 'muted'}, 'No runs queued or admitted.')))));
  setPage(h('h1', {id: 'queue-title'}, q.name), h('div', {class: 'panel', id: 'queue-facts'}, facts),
      queueActions(q), keys);
}

// Pause (a paused queue admits nothing; its admitted runs go on) or resume, with a reason for the audit trail.
function queueActions(q) {
  if (READ_ONLY) return h('div', {class: 'panel muted', id: 'actions'}, 'Read-only console: actions are off.');
  const message = h('div', {id: 'act-message'});
  const formSlot = h('div', {});
  const [verb, label] = q.paused ? ['resume-queue', 'Resume'] : ['pause-queue', 'Pause'];
  const open = () => reasonForm(label, false, null, async (reason) => {
    await post(verb, {queue: q.name, reason});
    setTimeout(render, 800);
    return '';
  }, formSlot, message);
  return h('div', {class: 'panel', id: 'actions'},
      h('div', {class: 'actions'}, h('button', {id: q.paused ? 'act-resume' : 'act-pause', onclick: open}, `${label}…`),
          h('span', {class: 'muted'}, q.paused ? 'Resuming it admits its queued runs again, at once.'
            : 'Pausing it admits nothing more; its admitted runs go on.')),
      formSlot, message);
}
