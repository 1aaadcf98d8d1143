// Shared helpers of the panel's pages: the API client (CSRF header from the cookie), times
// in AIMEMORY_TIMEZONE (the server names the zone in the page; the browser's own zone does
// not matter), number formats, the context ring and the lists' empty notes. Data is always
// put in the page as text (textContent), never as HTML.
"use strict";

const Panel = (() => {
  const base = document.querySelector('meta[name="panel-base"]').content;

  function cookie(name) {
    for (const part of document.cookie.split(";")) {
      const [key, ...rest] = part.trim().split("=");
      if (key === name) return decodeURIComponent(rest.join("="));
    }
    return "";
  }

  async function api(method, path, body) {
    const options = { method, headers: { "X-CSRF-Token": cookie("aimemory_csrf") }, credentials: "same-origin" };
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    const response = await fetch(base + "/api" + path, options);
    if (response.status === 401) {
      location.href = base + "/";
      throw new Error("未登录");
    }
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = new Error(data.reason || ("请求失败（" + response.status + "）"));
      error.status = response.status;
      error.data = data;
      throw error;
    }
    return data;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function clock(timeZone) {
    return new Intl.DateTimeFormat("en-GB", {
      timeZone, year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", hourCycle: "h23",
    });
  }

  // The zone the server counts in, as the page names it; the browser's own (so labelled)
  // when the page names none (the bot had not started) or one this browser does not know.
  function pageZone() {
    const meta = document.querySelector('meta[name="panel-zone"]');
    if (meta && meta.content) {
      try {
        return { formatter: clock(meta.content), label: meta.dataset.label || meta.content };
      } catch (error) { /* an unknown zone: the browser's own below */ }
    }
    const own = Intl.DateTimeFormat().resolvedOptions().timeZone;
    return { formatter: clock(own), label: own };
  }
  const { formatter, label: zoneLabel } = pageZone();

  // `YYYY-MM-DD HH:MM` in the server's zone, for a stored UTC time; "—" for none.
  function when(text) {
    if (!text) return "—";
    const moment = new Date(text);
    if (isNaN(moment)) return text;
    const part = {};
    for (const { type, value } of formatter.formatToParts(moment)) part[type] = value;
    return part.year + "-" + part.month + "-" + part.day + " " + part.hour + ":" + part.minute;
  }

  // A time on its own, with its zone: `2024-05-01 20:34（Asia/Shanghai）`.
  function whenLabelled(text) {
    return text ? when(text) + "（" + zoneLabel + "）" : when(text);
  }

  // A time in a list whose heading names the zone: the instant in `datetime`, the zone in
  // the tooltip.
  function time(text, attrs) {
    return el("time", { datetime: text || undefined, title: text ? zoneLabel : undefined, ...attrs }, when(text));
  }

  // Every heading's zone note names the zone its list's times are in.
  for (const note of document.querySelectorAll(".zone-note")) {
    note.textContent = "（" + zoneLabel + " 时间）";
  }

  // Show the list's note for `which` (its data-case), hide the others; none for null.
  function empty(list, which) {
    for (const note of document.querySelectorAll('.empty[data-list="' + list + '"]')) {
      note.hidden = note.dataset.case !== which;
    }
  }

  // Run `action` again after each delay while `wanted()` says so: names and context sizes
  // the server is still looking up in the background.
  function again(wanted, action, delays) {
    const [first, ...rest] = delays;
    if (first === undefined || !wanted()) return;
    setTimeout(async () => {
      if (!wanted()) return;
      try {
        await action();
      } catch (error) { /* the page already shows what it has */ }
      again(wanted, action, rest);
    }, first);
  }

  function number(n) {
    if (n === null || n === undefined) return "—";
    if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
    if (n >= 1e4) return (n / 1e3).toFixed(1) + "k";
    return String(n);
  }

  // The context size over the budget as a ring, like `~对话 状态`.
  function ring(tokens, budget, estimated) {
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 36 36");
    svg.setAttribute("class", "ring");
    const share = tokens === null || !budget ? null : Math.min(1, tokens / budget);
    const back = document.createElementNS(ns, "circle");
    for (const [k, v] of [["cx", 18], ["cy", 18], ["r", 15.9], ["class", "ring-back"]]) back.setAttribute(k, v);
    svg.append(back);
    if (share !== null) {
      const arc = document.createElementNS(ns, "circle");
      const length = 2 * Math.PI * 15.9;
      for (const [k, v] of [["cx", 18], ["cy", 18], ["r", 15.9],
        ["class", "ring-arc" + (share > 0.8 ? " high" : "")],
        ["stroke-dasharray", (share * length).toFixed(2) + " " + length.toFixed(2)],
        ["transform", "rotate(-90 18 18)"]]) arc.setAttribute(k, v);
      svg.append(arc);
    }
    const label = document.createElementNS(ns, "text");
    for (const [k, v] of [["x", 18], ["y", 21], ["text-anchor", "middle"], ["class", "ring-text"]]) label.setAttribute(k, v);
    label.textContent = share === null ? "…" : Math.round(share * 100) + "%";
    svg.append(label);
    const title = document.createElementNS(ns, "title");
    title.textContent = share === null ? "上下文大小计算中" :
      (estimated ? "约 " : "") + tokens + " / " + budget + " tokens";
    svg.append(title);
    return svg;
  }

  // Which bot account a row's window and usage are: its QQ number, and for the home
  // account (the first that ran on this database; its keys carry no number) a note saying
  // so. Shown only when the server says several accounts have been seen.
  function accountLabel(row) {
    if (!row.home_account) return "账号 " + row.account;
    return row.account ? "账号 " + row.account + "（首个账号）" : "首个账号";
  }

  function notice(text, bad) {
    const box = document.getElementById("notice");
    if (!box) return;
    box.textContent = text;
    box.className = "notice" + (bad ? " bad" : " good");
  }

  return { base, api, el, when, whenLabelled, time, zoneLabel, empty, again, number, ring, accountLabel, notice };
})();
