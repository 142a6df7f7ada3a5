// The hpc dashboard. It takes snapshots of the cluster from the node's
// server-sent events (/hpc/dashboard/events) and draws them: the cluster's
// Raft and gossip view, the node grid, the queue, a job's detail, the
// topology tree and a timeline per node. It never reloads the page. Text
// from the cluster (job names, users, reasons) is only ever set as text,
// never as HTML.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);

  // Server time minus local time: elapsed times count from the server's
  // clock.
  let skew = 0;
  let state = null;
  let source = null;
  let reconnectTimer = null;
  let detailJob = 0;
  let detailKey = '';
  // The detail's job as last drawn (its state and whether its standard
  // error is a file of its own), and whether its output was read after
  // it ended: then the tail is not asked for again.
  let detailShown = null;
  let outputFinal = false;
  let outputBusy = false;

  // h makes an element: attrs sets attributes (text: its text, on*: a
  // listener), kids are elements or strings (set as text).
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') el.textContent = String(v);
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids) {
      if (kid === undefined || kid === null || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }

  function now() { return Date.now() + skew; }
  function ms(t) { return t ? Date.parse(t) : 0; }
  function pad(n) { return String(n).padStart(2, '0'); }

  // Slurm's time format: M:SS, H:MM:SS, D-HH:MM:SS.
  function duration(sec) {
    sec = Math.max(0, Math.floor(sec));
    const d = Math.floor(sec / 86400), hh = Math.floor(sec % 86400 / 3600);
    const mm = Math.floor(sec % 3600 / 60), ss = sec % 60;
    if (d > 0) return d + '-' + pad(hh) + ':' + pad(mm) + ':' + pad(ss);
    if (hh > 0) return hh + ':' + pad(mm) + ':' + pad(ss);
    return mm + ':' + pad(ss);
  }

  function limit(min) {
    if (min < 0) return 'UNLIMITED';
    if (!min) return 'partition default';
    return duration(min * 60);
  }

  // Slurm's timestamp: 2026-12-02T04:00:00, local time.
  function stamp(t) {
    if (!t) return 'N/A';
    const d = new Date(t);
    return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) +
      'T' + pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  function clock(t) {
    const d = new Date(t);
    return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  }

  function fill(tbody, rows, cols, empty) {
    const out = rows.length ? rows : [h('tr', {}, h('td', { class: 'empty', colspan: cols, text: empty }))];
    tbody.replaceChildren(...out);
  }

  // --- The stream.

  function setConn(kind, text) {
    const c = $('conn');
    c.dataset.conn = kind;
    c.textContent = text;
  }

  function connect() {
    if (source) source.close();
    clearTimeout(reconnectTimer);
    setConn('connecting', 'Connecting…');
    source = new EventSource('/hpc/dashboard/events');
    source.addEventListener('state', (e) => {
      setConn('live', 'Live');
      render(JSON.parse(e.data));
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) {
        // Refused: a token no longer valid (then look on anonymously),
        // or too many streams (try again later, as the browser does by
        // itself for a broken stream).
        setConn('reconnecting', 'Disconnected: retrying');
        if (document.cookie.includes(cookie + '=')) {
          fetch('/hpc/whoami', { credentials: 'same-origin' }).then((r) => {
            if (r.status === 401) {
              notice('err', 'Your token was refused (expired?): viewing anonymously');
              signOut();
            }
          }).catch(() => {});
        }
        reconnectTimer = setTimeout(connect, 5000);
      } else {
        setConn('reconnecting', 'Reconnecting…');
      }
    };
  }

  // --- Drawing a snapshot.

  function render(st) {
    state = st;
    skew = ms(st.now) - Date.now();
    // A redraw replaces elements: keyboard focus goes back to the one
    // with the same key.
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : '';
    renderViewer(st);
    renderCluster(st);
    renderNodes(st);
    renderQueue(st);
    renderTopology(st);
    renderTimeline();
    renderDetail();
    const err = $('error');
    err.hidden = !st.error;
    err.textContent = st.error ? 'Not up to date: ' + st.error : '';
    if (focused) {
      const el = document.querySelector('[data-key="' + CSS.escape(focused) + '"]');
      if (el && el !== document.activeElement) el.focus();
    }
  }

  function renderViewer(st) {
    const v = st.viewer;
    $('who').textContent = v.anonymous ? 'Viewing anonymously (read only)' : 'Signed in as ' + v.user;
    $('token').hidden = !v.anonymous;
    $('token-label').hidden = !v.anonymous;
    $('signin-button').hidden = !v.anonymous;
    $('signout-button').hidden = v.anonymous;
    $('node-action').hidden = v.anonymous;
    $('detail-actions').hidden = v.anonymous;
    document.body.dataset.viewer = v.anonymous ? 'anonymous' : v.user;
  }

  function renderCluster(st) {
    const c = st.cluster;
    document.title = (c.name || 'hpc') + ' — hpc dashboard';
    $('cluster-name').textContent = c.name || 'hpc';
    $('served-by').textContent = c.served_by;
    $('leader').textContent = c.leader || 'none (election)';
    $('leader').dataset.leader = c.leader || '';
    $('term').textContent = c.term;
    $('commit').textContent = c.commit_index;
    $('applied').textContent = c.applied_index;
    const ctls = (c.controllers || []).map((x) => h('tr', { 'data-controller': x.name, 'data-role': x.role },
      h('td', { text: x.name }),
      h('td', {}, h('span', { class: 'badge', 'data-base': x.role === 'down' ? 'down' : (x.role === 'leader' ? 'alloc' : 'idle'), text: x.role })),
      h('td', { text: x.voter ? 'yes' : 'no (joining)' }),
      h('td', { text: x.term || '' }),
      h('td', { text: x.applied_index || '' }),
      h('td', { text: x.error ? x.error : (x.role === 'leader' ? 'leading' : (x.last_contact ? 'heard the leader ' + ago(x.last_contact) : 'ok')) })));
    fill($('controllers').tBodies[0], ctls, 6, 'No controller answered');
    const mem = (c.members || []).map((m) => h('tr', { 'data-member': m.name, 'data-state': m.state },
      h('td', { text: m.name }), h('td', { text: m.addr }),
      h('td', {}, h('span', { class: 'badge', 'data-base': m.state === 'alive' ? 'idle' : 'down', text: m.state }))));
    fill($('members').tBodies[0], mem, 3, 'No members');
  }

  function ago(t) {
    const s = Math.max(0, (now() - ms(t)) / 1000);
    return s < 1 ? 'just now' : duration(s) + ' ago';
  }

  function meter(used, total) {
    const pct = total > 0 ? Math.min(100, Math.round(100 * used / total)) : 0;
    const span = h('span');
    span.style.width = pct + '%';
    return h('div', { class: 'meter', role: 'presentation' }, span);
  }

  function renderNodes(st) {
    const cards = st.nodes.map((n) => {
      const jobs = n.jobs.length ? n.jobs.map((id) => jobButton(id, 'node-' + n.name)) : ['—'];
      const dl = h('dl', {},
        h('dt', { text: 'CPUs' }), h('dd', {}, n.alloc_cpus + '/' + n.cpus, meter(n.alloc_cpus, n.cpus)),
        h('dt', { text: 'Memory' }), h('dd', {}, n.alloc_mem_mb + '/' + n.mem_mb + ' MB', meter(n.alloc_mem_mb, n.mem_mb)),
        n.gres ? h('dt', { text: 'GRES' }) : null, n.gres ? h('dd', { text: n.gres_used + ' of ' + n.gres }) : null,
        n.switch ? h('dt', { text: 'Switch' }) : null, n.switch ? h('dd', { text: n.switch }) : null,
        h('dt', { text: 'Jobs' }), h('dd', { class: 'node-jobs' }, ...spaced(jobs)));
      return h('article', {
        class: 'node', 'data-node': n.name, 'data-state': n.base, 'data-base': n.base,
        'data-noresp': n.not_responding ? 'true' : 'false', 'aria-label': n.name + ': ' + n.state,
      },
      h('h3', {}, h('span', { text: n.name }), h('span', { class: 'badge', 'data-base': n.base, title: n.long, text: n.state })),
      dl,
      n.reason ? h('p', { class: 'reason', text: 'Reason: ' + n.reason }) : null);
    });
    $('node-grid').replaceChildren(...cards);
    const pick = $('node-pick');
    const was = pick.value;
    pick.replaceChildren(...st.nodes.map((n) => h('option', { value: n.name, text: n.name + ' (' + n.state + ')' })));
    if (was) pick.value = was;
  }

  function spaced(items) {
    const out = [];
    items.forEach((x, i) => { if (i) out.push(' '); out.push(x); });
    return out;
  }

  function jobButton(id, where) {
    return h('button', { type: 'button', class: 'job', 'data-key': where + '-job-' + id, 'data-open-job': id, 'aria-label': 'Job ' + id + ': details', text: id });
  }

  function renderQueue(st) {
    const running = [], pending = [], finished = [];
    for (const j of st.jobs) {
      if (j.state === 'PENDING') pending.push(j);
      else if (j.state === 'RUNNING' || j.state === 'COMPLETING') running.push(j);
      else finished.push(j);
    }
    caption('cap-running', 'Running', st, 'running', 'lowest job ids');
    caption('cap-pending', 'Pending', st, 'pending', 'first by priority');
    caption('cap-finished', 'Recently finished', st, 'finished', 'newest');
    const row = (j, ...cells) => h('tr', { 'data-job': j.id, 'data-state': j.state },
      h('td', {}, h('button', { type: 'button', class: 'job', 'data-key': 'queue-job-' + j.id, 'data-open-job': j.id, 'aria-label': 'Job ' + j.display + ': details', text: j.display })), ...cells);
    fill($('running').tBodies[0], running.map((j) => row(j,
      h('td', { text: j.name }), h('td', { text: j.user }), h('td', { text: j.partition }),
      h('td', { text: j.code }),
      h('td', { 'data-since': j.start, text: duration((now() - ms(j.start)) / 1000) }),
      h('td', { text: limit(j.time_limit_min) }), h('td', { text: j.num_nodes }),
      h('td', { text: j.nodelist }))), 9, 'No job is running');
    pending.sort((a, b) => (b.priority || 0) - (a.priority || 0) || a.id - b.id);
    fill($('pending').tBodies[0], pending.map((j) => row(j,
      h('td', { text: j.name }), h('td', { text: j.user }), h('td', { text: j.partition }),
      h('td', { text: j.priority || '' }), h('td', { text: j.reason || 'None' }),
      h('td', { text: stamp(j.expected_start) }),
      h('td', { text: (j.sched_nodes || []).join(',') || '(null)' }))), 8, 'No job is pending');
    finished.sort((a, b) => ms(b.end) - ms(a.end));
    fill($('finished').tBodies[0], finished.slice(0, 20).map((j) => row(j,
      h('td', { text: j.name }), h('td', { text: j.user }),
      h('td', {}, h('span', { class: 'badge', 'data-base': j.state === 'COMPLETED' ? 'idle' : 'down', text: j.state })),
      h('td', { text: j.exit_code }),
      h('td', { text: j.start ? duration((ms(j.end) - ms(j.start)) / 1000) : '0:00' }),
      h('td', { text: stamp(j.end) }), h('td', { text: j.nodelist || '' }))), 8, 'No job has finished lately');
  }

  // caption says how many jobs of a section there are when the snapshot
  // carries only some of them (a long queue: the server keeps a few
  // hundred).
  function caption(id, title, st, kind, which) {
    const all = st.counts ? st.counts[kind] : 0, shown = st.shown ? st.shown[kind] : 0;
    const el = $(id);
    el.textContent = all > shown ? title + ' (' + all + '; the ' + shown + ' ' + which + ' shown)' : title;
    el.dataset.total = all;
  }

  function renderTopology(st) {
    const tree = $('topo-tree');
    if (!st.topology.length) {
      tree.replaceChildren(h('p', { text: 'No topology.conf: the nodes are one flat network.' }));
      return;
    }
    const byName = new Map(st.topology.map((s) => [s.name, s]));
    const nodes = new Map(st.nodes.map((n) => [n.name, n]));
    const draw = (s) => {
      const jobs = s.jobs || [];
      const head = h('div', {
        class: 'switch', 'data-switch': s.name, 'data-jobs': jobs.join(' '), 'data-holds': jobs.length ? 'true' : 'false',
        'aria-label': 'Switch ' + s.name + (jobs.length ? ', holds job ' + jobs.join(', ') : ''),
      }, h('span', { text: s.name }), jobs.length ? h('span', { class: 'jobs' }, ...spaced(jobs.map((id) => h('span', { class: 'jobtag', text: 'job ' + id })))) : null);
      const kids = (s.switches || []).filter((c) => byName.has(c)).map((c) => draw(byName.get(c)));
      const leaves = (s.nodes || []).map((name) => {
        const n = nodes.get(name);
        const base = n ? n.base : 'unk';
        return h('span', { class: 'tnode', 'data-node': name, 'data-base': base },
          h('span', { text: name }), h('span', { class: 'badge', 'data-base': base, text: n ? n.state : '?' }),
          ...(n ? n.jobs.map((id) => h('span', { class: 'jobtag', text: id })) : []));
      });
      return h('li', {}, head,
        kids.length ? h('ul', {}, ...kids) : null,
        leaves.length ? h('div', { class: 'leaf-nodes' }, ...leaves) : null);
    };
    const roots = st.topology.filter((s) => !s.parent);
    tree.replaceChildren(h('ul', {}, ...roots.map(draw)));
  }

  // The timeline: the last pastMin minutes and the next futureMin, one
  // lane per node.
  const pastMin = 10, futureMin = 5;

  function renderTimeline() {
    const st = state;
    if (!st) return;
    const t1 = now() + futureMin * 60000, t0 = now() - pastMin * 60000;
    const x = (t) => (100 * (Math.min(Math.max(t, t0), t1) - t0) / (t1 - t0));
    const bars = new Map(st.nodes.map((n) => [n.name, []]));
    const add = (node, from, to, kind, label, title) => {
      if (!bars.has(node) || to < t0 || from > t1) return;
      const b = h('div', { class: 'bar', 'data-kind': kind, title: title, 'aria-label': title, text: label });
      b.style.left = x(from) + '%';
      b.style.width = Math.max(0, x(to) - x(from)) + '%';
      bars.get(node).push(b);
    };
    for (const j of st.jobs) {
      const lim = j.time_limit_min > 0 ? j.time_limit_min * 60000 : 0;
      if (j.state === 'PENDING') {
        if (!j.expected_start) continue;
        const s = ms(j.expected_start);
        for (const n of j.sched_nodes || []) add(n, s, s + (lim || 60000), 'planned', j.id, 'job ' + j.id + ' expected to start on ' + n + ' at ' + clock(s));
        continue;
      }
      if (!j.start) continue;
      const s = ms(j.start);
      const running = j.state === 'RUNNING' || j.state === 'COMPLETING';
      const e = running ? now() : ms(j.end);
      const kind = running ? 'run' : (j.state === 'COMPLETED' ? 'done' : 'failed');
      for (const n of j.nodes || []) {
        add(n, s, e, kind, j.id, 'job ' + j.id + ' on ' + n + ': ' + j.state + ', ' + clock(s) + (running ? ' to now' : ' to ' + clock(e)));
        if (running && lim) add(n, e, s + lim, 'limit', '', 'job ' + j.id + ': rest of its time limit');
      }
    }
    const lanes = st.nodes.map((n) => {
      const mark = h('div', { class: 'now', title: 'now' });
      mark.style.left = x(now()) + '%';
      return h('div', { class: 'lane', 'data-lane': n.name },
        h('span', { class: 'lane-name', text: n.name }),
        h('div', { class: 'track', role: 'group', 'aria-label': 'Jobs on ' + n.name }, ...bars.get(n.name), mark));
    });
    const ticks = h('div', { class: 'ticks', 'aria-hidden': 'true' });
    for (let m = -pastMin; m <= futureMin; m += 5) {
      const edge = m === -pastMin ? 'start' : (m === futureMin ? 'end' : null);
      const t = h('span', { 'data-edge': edge, text: m === 0 ? 'now' : (m > 0 ? '+' : '') + m + ' min' });
      t.style.left = x(now() + m * 60000) + '%';
      ticks.append(t);
    }
    $('timeline-lanes').replaceChildren(...lanes, h('div', { class: 'axis' }, h('span'), ticks));
  }

  // sacct's Elapsed: [D-]HH:MM:SS.
  function sacctElapsed(sec) {
    sec = Math.max(0, Math.floor(sec));
    const d = Math.floor(sec / 86400);
    const hms = pad(Math.floor(sec % 86400 / 3600)) + ':' + pad(Math.floor(sec % 3600 / 60)) + ':' + pad(sec % 60);
    return d > 0 ? d + '-' + hms : hms;
  }

  // The elapsed times count on between snapshots.
  function tick() {
    for (const el of document.querySelectorAll('[data-since]')) {
      el.textContent = duration((now() - ms(el.dataset.since)) / 1000);
    }
    for (const el of document.querySelectorAll('[data-acct-since]')) {
      el.textContent = sacctElapsed((now() - ms(el.dataset.acctSince)) / 1000);
    }
    renderTimeline();
  }

  // --- A job's detail.

  // The key of the element that opened the detail: focus goes back to it
  // (or to its redrawn copy) when the detail closes.
  let opener = '';

  function openDetail(id) {
    const a = document.activeElement;
    opener = a && a.dataset ? a.dataset.key || '' : '';
    detailJob = Number(id);
    detailKey = '';
    detailShown = null;
    outputFinal = false;
    for (const x of ['detail-stdout', 'detail-stderr', 'detail-stderr-head']) $(x).hidden = true;
    $('detail-stdout').textContent = '';
    $('detail-stderr').textContent = '';
    $('detail-output-note').textContent = '';
    const dlg = $('detail');
    if (!dlg.open) dlg.showModal();
    renderDetail();
    pollOutput();
  }

  const finalStates = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT', 'OUT_OF_MEMORY', 'NODE_FAIL', 'PREEMPTED'];

  // pollOutput reads the tail of the open detail's job's output (every
  // second while the detail is open, until it was read once after the
  // job ended). The anonymous viewer is not shown any.
  function pollOutput() {
    if (!detailJob || !detailShown || outputBusy || outputFinal) return;
    if (!state || state.viewer.anonymous) {
      $('detail-output-note').textContent = 'Its tail is shown to the job\'s owner: sign in with a token from scontrol token.';
      return;
    }
    const job = detailJob, ended = finalStates.includes(detailShown.state);
    const streams = detailShown.stderr ? ['stdout', 'stderr'] : ['stdout'];
    outputBusy = true;
    Promise.all(streams.map((s) => fetch('/hpc/dashboard/job/output?id=' + job + '&stream=' + s, { credentials: 'same-origin' })
      .then((r) => r.json().then((body) => ({ ok: r.ok, body })))))
      .then((answers) => {
        if (job !== detailJob) return;
        answers.forEach((a, i) => drawTail(streams[i], a.ok, a.body));
        if (ended) outputFinal = true;
      })
      .catch((e) => { $('detail-output-note').textContent = 'Output: ' + e; })
      .finally(() => { outputBusy = false; });
  }

  // drawTail shows one stream's tail, kept scrolled to its end if it was.
  function drawTail(stream, ok, t) {
    const pre = $(stream === 'stdout' ? 'detail-stdout' : 'detail-stderr');
    if (!ok) {
      $('detail-output-note').textContent = 'Output: ' + (t.error || 'unknown') + (t.detail ? ' (' + t.detail + ')' : '');
      return;
    }
    if (t.note) {
      $('detail-output-note').textContent = t.note;
      return;
    }
    if (stream === 'stdout') {
      $('detail-output-note').textContent = t.offset > 0
        ? 'The last ' + Math.round((t.size - t.offset) / 1024) + ' KiB of ' + Math.round(t.size / 1024) + ' KiB' + (outputFinal ? '' : ', as it grows')
        : (t.size ? t.size + ' bytes' : 'Nothing written yet');
    }
    if (stream === 'stderr') $('detail-stderr-head').hidden = false;
    const atEnd = pre.hidden || pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.hidden = false;
    if (pre.textContent !== t.data) pre.textContent = t.data;
    pre.dataset.size = t.size;
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  }

  function renderDetail() {
    if (!detailJob || !state) return;
    const j = state.jobs.find((x) => x.id === detailJob);
    const key = j ? j.state + '/' + (j.steps || []).length + '/' + (j.end || '') : 'gone';
    if (key === detailKey) return;
    detailKey = key;
    fetch('/hpc/dashboard/job?id=' + detailJob, { credentials: 'same-origin' })
      .then((r) => r.json().then((body) => ({ ok: r.ok, body })))
      .then(({ ok, body }) => drawDetail(ok, body))
      .catch((e) => drawDetail(false, { error: String(e) }));
  }

  function field(name, value) {
    return h('div', {}, h('dt', { text: name }), h('dd', { text: value === undefined || value === '' ? '—' : value }));
  }

  function drawDetail(ok, d) {
    if (!ok) {
      $('detail-title').textContent = 'Job ' + detailJob;
      $('detail-fields').replaceChildren(field('Error', d.error || 'unknown'));
      return;
    }
    const j = d.job;
    $('detail-title').textContent = 'Job ' + j.display + (j.name ? ' (' + j.name + ')' : '');
    $('detail').dataset.job = j.id;
    $('detail').dataset.state = j.state;
    const first = !detailShown;
    detailShown = { state: j.state, stderr: !!d.error_file };
    if (first) pollOutput();
    $('detail-fields').replaceChildren(
      field('State', j.state), field('Reason', j.reason || 'None'), field('User', j.user),
      field('Account', j.account), field('Partition', j.partition), field('Priority', j.priority),
      field('Submit', stamp(j.submit)), field('Start', stamp(j.start || j.expected_start)), field('End', stamp(j.end)),
      field('Time limit', limit(j.time_limit_min)), field('Nodes', j.num_nodes), field('NodeList', j.nodelist),
      field('CPUs', j.cpus), field('BatchHost', j.batch_host), field('ExitCode', j.exit_code), field('Switch', j.switch));
    fill($('detail-steps').tBodies[0], (j.steps || []).map((s) => h('tr', {},
      h('td', { text: s.id }), h('td', { text: s.name }), h('td', { text: s.state }), h('td', { text: s.nodes }),
      h('td', { text: s.tasks }), h('td', { text: stamp(s.start) }), h('td', { text: stamp(s.end) }))), 7, 'No srun step');
    const acctCols = ['JobID', 'JobName', 'Partition', 'Account', 'AllocCPUS', 'State', 'ExitCode', 'Elapsed', 'Start', 'End', 'NodeList', 'MaxRSS', 'ReqMem', 'TotalCPU'];
    fill($('detail-acct').tBodies[0], d.acct.map((r) => h('tr', { 'data-acct': r.JobID },
      ...acctCols.map((c) => h('td', { 'data-field': c, 'data-acct-since': c === 'Elapsed' ? r.since : null, text: r[c] })))), acctCols.length, 'No accounting record yet');
    $('detail-output').textContent = d.output
      ? 'Standard output: ' + d.output + (d.error_file ? '; standard error: ' + d.error_file : '')
      : 'No output file yet.';
    $('detail-script-note').textContent = d.script_note || '';
    $('detail-script').hidden = !d.script;
    $('detail-script').textContent = d.script || '';
  }

  // --- Acting, for a user who signed in.

  function notice(kind, text) {
    const n = $('notice');
    n.hidden = false;
    n.dataset.kind = kind;
    n.textContent = text;
  }

  function act(body, what) {
    return fetch('/hpc/dashboard/action', {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    }).then((r) => r.json().then((b) => {
      if (r.ok) notice('ok', what + ': done');
      else notice('err', what + ': ' + (b.error || r.status) + (b.detail ? ' (' + b.detail + ')' : ''));
    })).catch((e) => notice('err', what + ': ' + e));
  }

  const cookie = 'slurm_jwt';

  // signIn keeps the token in the slurm_jwt cookie (until the token
  // expires) and starts a stream as its user.
  function signIn(raw) {
    let tok = raw.trim().replace(/^export\s+/, '').replace(/^SLURM_JWT=/, '');
    if (!tok) return;
    let maxAge = 1800;
    try {
      const claims = JSON.parse(atob(tok.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
      if (claims.exp) maxAge = Math.max(0, Math.floor(claims.exp - Date.now() / 1000));
    } catch (e) {
      notice('err', 'That is not a token from scontrol token.');
      return;
    }
    document.cookie = cookie + '=' + encodeURIComponent(tok) + '; path=/; SameSite=Strict; max-age=' + maxAge;
    fetch('/hpc/whoami', { credentials: 'same-origin' }).then((r) => r.json().then((b) => {
      if (!r.ok) {
        signOut();
        notice('err', 'Token refused: ' + (b.error || r.status));
        return;
      }
      $('token').value = '';
      notice('ok', 'Signed in as ' + b.user);
      connect();
    }));
  }

  function signOut() {
    document.cookie = cookie + '=; path=/; SameSite=Strict; max-age=0';
    connect();
  }

  function wire() {
    $('signin').addEventListener('submit', (e) => { e.preventDefault(); signIn($('token').value); });
    $('signout-button').addEventListener('click', () => { signOut(); notice('ok', 'Signed out'); });
    document.addEventListener('click', (e) => {
      const b = e.target.closest('[data-open-job]');
      if (b) openDetail(b.dataset.openJob);
    });
    $('detail-close').addEventListener('click', () => $('detail').close());
    $('detail').addEventListener('close', () => {
      detailJob = 0;
      detailKey = '';
      detailShown = null;
      const back = opener && document.querySelector('[data-key="' + CSS.escape(opener) + '"]');
      if (back) back.focus();
    });
    for (const b of document.querySelectorAll('#detail-actions button')) {
      b.addEventListener('click', () => {
        const what = b.dataset.action + ' job ' + detailJob;
        act({ action: b.dataset.action, job_id: detailJob }, what).then(() => { detailKey = ''; renderDetail(); });
      });
    }
    $('drain-button').addEventListener('click', () => act({ action: 'drain', node: $('node-pick').value, reason: $('node-reason').value }, 'drain ' + $('node-pick').value));
    $('resume-button').addEventListener('click', () => act({ action: 'resume', node: $('node-pick').value }, 'resume ' + $('node-pick').value));
  }

  wire();
  connect();
  setInterval(tick, 1000);
  setInterval(pollOutput, 1000);
})();
