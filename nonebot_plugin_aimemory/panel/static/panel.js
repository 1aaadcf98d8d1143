// Shared helpers of the panel's pages: the API client (CSRF header from the cookie), time
// and number formats, and the context ring. Data is always put in the page as text
// (textContent), never as HTML.
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

  function when(text) {
    if (!text) return "—";
    const moment = new Date(text);
    if (isNaN(moment)) return text;
    const pad = (n) => String(n).padStart(2, "0");
    return moment.getFullYear() + "-" + pad(moment.getMonth() + 1) + "-" + pad(moment.getDate()) +
      " " + pad(moment.getHours()) + ":" + pad(moment.getMinutes());
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

  function notice(text, bad) {
    const box = document.getElementById("notice");
    if (!box) return;
    box.textContent = text;
    box.className = "notice" + (bad ? " bad" : " good");
  }

  return { base, api, el, when, number, ring, notice };
})();
