/* A tiny Markdown renderer that builds DOM nodes and never parses HTML.
 *
 * Model and dataset text reaches the page only as text nodes (document.createTextNode): a value
 * such as <img src=x onerror=alert(1)> is shown, never run. Handles paragraphs, headings (#),
 * bullet and numbered lists, fenced code, `code`, **bold** and *italic*; everything else is text.
 */
"use strict";
(function () {
  // Underscores only emphasise between non-word characters: job_training stays a name.
  const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|((?<!\w)__[^_]+__(?!\w))|(\*[^*\s][^*]*\*)|((?<!\w)_[^_\s][^_]*_(?!\w))/g;

  function inline(parent, text) {
    let last = 0;
    for (const m of text.matchAll(INLINE)) {
      if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
      const token = m[0];
      let el;
      if (token.startsWith("`")) { el = document.createElement("code"); el.textContent = token.slice(1, -1); }
      else if (token.startsWith("**") || token.startsWith("__")) { el = document.createElement("strong"); inline(el, token.slice(2, -2)); }
      else { el = document.createElement("em"); inline(el, token.slice(1, -1)); }
      parent.appendChild(el);
      last = m.index + token.length;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }

  function render(text) {
    const root = document.createElement("div");
    root.className = "md";
    const lines = String(text == null ? "" : text).replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    let para = [];
    const flush = () => {
      if (!para.length) return;
      const p = document.createElement("p");
      para.forEach((line, k) => { if (k) p.appendChild(document.createElement("br")); inline(p, line); });
      root.appendChild(p);
      para = [];
    };
    while (i < lines.length) {
      const line = lines[i];
      const fence = line.match(/^\s*```/);
      if (fence) {
        flush();
        const body = [];
        i += 1;
        while (i < lines.length && !/^\s*```/.test(lines[i])) { body.push(lines[i]); i += 1; }
        i += 1;
        const pre = document.createElement("pre");
        const code = document.createElement("code");
        code.textContent = body.join("\n");
        pre.appendChild(code);
        root.appendChild(pre);
        continue;
      }
      const heading = line.match(/^(#{1,6})\s+(.*)$/);
      if (heading) {
        flush();
        const h = document.createElement("h" + Math.min(6, heading[1].length + 2));
        inline(h, heading[2]);
        root.appendChild(h);
        i += 1;
        continue;
      }
      const item = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
      if (item) {
        flush();
        const ordered = /\d/.test(item[1]);
        const list = document.createElement(ordered ? "ol" : "ul");
        while (i < lines.length) {
          const m = lines[i].match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
          if (!m || /\d/.test(m[1]) !== ordered) break;
          const li = document.createElement("li");
          inline(li, m[2]);
          list.appendChild(li);
          i += 1;
        }
        root.appendChild(list);
        continue;
      }
      if (!line.trim()) { flush(); i += 1; continue; }
      para.push(line);
      i += 1;
    }
    flush();
    return root;
  }

  window.renderMarkdown = render;
})();
