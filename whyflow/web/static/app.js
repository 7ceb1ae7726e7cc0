/* The chat page: sessions, uploads and seed 004's WebSocket events.
 * Everything from the server is put on the page as text (textContent / text nodes, or the
 * escaping Markdown renderer); charts go through the vendored vega-embed.
 */
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const PREVIEW_ROWS = 5;
  const state = { session: null, ws: null, running: false, turns: 0, pendingAuto: false, maxUpload: 0 };
  const els = {
    sessions: $("sessions"), conversation: $("conversation"), title: $("title"), subtitle: $("subtitle"),
    status: $("status"), statusText: $("status-text"), error: $("error-banner"), form: $("composer"),
    text: $("composer-text"), send: $("send"), stop: $("stop"), file: $("file"), welcome: $("welcome"),
  };

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function cellText(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "number") {
      if (Number.isInteger(v)) return String(v);
      return Math.abs(v) >= 1000 ? v.toLocaleString("en-US", { maximumFractionDigits: 2 }) : String(Number(v.toPrecision(4)));
    }
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }

  /* ---- rendering ------------------------------------------------------------------------ */
  function tableElement(headers, rows, totalRows) {
    const wrap = el("div", "table-wrap");
    const table = el("table");
    const thead = el("thead");
    const hr = el("tr");
    headers.forEach((h) => { const th = el("th", null, h); th.scope = "col"; hr.appendChild(th); });
    thead.appendChild(hr);
    table.appendChild(thead);
    const tbody = el("tbody");
    rows.forEach((row, i) => {
      const tr = el("tr");
      if (i >= PREVIEW_ROWS) tr.hidden = true;
      row.forEach((v) => tr.appendChild(el("td", typeof v === "number" ? "num" : null, cellText(v))));
      tbody.appendChild(tr);
    });
    table.appendChild(tbody);
    wrap.appendChild(table);
    const total = Math.max(totalRows || 0, rows.length);
    if (rows.length > PREVIEW_ROWS) {
      const more = el("button", "link", `Show all ${rows.length} rows`);
      more.type = "button";
      more.setAttribute("aria-expanded", "false");
      more.addEventListener("click", () => {
        const open = more.getAttribute("aria-expanded") !== "true";
        tbody.querySelectorAll("tr").forEach((tr, i) => { tr.hidden = !open && i >= PREVIEW_ROWS; });
        more.setAttribute("aria-expanded", String(open));
        more.textContent = open ? `Show the first ${PREVIEW_ROWS} rows` : `Show all ${rows.length} rows`;
      });
      wrap.appendChild(more);
    }
    if (total > rows.length) wrap.appendChild(el("p", "note", `${rows.length} of ${total} rows kept`));
    return wrap;
  }

  function bubble(role, type) {
    const node = el("article", `msg ${role} ${type}`);
    node.appendChild(el("div", "who", role === "user" ? "You" : "Analyst"));
    els.welcome.hidden = true;
    els.conversation.appendChild(node);
    return node;
  }

  function scroll() { els.conversation.scrollTop = els.conversation.scrollHeight; }

  function showText(role, text) {
    const node = bubble(role, "text");
    node.appendChild(role === "user" ? el("p", "plain", text) : window.renderMarkdown(text));
  }

  function showTable(p) {
    const node = bubble("assistant", "table");
    if (p.title) node.appendChild(el("h3", null, p.title));
    node.appendChild(tableElement(p.headers || [], p.rows || [], p.total_rows));
  }

  function showPlot(p) {
    const node = bubble("assistant", "plot");
    if (p.title && !(p.vega_lite_spec || {}).title) node.appendChild(el("h3", null, p.title));
    const box = el("div", "chart");
    node.appendChild(box);
    const spec = Object.assign({}, p.vega_lite_spec || {});
    if (!spec.width) spec.width = "container";
    if (window.vegaEmbed) {
      window.vegaEmbed(box, spec, { actions: false, renderer: "svg" }).catch((err) => {
        box.appendChild(el("p", "note", "The chart could not be drawn: " + err));
      });
    } else {
      box.appendChild(el("p", "note", "The chart library did not load."));
    }
  }

  function showQuery(p) {
    const node = bubble("assistant", "query_result");
    const details = el("details");
    const n = p.row_count || 0;
    const summary = el("summary", null,
      `SQL · ${p.description || "query"} · ${p.is_error ? "failed" : n + (n === 1 ? " row" : " rows")}`);
    details.appendChild(summary);
    const pre = el("pre");
    pre.appendChild(el("code", null, p.query || ""));
    details.appendChild(pre);
    if (p.is_error) details.appendChild(el("p", "error-text", p.error || "the query failed"));
    else details.appendChild(tableElement(p.columns || [], p.rows || [], n));
    node.appendChild(details);
  }

  function showError(message) {
    const node = bubble("assistant", "error");
    node.setAttribute("role", "alert");
    node.appendChild(el("p", "error-text", message));
  }

  function showStored(m) {
    const d = m.data || {};
    if (m.type === "text") showText(m.role, m.text);
    else if (m.type === "table") showTable({ title: m.text, headers: d.headers, rows: d.rows });
    else if (m.type === "plot") showPlot({ title: d.title || m.text, vega_lite_spec: d.vega_lite_spec });
    else if (m.type === "query_result") showQuery(Object.assign({ description: m.text }, d));
  }

  /* ---- status ----------------------------------------------------------------------------- */
  function setRunning(on, message) {
    state.running = on;
    document.body.dataset.running = String(on);
    els.status.hidden = !on;
    if (message) els.statusText.textContent = message;
    els.stop.disabled = !on;
    const ready = !!state.session && !on;
    els.send.disabled = !ready;
    els.text.disabled = !state.session;
  }

  function banner(message) {
    els.error.textContent = message || "";
    els.error.hidden = !message;
  }

  /* ---- sessions --------------------------------------------------------------------------- */
  async function loadSessions() {
    const res = await fetch("/api/sessions");
    const body = await res.json();
    state.maxUpload = body.max_upload_bytes || 0;
    if (body.max_upload_bytes) $("limit").textContent = Math.round(body.max_upload_bytes / 1048576) + " MB";
    els.sessions.replaceChildren();
    body.sessions.forEach((s) => {
      const li = el("li");
      const b = el("button", "session" + (state.session && state.session.id === s.id ? " current" : ""));
      b.type = "button";
      b.dataset.id = s.id;
      b.appendChild(el("span", "s-title", s.title));
      b.appendChild(el("span", "s-meta", `${s.file_name} · ${new Date(s.updated).toLocaleString()}`));
      if (state.session && state.session.id === s.id) b.setAttribute("aria-current", "true");
      b.addEventListener("click", () => openSession(s.id));
      li.appendChild(b);
      els.sessions.appendChild(li);
    });
  }

  async function openSession(id, autoAnalyze) {
    if (state.ws) { state.ws.onclose = null; state.ws.close(); state.ws = null; }
    banner("");
    const res = await fetch("/api/sessions/" + encodeURIComponent(id));
    if (!res.ok) { banner("That session is gone."); return; }
    const body = await res.json();
    state.session = body.session;
    els.title.textContent = body.session.title;
    els.subtitle.textContent = body.session.file_name;
    els.conversation.replaceChildren(els.welcome);
    els.welcome.hidden = body.messages.length > 0;
    body.messages.forEach(showStored);
    scroll();
    state.pendingAuto = !!autoAnalyze;
    connect(id);
    setRunning(!!body.session.running, "Working");
    loadSessions();
    if (!autoAnalyze) els.text.focus();
  }

  function connect(id) {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${proto}//${location.host}/ws/${encodeURIComponent(id)}`);
    state.ws = ws;
    ws.onopen = () => {
      if (state.pendingAuto) {
        state.pendingAuto = false;
        ws.send(JSON.stringify({ type: "auto_analyze" }));
        setRunning(true, "Starting the first analysis");
      }
    };
    ws.onmessage = (msg) => onEvent(JSON.parse(msg.data));
    ws.onclose = () => {
      if (state.ws === ws && state.session && state.session.id === id) setTimeout(() => connect(id), 1000);
    };
  }

  function onEvent(e) {
    switch (e.type) {
      case "status": setRunning(true, e.message); break;
      case "text": showText("assistant", e.text); break;
      case "table": showTable(e); break;
      case "plot": showPlot(e); break;
      case "query_result": showQuery(e); break;
      case "session_update":
        els.title.textContent = e.title;
        if (state.session) state.session.title = e.title;
        loadSessions();
        break;
      case "error": showError(e.message); break;
      case "done":
        setRunning(false);
        if (e.stopped) bubble("assistant", "note").appendChild(el("p", "note", "Stopped."));
        state.turns += 1;
        document.body.dataset.turns = String(state.turns);
        loadSessions();
        els.text.focus();
        break;
      default: break;
    }
    scroll();
  }

  /* ---- actions ---------------------------------------------------------------------------- */
  async function upload(file) {
    if (!file) return;
    banner("");
    if (state.maxUpload && file.size > state.maxUpload) {
      banner(`${file.name} is larger than the ${Math.round(state.maxUpload / 1048576)} MB limit.`);
      els.file.value = "";
      return;
    }
    setRunning(true, `Uploading ${file.name}`);
    els.send.disabled = true;
    try {
      const res = await fetch("/api/sessions?filename=" + encodeURIComponent(file.name), { method: "POST", body: file });
      const body = await res.json();
      if (!res.ok) { setRunning(false); banner(body.message || `Upload failed (${res.status})`); return; }
      await openSession(body.session.id, true);
    } catch (err) {
      setRunning(false);
      banner("Upload failed: " + err);
    } finally {
      els.file.value = "";
    }
  }

  function ask() {
    const text = els.text.value.trim();
    if (!text || state.running || !state.ws || state.ws.readyState !== WebSocket.OPEN) return;
    showText("user", text);
    state.ws.send(JSON.stringify({ type: "message", text }));
    els.text.value = "";
    setRunning(true, "Sending the question");
    scroll();
  }

  function stop() {
    if (state.ws && state.running) state.ws.send(JSON.stringify({ type: "stop" }));
  }

  els.form.addEventListener("submit", (ev) => { ev.preventDefault(); ask(); });
  els.text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); ask(); }
  });
  els.stop.addEventListener("click", stop);
  els.file.addEventListener("change", () => upload(els.file.files[0]));
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && state.running) stop();
    if (ev.altKey && (ev.key === "n" || ev.key === "N")) { ev.preventDefault(); els.file.click(); }
  });
  els.conversation.addEventListener("dragover", (ev) => { ev.preventDefault(); });
  els.conversation.addEventListener("drop", (ev) => {
    ev.preventDefault();
    if (ev.dataTransfer && ev.dataTransfer.files.length) upload(ev.dataTransfer.files[0]);
  });
  document.querySelector(".upload-button").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); els.file.click(); }
  });
  document.querySelector(".upload-button").tabIndex = 0;

  setRunning(false);
  loadSessions().catch((err) => banner("Could not reach the server: " + err));
  window.whyflowChat = { state, openSession, onEvent };
})();
