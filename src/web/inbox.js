// The approval inbox: one page for the person Cortex acts for. It reads /inbox/api/state,
// refetches it whenever /inbox/api/events says something changed, and posts the person's
// approvals, rejections and trust changes with the session's CSRF token. No framework:
// the DOM is built with createElement and textContent (never innerHTML), so nothing the
// server sends is parsed as markup, and nothing here needs 'unsafe-inline' or eval.
'use strict';
(function () {
  const API = new URL('api/', document.currentScript.src); // /inbox/api/, wherever the page is
  const LEVELS = ['Off', 'Draft', 'Supervised', 'Autonomous'];
  const CONFIDENCE = {
    just_guessing: 'Just guessing', pretty_sure: 'Pretty sure', strong_pattern: 'Strong pattern',
  };
  const TRIAGE = {
    interrupt_now: 'Interrupt now', surface_at_transition: 'At the next transition',
    daily_digest: 'Daily digest', handle_silently: 'Recorded silently',
  };
  const CLASSES = {
    action_proposed: 'Message', triage: 'Triage', trust_transition: 'Trust change',
    rule_fired: 'Rule fired', digest: 'Digest',
  };
  const STATUS_TONE = {
    pending: 'wait', executed: 'good', delivered: 'good', success: 'good', recorded: 'plain',
    rejected: 'stop', expired: 'plain', refused: 'stop', failed: 'bad',
  };

  let state = null;           // the last /state answer
  let signedOut = false;
  const edits = new Map();    // decision_id -> the person's edited draft (kept across refreshes)
  const reasons = new Map();  // decision_id -> a reject reason typed but not sent
  const trustPicks = new Map(); // entity_id -> a level picked but not saved
  const resolved = new Set(); // decisions decided here that a stale state may still list
  const cards = new Map();    // decision_id -> {sig, el}
  const rendered = {};        // section -> signature of what it shows

  const $ = (id) => document.getElementById(id);

  // ------------------------------------------------------------------ DOM helpers

  function h(tag, props, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    return add(el, kids);
  }

  function add(el, kids) {
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false || k === '') continue;
      el.append(k instanceof Node ? k : String(k));
    }
    return el;
  }

  const hidden = (text) => h('span', { class: 'vh' }, text); // read aloud, not shown

  function chip(text, tone, label) {
    return h('span', { class: 'chip' + (tone ? ' chip-' + tone : '') },
      label ? hidden(label + ': ') : null, text);
  }

  function titleCase(s) {
    s = String(s || '').replace(/_/g, ' ');
    return s.charAt(0).toUpperCase() + s.slice(1);
  }

  const levelText = (n) => (n in LEVELS ? `${n} · ${LEVELS[n]}` : String(n));
  const confidenceText = (c) => CONFIDENCE[c] || titleCase(c);
  const personName = (p) => (p && p.name) || '';

  // ------------------------------------------------------------------ time

  function parseTime(iso) {
    const d = new Date(iso);
    return iso && !Number.isNaN(d.getTime()) ? d : null;
  }

  function dayKey(d) {
    return `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}`;
  }

  // "today 14:00", "tomorrow 09:00", "yesterday 17:30" or "Tue 9 Jun 14:00", in the
  // browser's time zone, relative to the server's "now" (as_of), not the browser's.
  function fmtTime(iso) {
    const d = parseTime(iso);
    if (!d) return iso ? String(iso) : '';
    const ref = parseTime(state && state.as_of) || new Date();
    const clock = d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
    const shift = (n) => dayKey(new Date(ref.getFullYear(), ref.getMonth(), ref.getDate() + n));
    const key = dayKey(d);
    if (key === shift(0)) return `today ${clock}`;
    if (key === shift(1)) return `tomorrow ${clock}`;
    if (key === shift(-1)) return `yesterday ${clock}`;
    const opts = { weekday: 'short', day: 'numeric', month: 'short' };
    if (d.getFullYear() !== ref.getFullYear()) opts.year = 'numeric';
    return `${d.toLocaleDateString(undefined, opts)} ${clock}`;
  }

  function when(iso) {
    return iso ? h('time', { datetime: iso, title: iso }, fmtTime(iso)) : null;
  }

  // ------------------------------------------------------------------ API

  class ApiError extends Error {
    constructor(code, message, status) {
      super(message);
      this.code = code;
      this.status = status;
    }
  }

  async function api(path, body) {
    const init = { credentials: 'same-origin', cache: 'no-store', headers: { Accept: 'application/json' } };
    if (body !== undefined) {
      init.method = 'POST';
      init.headers['Content-Type'] = 'application/json';
      init.headers['X-CSRF-Token'] = (state && state.csrf_token) || '';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(new URL(path, API), init);
    } catch (e) {
      throw new ApiError('network', 'Cortex did not answer. Check that `cortex serve` is running, then try again.');
    }
    let data = null;
    try {
      data = await res.json();
    } catch (e) {
      data = null;
    }
    if (res.status === 401) {
      showSignedOut();
      throw new ApiError('unauthorized', (data && data.message) || 'You are signed out.', 401);
    }
    if (!res.ok || !data || data.status === 'error') {
      const code = (data && data.error) || `http_${res.status}`;
      let msg = (data && data.message) || `Cortex answered ${res.status} ${res.statusText}`.trim() + '.';
      if (code === 'csrf') msg += ' The page’s security token is out of date; it has been renewed, so try again.';
      throw new ApiError(code, msg, res.status);
    }
    return data;
  }

  // One state request at a time; a change announced meanwhile triggers exactly one more.
  let inflight = null;
  let again = false;

  function refresh() {
    if (inflight) {
      again = true;
      return inflight;
    }
    inflight = (async () => {
      do {
        again = false;
        try {
          const next = await api('state');
          if (signedOut) return;
          state = next;
          render();
          banner('');
        } catch (e) {
          if (e.code !== 'unauthorized') banner(`The inbox could not be brought up to date: ${e.message}`);
        }
      } while (again && !signedOut);
    })().finally(() => { inflight = null; });
    return inflight;
  }

  // ------------------------------------------------------------------ live updates

  let events = null;
  let retry = null;

  function connect() {
    if (events || signedOut || !('EventSource' in window)) return;
    events = new EventSource(new URL('events', API));
    events.addEventListener('changed', () => refresh());
    // Whatever changed before the stream was open was never announced on it (at first
    // load, between the state fetch and now; after a break, while it was down): look again.
    events.addEventListener('open', () => {
      live(true);
      refresh();
    });
    events.addEventListener('error', () => {
      live(false);
      if (events && events.readyState === EventSource.CLOSED) {
        // The browser gave up (an error status, e.g. signed out): look, then try again.
        events = null;
        refresh().then(() => {
          if (!signedOut) retry = setTimeout(connect, 5000);
        });
      }
    });
  }

  function disconnect() {
    if (events) events.close();
    events = null;
    clearTimeout(retry);
  }

  function live(on) {
    const el = $('live');
    el.hidden = false;
    el.className = 'live ' + (on ? 'live-on' : 'live-off');
    el.textContent = on ? 'Live' : 'Reconnecting…';
    el.title = on ? 'Changes appear here as they happen' : 'Live updates are interrupted; retrying';
  }

  // ------------------------------------------------------------------ page-level messages

  function banner(text) {
    const el = $('banner');
    el.textContent = text;
    el.hidden = !text;
  }

  function announce(text) {
    const status = $('status');
    status.textContent = ''; // the same words twice are still announced twice
    window.setTimeout(() => {
      status.textContent = text;
      $('toast').classList.add('toast-shown');
      $('toast-close').hidden = false;
    }, 30);
  }

  function dismiss() {
    $('toast').classList.remove('toast-shown');
    $('toast-close').hidden = true;
    $('status').textContent = '';
  }

  function showSignedOut() {
    signedOut = true;
    disconnect();
    $('app').hidden = true;
    $('loading').hidden = true;
    $('signout').hidden = true;
    $('live').hidden = true;
    $('signedout').hidden = false;
    banner('');
    dismiss();
    document.title = 'Signed out · Cortex';
    if (state && state.workspace) {
      const cmd = $('signedout').querySelector('code');
      cmd.textContent = `cortex inbox link --workspace ${state.workspace}`;
    }
  }

  // ------------------------------------------------------------------ rendering

  function render() {
    // Keep focus (and the caret in a textarea) on an element that a re-render replaces.
    const active = document.activeElement;
    const focusId = active && active.id;
    const caret = active && typeof active.selectionStart === 'number' && active.type !== 'select-one'
      ? [active.selectionStart, active.selectionEnd] : null;

    $('loading').hidden = true;
    $('app').hidden = false;
    $('signout').hidden = false;
    const ws = $('workspace');
    ws.textContent = '';
    if (state.workspace) add(ws, [h('span', { class: 'ws-label' }, 'Workspace '), h('strong', null, state.workspace)]);

    const pending = (state.pending || []).filter((p) => !resolved.has(p.decision_id));
    for (const id of resolved) {
      if (!(state.pending || []).some((p) => p.decision_id === id)) resolved.delete(id);
    }
    renderPending(pending);
    section('notifications', state.notifications, renderNotifications);
    section('decisions', state.decisions, renderDecisions);
    section('people', state.people, renderPeople);
    section('rules', state.rules, renderRules);
    section('apps', state.apps, renderApps);
    renderSummary(pending);

    if (focusId && document.activeElement !== active) {
      const again = document.getElementById(focusId);
      if (again && (!document.activeElement || document.activeElement === document.body)) {
        again.focus({ preventScroll: true });
        if (caret && typeof again.setSelectionRange === 'function') again.setSelectionRange(caret[0], caret[1]);
      }
    }
  }

  // The day of as_of: relative times ("today 14:00") change only when it does.
  function today() {
    const d = parseTime(state && state.as_of);
    return d ? dayKey(d) : '';
  }

  // Re-renders a section only when its data changed, so nothing the person is looking at
  // moves for nothing. Relative times depend on the day, so it is part of the signature.
  function section(name, data, fn) {
    const sig = JSON.stringify([data, today()]);
    if (rendered[name] === sig) return;
    rendered[name] = sig;
    fn(data);
  }

  function renderSummary(pending) {
    const n = state.notifications || {};
    const due = (n.due || []).length;
    const parts = [];
    parts.push(pending.length === 0 ? 'Nothing waits for your approval'
      : pending.length === 1 ? 'One draft waits for your approval'
        : `${pending.length} drafts wait for your approval`);
    parts.push(due === 0 ? 'no notification is due' : due === 1 ? 'one notification is due now'
      : `${due} notifications are due now`);
    const summary = $('summary');
    summary.textContent = '';
    add(summary, [parts.join('; ') + '.', state.as_of ? [' As of ', when(state.as_of), '.'] : null]);
    const count = $('pending-count');
    count.textContent = pending.length ? String(pending.length) : '';
    count.hidden = !pending.length;
    document.title = (pending.length ? `(${pending.length}) ` : '') + 'Inbox · Cortex';
  }

  // Pending cards are kept by decision id: a refresh does not rebuild a card whose data did
  // not change, so a person editing a draft keeps their text, caret and undo history.
  function renderPending(list) {
    const box = $('pending');
    const keep = new Set(list.map((p) => p.decision_id));
    for (const [id, card] of cards) {
      if (!keep.has(id)) {
        card.el.remove();
        cards.delete(id);
        edits.delete(id);
        reasons.delete(id);
      }
    }
    let prev = null;
    for (const p of list) {
      const sig = JSON.stringify([p, today()]);
      let card = cards.get(p.decision_id);
      if (!card || card.sig !== sig) {
        const el = pendingCard(p);
        if (card) card.el.replaceWith(el);
        card = { sig, el };
        cards.set(p.decision_id, card);
      }
      const want = prev ? prev.nextSibling : box.firstChild;
      if (card.el !== want) box.insertBefore(card.el, want);
      prev = card.el;
    }
    $('pending-empty').hidden = list.length > 0;
  }

  function pendingCard(p) {
    const id = p.decision_id;
    const who = personName(p.counterparty) || p.recipient;
    const level = Number(p.level);
    const draftId = 'draft-' + id;

    const text = h('textarea', { id: draftId, class: 'draft', rows: 5, spellcheck: 'true' });
    text.value = edits.has(id) ? edits.get(id) : (p.draft || '');
    const undo = h('button', { type: 'button', class: 'btn-link' }, 'Undo my edits');
    const editedNote = h('p', { class: 'edited', hidden: true }, 'Edited: your text will be sent. ', undo);
    const syncEdited = () => {
      const changed = text.value !== (p.draft || '');
      editedNote.hidden = !changed;
      if (changed) edits.set(id, text.value); else edits.delete(id);
    };
    const fit = () => { text.rows = Math.min(16, Math.max(4, rowsFor(text.value) + 1)); };
    text.addEventListener('input', () => { syncEdited(); fit(); });
    fit();
    undo.addEventListener('click', () => {
      text.value = p.draft || '';
      syncEdited();
      text.focus();
    });
    syncEdited();

    const reason = h('input', { id: 'reason-' + id, type: 'text', class: 'input', maxlength: 2000, autocomplete: 'off' });
    reason.value = reasons.get(id) || '';
    reason.addEventListener('input', () => reasons.set(id, reason.value));

    const error = h('p', { class: 'inline-error', role: 'alert' });
    const approve = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Approve', hidden(` draft to ${who}`));
    const reject = h('button', { type: 'button', class: 'btn' }, 'Reject', hidden(` draft to ${who}`));
    const buttons = [approve, reject];

    const card = h('article', { class: 'card' + (p.urgent ? ' card-urgent' : ''), 'data-decision-id': id, 'aria-labelledby': 'h-' + id });
    const decide = async (kind, body, verb) => {
      error.textContent = '';
      // A disabled button loses focus to nowhere: hold it on the card's heading meanwhile.
      const was = document.activeElement;
      const inCard = card.contains(was);
      if (inCard) card.querySelector('h3').focus();
      buttons.forEach((b) => { b.disabled = true; });
      card.setAttribute('aria-busy', 'true');
      try {
        const res = await api(kind, body);
        resolved.add(id);
        removeCard(id);
        announce(`${verb}: the draft to ${who}. ${res.message || ''}`.trim());
        refresh();
      } catch (e) {
        if (e.code === 'unauthorized') return;
        error.textContent = `Could not ${kind} this draft: ${e.message}`;
        buttons.forEach((b) => { b.disabled = false; });
        card.removeAttribute('aria-busy');
        if (inCard && card.contains(document.activeElement)) was.focus();
        if (e.code === 'not_pending' || e.status === 404 || e.status === 409) {
          // Decided elsewhere meanwhile: the card goes with the next state, the words stay.
          announce(`Could not ${kind} the draft to ${who}: ${e.message}`);
          refresh();
        } else if (e.code === 'csrf') {
          refresh();
        }
      }
    };

    const form = h('form', {
      class: 'card-form',
      onsubmit: (ev) => {
        ev.preventDefault();
        const changed = text.value !== (p.draft || '');
        if (!text.value.trim()) {
          error.textContent = 'The message is empty. Write what should be sent, or reject the draft.';
          text.focus();
          return;
        }
        const body = { decision_id: id };
        if (changed) body.message = text.value;
        decide('approve', body, changed ? 'Approved with your edits' : 'Approved');
      },
    });
    reject.addEventListener('click', () => {
      const body = { decision_id: id };
      if (reason.value.trim()) body.reason = reason.value.trim();
      decide('reject', body, 'Rejected');
    });

    const asked = p.message && p.message !== p.draft
      ? h('p', { class: 'asked' }, h('span', { class: 'label' }, 'The agent asked to say: '), p.message) : null;
    const timing = level === 2
      ? ['Sends by itself ', when(p.due_at), ' unless you reject it']
      : p.due_at ? ['Expires ', when(p.due_at), ' if not approved'] : null;

    add(form, [
      h('label', { for: draftId, class: 'label' }, 'Message to ', who, hidden(' (you can edit it before approving)')),
      text,
      editedNote,
      asked,
      why(p.why, p.created_at),
      h('div', { class: 'actions' },
        h('div', { class: 'approve-box' }, approve),
        h('div', { class: 'reject-box' },
          h('label', { for: 'reason-' + id, class: 'label label-small' }, 'Reason for rejecting', hidden(` the draft to ${who}`), ' (optional)'),
          h('div', { class: 'reject-row' }, reason, reject))),
      error,
    ]);

    return add(card, [
      h('header', { class: 'card-head' },
        h('h3', { id: 'h-' + id, tabindex: '-1' }, 'Draft to ', who),
        h('p', { class: 'recipient' }, p.recipient),
        h('p', { class: 'card-tags' },
          p.urgent ? chip('Urgent', 'bad') : null,
          chip(levelText(level), level >= 2 ? 'wait' : 'plain', 'Trust level'),
          timing ? h('span', { class: 'timing' }, timing) : null)),
      form,
    ]);
  }

  // Lines the text takes at about 70 characters a line (a hint; CSS field-sizing does better).
  function rowsFor(value) {
    return String(value).split('\n').reduce((n, line) => n + Math.max(1, Math.ceil(line.length / 70)), 0);
  }

  function why(w, createdAt) {
    if (!w) return null;
    // Newest evidence first; beyond three, behind a disclosure.
    const eps = (w.contributing_episodes || []).slice()
      .sort((a, b) => String(b.occurred_at || '').localeCompare(String(a.occurred_at || '')));
    const episode = (e) => h('li', null,
      h('span', null, e.summary || e.id), ' ', h('span', { class: 'muted' }, when(e.occurred_at)));
    return h('div', { class: 'why' },
      h('h4', { class: 'why-title' }, 'Why'),
      h('p', null, w.summary || 'No reason was recorded.'),
      // The trust behind its level, when the rule above is not already that sentence.
      w.level_reason && w.level_reason !== w.summary ? h('p', null, w.level_reason) : null,
      h('p', { class: 'muted' }, 'Confidence: ', confidenceText(w.confidence),
        createdAt ? [' · proposed ', when(createdAt)] : null),
      eps.length ? h('div', null,
        h('p', { class: 'label label-small' }, eps.length === 1 ? 'Evidence' : `Evidence (${eps.length})`),
        h('ul', { class: 'evidence' }, eps.slice(0, 3).map(episode)),
        eps.length > 3 ? h('details', { class: 'more' },
          h('summary', null, `${eps.length - 3} earlier`),
          h('ul', { class: 'evidence' }, eps.slice(3).map(episode))) : null) : null);
  }

  function removeCard(id) {
    const card = cards.get(id);
    if (!card) return;
    // Focus moves to the next draft, or to the section heading, never to nowhere.
    const next = card.el.nextElementSibling || card.el.previousElementSibling;
    const hadFocus = card.el.contains(document.activeElement);
    card.el.remove();
    cards.delete(id);
    edits.delete(id);
    reasons.delete(id);
    if (hadFocus) (next ? next.querySelector('h3') : $('pending-h')).focus();
    const left = cards.size;
    $('pending-empty').hidden = left > 0;
    $('pending-count').textContent = left ? String(left) : '';
    $('pending-count').hidden = !left;
  }

  function renderNotifications(n) {
    n = n || {};
    const box = $('notifications');
    box.textContent = '';
    const next = n.next_transition;
    const digest = n.digest;
    add(box, [
      group('notif-due', 'Due now', null, n.due, 'Nothing is due now.'),
      group('notif-next', 'At the next transition', next && next.at, next ? next.notifications : [],
        next ? 'Nothing waits for the next transition.' : 'No transition is coming up.'),
      group('notif-digest', 'In the digest', digest && digest.at, digest ? digest.notifications : [],
        'Nothing is in the next digest so far.'),
    ]);
  }

  function group(id, title, at, items, emptyText) {
    items = items || [];
    return h('div', { class: 'group', id },
      h('h3', { class: 'group-title' }, title, at ? [', ', when(at)] : null,
        items.length ? h('span', { class: 'count count-quiet' }, String(items.length)) : null),
      items.length ? h('ul', { class: 'rows' }, items.map((x) => notification(x, at))) : h('p', { class: 'empty' }, emptyText));
  }

  // In the transition and digest groups the group says when and how; an item repeats
  // neither unless it differs.
  function notification(x, groupAt) {
    const w = x.why || {};
    const cls = groupAt ? null : x.triage_class;
    return h('li', { class: 'row', 'data-notification-id': x.notification_id },
      h('p', { class: 'row-main' }, x.summary || x.episode_id),
      h('p', { class: 'row-meta' },
        x.counterparty ? h('span', null, personName(x.counterparty)) : null,
        cls ? chip(TRIAGE[cls] || titleCase(cls), cls === 'interrupt_now' ? 'bad' : 'plain') : null,
        x.surface_at && x.surface_at !== groupAt ? h('span', { class: 'muted' }, when(x.surface_at)) : null),
      w.rule_summary ? h('p', { class: 'row-why' }, hidden('Why: '), w.rule_summary,
        w.confidence ? h('span', { class: 'muted' }, ` · ${confidenceText(w.confidence)}`) : null) : null);
  }

  const DECISIONS_SHOWN = 10;
  let allDecisions = false;

  function renderDecisions(list) {
    list = list || [];
    const box = $('decisions');
    box.textContent = '';
    add(box, list.map((d, i) => h('li', { class: 'row', 'data-decision-id': d.decision_id, hidden: !allDecisions && i >= DECISIONS_SHOWN },
      h('p', { class: 'row-meta' },
        chip(titleCase(d.status), STATUS_TONE[d.status] || 'plain', 'Status'),
        h('span', { class: 'kind' }, CLASSES[d.decision_class] || titleCase(d.decision_class)),
        h('span', { class: 'muted' }, when(d.occurred_at))),
      h('p', { class: 'row-main' }, d.payload_summary),
      d.rule_summary ? h('p', { class: 'row-why' }, hidden('Why: '), d.rule_summary,
        d.confidence ? h('span', { class: 'muted' }, ` · ${confidenceText(d.confidence)}`) : null) : null,
      d.failure ? h('p', { class: 'row-why' }, 'Not sent: ', d.failure) : null)));
    $('decisions-empty').hidden = list.length > 0;
    const more = $('decisions-more');
    more.hidden = list.length <= DECISIONS_SHOWN;
    more.textContent = allDecisions ? 'Show fewer' : `Show all ${list.length}`;
    more.setAttribute('aria-expanded', String(allDecisions));
  }

  function trustSource(src) {
    if (!src) return '';
    if (src === 'entity') return 'Set for this person';
    if (src.startsWith('tag:')) return `From the tag ${src.slice(4)}`;
    if (src === 'default') return 'The workspace default';
    if (src === 'built-in default') return 'The built-in default';
    return titleCase(src);
  }

  const hasCeiling = (x) => x.ceiling !== null && x.ceiling !== undefined;

  function renderPeople(list) {
    list = list || [];
    const box = $('people');
    box.textContent = '';
    add(box, list.map(person));
    $('people-empty').hidden = list.length > 0;
  }

  function person(x) {
    const id = x.entity_id;
    const name = x.name || (x.identifiers || [])[0] || id;
    const selectId = 'trust-' + id;
    const current = Number(x.trust_level);
    const picked = trustPicks.has(id) ? trustPicks.get(id) : current;
    const select = h('select', { id: selectId, class: 'input select' },
      LEVELS.map((_, n) => h('option', {
        value: n, selected: n === picked,
      }, levelText(n) + (hasCeiling(x) && n > x.ceiling ? ' (above ceiling)' : ''))));
    const save = h('button', { type: 'submit', class: 'btn btn-small', disabled: picked === current },
      'Save', hidden(` trust level for ${name}`));
    const error = h('p', { class: 'inline-error', role: 'alert' });
    select.addEventListener('change', () => {
      const n = Number(select.value);
      if (n === current) trustPicks.delete(id); else trustPicks.set(id, n);
      save.disabled = n === current;
      error.textContent = '';
    });
    const form = h('form', {
      class: 'trust-form',
      onsubmit: async (ev) => {
        ev.preventDefault();
        const level = Number(select.value);
        if (document.activeElement === save) select.focus(); // save is disabled meanwhile
        save.disabled = true;
        try {
          const res = await api('trust', { entity_id: id, level });
          trustPicks.delete(id);
          announce(res.message || `Trust for ${name} is now ${levelText(res.trust_level)}.`);
          refresh();
        } catch (e) {
          if (e.code === 'unauthorized') return;
          error.textContent = `Could not change the trust level: ${e.message}`;
          save.disabled = false;
          if (e.code === 'csrf') refresh();
        }
      },
    },
    h('label', { for: selectId, class: 'label label-small' }, 'Trust level', hidden(` for ${name}`)),
    h('div', { class: 'trust-row' }, select, save));

    const ids = (x.identifiers || []).filter((i) => i !== name);
    const tags = x.tags || [];
    return h('li', { class: 'row person', 'data-entity-id': id },
      h('p', { class: 'row-main person-name' }, name),
      ids.length ? h('p', { class: 'muted ids' }, ids.join(' · ')) : null,
      tags.length ? h('p', { class: 'tags' }, hidden('Tags: '), tags.map((t) => chip(t, 'tag'))) : null,
      form,
      h('p', { class: 'muted small' }, trustSource(x.trust_source),
        hasCeiling(x) ? ` · ceiling ${x.ceiling} (${LEVELS[x.ceiling] || '?'})` : ' · no ceiling'),
      error);
  }

  function ruleButtons(r) {
    const error = h('p', { class: 'error small', role: 'alert' });
    const pick = (decision) => async (ev) => {
      ev.currentTarget.disabled = true;
      const button = ev.currentTarget;
      try {
        const res = await api('rule', { rule_id: r.rule_id, decision });
        announce(res.message);
        refresh();
      } catch (e) {
        if (e.code === 'unauthorized') return;
        error.textContent = `Could not ${decision} the rule: ${e.message}`;
        button.disabled = false;
        if (e.code === 'csrf') refresh();
      }
    };
    return h('div', { class: 'rule-decide' },
      h('button', { type: 'button', class: 'btn btn-primary', onclick: pick('accept') }, 'Accept', hidden(` rule ${r.name}`)),
      h('button', { type: 'button', class: 'btn', onclick: pick('reject') }, 'Reject', hidden(` rule ${r.name}`)),
      error);
  }

  function renderRules(list) {
    list = list || [];
    const box = $('rules');
    box.textContent = '';
    add(box, list.map((r) => h('li', { class: 'row', 'data-rule-id': r.rule_id, 'data-status': r.status },
      h('p', { class: 'row-main' }, r.summary || r.name),
      h('p', { class: 'row-meta' },
        chip(r.kind === 'action' ? 'Action' : 'Triage', 'plain', 'Kind'),
        chip(r.origin === 'learned' ? 'Learned' : 'Yours', r.origin === 'learned' ? 'wait' : 'plain', 'Origin'),
        r.status === 'proposed' ? chip('Proposed', 'wait', 'Status') : null,
        h('span', { class: 'muted' }, [r.name, r.effect, confidenceText(r.confidence)].filter(Boolean).join(' · '))),
      r.status === 'proposed' ? ruleButtons(r) : null)));
    $('rules-empty').hidden = list.length > 0;
  }

  function renderApps(list) {
    list = list || [];
    const box = $('apps');
    box.textContent = '';
    add(box, list.map((a) => {
      const button = h('button', { type: 'button', class: 'btn btn-small' }, 'Disconnect');
      button.addEventListener('click', async () => {
        button.disabled = true;
        try {
          await api('disconnect', { token_id: a.token_id });
          refresh();
        } catch (e) {
          button.disabled = false;
          if (e.code !== 'unauthorized') banner(`Could not disconnect ${a.name}: ${e.message}`);
        }
      });
      return h('li', { class: 'row', 'data-token-id': a.token_id },
        h('p', { class: 'row-main' }, a.name),
        h('p', { class: 'muted small' }, `${a.scopes} · connected ${a.connected_at}`),
        button);
    }));
    $('apps-empty').hidden = list.length > 0;
  }

  // ------------------------------------------------------------------ start

  $('toast-close').addEventListener('click', dismiss);
  $('decisions-more').addEventListener('click', () => {
    allDecisions = !allDecisions;
    if (state) renderDecisions(state.decisions);
  });
  $('signout').addEventListener('click', async () => {
    $('signout').disabled = true;
    try {
      await api('signout', {});
      showSignedOut();
      $('signedout-h').setAttribute('tabindex', '-1');
      $('signedout-h').focus();
    } catch (e) {
      if (e.code !== 'unauthorized') banner(`Could not sign out: ${e.message}`);
    } finally {
      $('signout').disabled = false;
    }
  });
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && !signedOut) refresh();
  });

  refresh().then(() => {
    if (!signedOut) connect();
  });
})();
