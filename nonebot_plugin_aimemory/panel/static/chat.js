// One chat (or one person's memories): memories with search, edit, delete and restore, the
// tombstones, the background reviewer, the chat log and the usage chart. After every change
// the summary and both lists are read again, so their counts agree with the server.
"use strict";

(() => {
  const { base, api, el, whenLabelled, time, empty, again, number, ring, accountLabel, notice } = Panel;
  const prefix = base + "/chats/";
  const scope = decodeURIComponent(location.pathname.slice(location.pathname.indexOf(prefix) + prefix.length));
  const path = "/chats/" + encodeURIComponent(scope);
  let info = null;

  async function guarded(action) {
    try {
      await action();
    } catch (error) {
      notice(error.message, true);
    }
  }

  // The name the bots report (a group's name, a friend's nickname) with the key beside it;
  // the key alone while no name is known.
  function showTitle() {
    document.getElementById("title-name").textContent = info.name || scope;
    document.getElementById("title-key").textContent = info.name ? scope : "";
    document.title = "AI 记忆面板 · " + (info.name ? info.name + "（" + scope + "）" : scope);
  }

  async function loadSummary() {
    info = await api("GET", path);
    const personal = info.personal;
    showTitle();
    const summary = document.getElementById("summary");
    const facts = [
      // The try page's made-up chats and people: their usage is theirs, shown as a test's.
      info.test ? el("div", { class: "chat-scope", id: "test-note" },
        el("span", { class: "badge test", text: "测试" }), " 试聊页的虚构会话，用量单独计算 · ",
        el("a", { href: base + "/try" + (personal ? "" : "#" + encodeURIComponent(scope)), text: "去试聊" })) : null,
      info.persona ? el("div", { class: "chat-scope", text: "人设 " + info.persona }) : null,
      el("div", { class: "chat-facts" },
        el("span", { id: "memory-total", text: "记忆 " + info.memories + " / " + info.max_memories }),
        personal ? null : el("span", { text: "消息 " + info.messages }),
        personal ? null : el("span", { text: "压缩 " + info.compressions }),
        personal ? null : el("span", { text: "今日 " + number(info.tokens_today) + " tokens" }),
        personal ? null : el("span", { id: "last-active", text: "活跃 " + whenLabelled(info.last_active) })),
    ];
    summary.replaceChildren(...(personal ? [] : [ring(info.context_tokens, info.budget_tokens, info.context_estimated)]),
      el("div", { class: "chat-main" }, ...(info.several_accounts ? [accountLine()] : []), ...facts));
    for (const id of ["review-card", "chatlog-card", "usage-card"]) {
      document.getElementById(id).hidden = personal;
    }
    showOwners();
  }

  // Whose the memories shown are: the accounts share the chat's (and a person's) unless
  // each account keeps its own.
  function memoryOwner() {
    return info.memory_shared ? "各账号共用" : (info.memory_account ? "账号 " + info.memory_account : "首个账号");
  }

  // With several accounts: which one this page's window and usage are.
  function accountLine() {
    const text = info.personal ? "个人记忆：" + memoryOwner() : accountLabel(info) + " 的对话和用量";
    return el("div", { class: "chat-account", id: "account", text });
  }

  // Each card says whose it is: the window's account, or every account of the chat.
  function showOwners() {
    const owners = {
      "memory-owner": memoryOwner(),
      "tombstone-owner": memoryOwner(),
      "review-owner": memoryOwner(),
      "chatlog-owner": "各账号共用",
      "usage-owner": accountLabel(info),
    };
    for (const [id, text] of Object.entries(owners)) {
      const badge = document.getElementById(id);
      badge.textContent = text;
      badge.hidden = !info.several_accounts;
    }
  }

  // The bot's own lines name the account that said them, once there are several.
  function speaker(row) {
    if (row.role !== "assistant") return row.speaker_name || row.speaker_id || "?";
    return info.several_accounts && row.speaker_id ? "机器人 " + row.speaker_id : "机器人";
  }

  function memoryItem(memory) {
    const item = el("li", { class: "memory", "data-id": memory.id });
    const show = () => {
      item.replaceChildren(
        el("div", { class: "memory-head" },
          el("code", { text: "#" + memory.id }),
          memory.private ? el("span", { class: "badge", text: "私密" }) : null,
          memory.user_id ? el("span", { class: "hint", text: "QQ " + memory.user_id }) : null,
          memory.provenance && memory.provenance.text
            ? el("span", { class: "hint provenance", text: memory.provenance.text }) : null,
          time(memory.updated_at, { class: "hint" })),
        el("p", { class: "content", text: memory.content }),
        el("div", { class: "tags" }, ...memory.tags.map((t) => el("span", { class: "tag", text: t }))),
        el("div", { class: "actions" },
          el("button", { type: "button", class: "edit", text: "编辑", onclick: edit }),
          info && info.personal ? el("button", {
            type: "button", class: "privacy", text: memory.private ? "设为公开" : "设为私密",
            onclick: () => guarded(async () => {
              await api("PATCH", path + "/memories/" + memory.id, { private: !memory.private });
              notice("已更新 #" + memory.id);
              await refresh();
            }),
          }) : null,
          el("button", { type: "button", class: "delete danger", text: "删除", onclick: remove })));
    };
    const edit = () => {
      const content = el("textarea", { class: "content-input", rows: 3 });
      content.value = memory.content;
      const tags = el("input", { type: "text", class: "tags-input", placeholder: "标签，用逗号分隔" });
      tags.value = memory.tags.join(", ");
      item.replaceChildren(content, tags, el("div", { class: "actions" },
        el("button", { type: "button", class: "save", text: "保存", onclick: () => guarded(async () => {
          const updated = await api("PATCH", path + "/memories/" + memory.id,
            { content: content.value, tags: tags.value });
          notice("已保存 #" + updated.id + (updated.truncated ? "（内容过长已截断）" : ""));
          await refresh();
        }) }),
        el("button", { type: "button", class: "cancel", text: "取消", onclick: show })));
      content.focus();
    };
    const remove = () => guarded(async () => {
      await api("DELETE", path + "/memories/" + memory.id);
      notice("已删除 #" + memory.id + "，可在“已删除”中恢复");
      await refresh();
    });
    show();
    return item;
  }

  async function loadMemories() {
    const q = document.getElementById("memory-q").value.trim();
    const memories = await api("GET", path + "/memories" + (q ? "?q=" + encodeURIComponent(q) : ""));
    document.getElementById("memories").replaceChildren(...memories.map(memoryItem));
    document.getElementById("memory-count").textContent =
      q ? "（相符 " + memories.length + " 条）" : "（" + memories.length + "）";
    empty("memories", memories.length ? null : (q ? "search" : (info.personal ? "personal" : "chat")));
  }

  // After a change: the summary's counts and both lists, as the server now has them.
  async function refresh() {
    await Promise.all([loadSummary(), loadMemories(), loadTombstones()]);
  }

  async function loadTombstones() {
    const stones = await api("GET", path + "/tombstones");
    document.getElementById("tombstones").replaceChildren(...stones.map((stone) =>
      el("li", { class: "tombstone", "data-id": stone.id },
        el("code", { text: "#" + stone.id }), " ",
        stone.deleted_at ? el("span", { class: "hint" }, "删除于 ", time(stone.deleted_at), " ") : null,
        el("span", { class: "content", text: stone.content }), " ",
        stone.restorable ? el("button", { type: "button", class: "restore", text: "恢复",
          onclick: () => guarded(async () => {
            await api("POST", path + "/memories/" + stone.id + "/restore");
            notice("已恢复 #" + stone.id);
            await refresh();
          }) }) : el("span", { class: "hint", text: "（已清除，仅阻止再次保存）" }))));
    document.getElementById("tombstone-count").textContent = "（" + stones.length + "）";
    empty("tombstones", stones.length ? null : "none");
  }

  async function loadReview() {
    const review = await api("GET", path + "/review");
    const box = document.getElementById("review");
    const button = document.getElementById("review-now");
    button.hidden = !review.available;
    if (!review.available) {
      box.replaceChildren(el("p", { class: "hint", text: "后台整理未开启（不允许把聊天记录发给模型）。" }));
      return;
    }
    box.replaceChildren(el("div", { class: "chat-facts" },
      el("span", { text: review.enabled ? "自动整理：开" : "自动整理：关" }),
      el("span", { text: "间隔 " + review.interval_seconds + " 秒" }),
      el("span", {}, "上次 ", time(review.last_review_at)),
      el("span", { text: review.running ? "正在整理" : (review.pending ? "有新消息待整理" : "无待整理") })));
  }

  async function loadChatLog() {
    const q = document.getElementById("chatlog-q").value.trim();
    const rows = await api("GET", path + "/chatlog?limit=100" + (q ? "&q=" + encodeURIComponent(q) : ""));
    document.getElementById("chatlog").replaceChildren(...rows.map((row) =>
      el("li", { class: "line " + row.role + (row.refused ? " refused" : "") },
        time(row.created_at, { class: "hint" }), " ",
        el("b", { text: speaker(row) + "：" }),
        el("span", { text: row.text }))));
    empty("chatlog", rows.length ? null : (q ? "search" : "none"));
  }

  // A bar per day, drawn on the canvas: prompt tokens and completion tokens stacked.
  function drawUsage(days) {
    const canvas = document.getElementById("usage-chart");
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 600;
    const height = 180;
    canvas.width = width * ratio;
    canvas.height = height * ratio;
    const g = canvas.getContext("2d");
    g.scale(ratio, ratio);
    g.clearRect(0, 0, width, height);
    const top = Math.max(1, ...days.map((d) => d.total_tokens));
    const left = 36, bottom = 20, plot = height - bottom - 8;
    const step = (width - left) / days.length;
    g.strokeStyle = "#c8ccd4";
    g.beginPath(); g.moveTo(left, 8 + plot); g.lineTo(width, 8 + plot); g.stroke();
    g.fillStyle = "#667";
    g.font = "10px sans-serif";
    g.fillText(number(top), 0, 14);
    g.fillText("0", 0, 8 + plot);
    days.forEach((day, i) => {
      const x = left + i * step + step * 0.15, w = step * 0.7;
      const prompt = (day.prompt_tokens / top) * plot, completion = (day.completion_tokens / top) * plot;
      g.fillStyle = "#5b8def";
      g.fillRect(x, 8 + plot - prompt, w, prompt);
      g.fillStyle = "#f0a23b";
      g.fillRect(x, 8 + plot - prompt - completion, w, completion);
      if (i % 7 === days.length % 7 || i === days.length - 1) {
        g.fillStyle = "#667";
        g.textAlign = i === days.length - 1 ? "right" : "center";
        g.fillText(day.day.slice(5), i === days.length - 1 ? width : x + w / 2, height - 6);
        g.textAlign = "left";
      }
    });
    canvas.dataset.days = String(days.length);
    const total = days.reduce((sum, d) => sum + d.total_tokens, 0);
    document.getElementById("usage-total").textContent =
      "合计 " + number(total) + " tokens（蓝：输入，橙：输出）";
    empty("usage", total ? null : "none");
  }

  async function loadUsage() {
    drawUsage(await api("GET", path + "/usage?days=30"));
  }

  document.getElementById("memory-search").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(loadMemories);
  });
  document.getElementById("chatlog-search").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(loadChatLog);
  });
  document.getElementById("memory-add").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(async () => {
      const content = document.getElementById("new-content");
      const tags = document.getElementById("new-tags");
      try {
        const saved = await api("POST", path + "/memories", { content: content.value, tags: tags.value });
        const similar = saved.similar && saved.similar.length
          ? "；相近的记忆：" + saved.similar.map((m) => "#" + m.id).join("、") : "";
        notice("已保存 #" + saved.id + similar);
        content.value = "";
        tags.value = "";
      } finally {
        await refresh();
      }
    });
  });
  document.getElementById("review-now").addEventListener("click", () => guarded(async () => {
    const button = document.getElementById("review-now");
    button.disabled = true;
    try {
      const result = await api("POST", path + "/review");
      notice("整理完成：新增 " + result.created + " 条，更新 " + result.updated + " 条");
      await Promise.all([refresh(), loadReview()]);
    } finally {
      button.disabled = false;
    }
  }));

  guarded(async () => {
    await loadSummary();
    const parts = [loadMemories(), loadTombstones()];
    if (!info.personal) parts.push(loadReview(), loadChatLog(), loadUsage());
    await Promise.all(parts);
    document.body.dataset.loaded = "1";
    // The name is looked up in the background when the server did not know it yet.
    again(() => !info.name, loadSummary, [1500, 5000]);
  });
})();
