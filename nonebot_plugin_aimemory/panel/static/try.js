// The try page: chat with the bot as made-up people in a test group or a private chat, with
// @, replies and commands; each answer's details (the memories put before the message, the
// tool calls and their results, the provider's error) open on demand. Messages may be sent
// while earlier ones are still being answered, as in QQ.
"use strict";

(() => {
  const { base, api, el, time, empty, notice } = Panel;
  // What the panel takes in one request (try_routes.py's MAX_MESSAGE_BODY_BYTES), less room
  // for the rest of the body.
  const MAX_TEXT_BYTES = 256 * 1024 - 2048;
  const BOT = "bot";
  let setup = null;
  let chat = "";
  let ats = new Set();
  let quoting = null;
  let pending = 0;

  const $ = (id) => document.getElementById(id);
  const memberOf = (id) => setup.members.find((m) => m.id === id);
  const isGroup = () => chat === setup.group.scope;
  const speaker = () => $("speaker").value;
  const nameOf = (id) => id === BOT ? setup.bot_name : (memberOf(id) || { name: id }).name;

  function chats() {
    return [{ scope: setup.group.scope, name: setup.group.name },
      ...setup.members.map((m) => ({ scope: m.private_chat, name: m.name + " 的私聊", member: m.id }))];
  }

  function fillControls() {
    $("chat").replaceChildren(...chats().map((c) => el("option", { value: c.scope, text: c.name })));
    const wanted = decodeURIComponent(location.hash.slice(1));
    chat = chats().some((c) => c.scope === wanted) ? wanted : setup.group.scope;
    $("chat").value = chat;
    fillSpeakers();
  }

  // In the group any member speaks; a private chat is its member's.
  function fillSpeakers() {
    const own = chats().find((c) => c.scope === chat).member;
    const members = own ? [memberOf(own)] : setup.members;
    $("speaker").replaceChildren(...members.map((m) =>
      el("option", { value: m.id, text: m.name + (isGroup() ? "（" + m.role_label + "）" : "") })));
    $("speaker").disabled = !!own;
    $("chat-link").href = base + "/chats/" + encodeURIComponent(chat);
    fillAts();
  }

  function fillAts() {
    $("ats").hidden = !isGroup();
    const targets = [BOT, ...setup.members.map((m) => m.id).filter((id) => id !== speaker())];
    for (const id of [...ats]) if (!targets.includes(id)) ats.delete(id);
    $("ats").replaceChildren(el("span", { class: "hint", text: "@ " }), ...targets.map((id) =>
      el("button", {
        type: "button", class: "at" + (ats.has(id) ? " on" : ""), "data-at": id,
        "aria-pressed": ats.has(id) ? "true" : "false", text: "@" + nameOf(id),
        onclick: () => { ats.has(id) ? ats.delete(id) : ats.add(id); fillAts(); },
      })));
  }

  function quote(speakerId, text) {
    quoting = { speaker: speakerId, text };
    $("quoting-text").textContent = nameOf(speakerId) + "：" + text.slice(0, 40);
    $("quoting").hidden = false;
    $("text").focus();
  }

  function clearQuote() {
    quoting = null;
    $("quoting").hidden = true;
  }

  function scrollDown() {
    const log = $("log");
    log.scrollTop = log.scrollHeight;
  }

  // One line of the conversation: who said it (and to whom), when, what; a reply button.
  function line(role, speakerId, text, when, extra, to) {
    const who = role === "bot" ? setup.bot_name : nameOf(speakerId);
    const item = el("li", { class: "msg " + role },
      el("div", { class: "msg-head" }, el("b", { text: who }), to ? el("span", { class: "to", text: " " + to }) : null,
        " ", time(when || new Date().toISOString())),
      el("div", { class: "msg-text", text }),
      el("button", { type: "button", class: "link reply", text: "回复", onclick: () => quote(role === "bot" ? BOT : speakerId, text) }),
      ...(extra || []));
    $("log").append(item);
    empty("log", null);
    scrollDown();
    return item;
  }

  function note(text, bad) {
    $("log").append(el("li", { class: "msg note" + (bad ? " bad" : ""), text }));
    empty("log", null);
    scrollDown();
  }

  function block(title, body) {
    return el("div", { class: "detail" }, el("div", { class: "detail-title", text: title }), body);
  }

  // What the turn did, shown on demand.
  function details(d) {
    const parts = [];
    if (d.failure) parts.push(block("出错", el("pre", { class: "failure", text: d.failure.text })));
    parts.push(block("注入的记忆", d.memories ? el("pre", { class: "injected", text: d.memories })
      : el("p", { class: "hint", text: "这次没有注入记忆（没有找到相关的记忆）。" })));
    const tools = d.tools.map((t) => el("li", { class: "tool" },
      el("code", { text: t.name + "(" + t.arguments + ")" }), el("pre", { text: t.result })));
    parts.push(block("工具调用", tools.length ? el("ul", { class: "tools" }, ...tools)
      : el("p", { class: "hint", text: "这次没有调用工具。" })));
    return el("details", { class: "turn-details" }, el("summary", { text: "详情" }), ...parts);
  }

  function show(answer) {
    if (answer.cut_chars) {
      note("这条消息太长，后面 " + answer.cut_chars + " 字没有交给模型（QQ 里也一样）。");
    }
    const d = answer.details;
    const shown = answer.messages;
    shown.forEach((text, i) => line("bot", BOT, text, null, i === shown.length - 1 ? [details(d)] : []));
    if (!shown.length) {
      if (d.failure) {
        note("机器人没有回答：" + d.failure.text + "（QQ 里这次不发提示：同一会话 10 分钟内只提醒一次）", true);
      } else if (!answer.addressed && !answer.command) {
        note("没有 @机器人、回复它或以它的昵称开头：它不回答这条（群里的其他消息也是这样）。");
      } else {
        note("这条没有单独的回复（QQ 里也一样）：同一个人在回答前接着发的几条会一起回答，回复跟在最后一条后面。");
      }
    }
    $("tokens").textContent = "今日用量 " + answer.tokens_today + " tokens（测试会话，单独计算）";
    loadMemories();
  }

  async function send(event) {
    event.preventDefault();
    const text = $("text").value;
    if (!text.trim() && !quoting) return;
    if (new TextEncoder().encode(text).length > MAX_TEXT_BYTES) {
      notice("消息太长：面板一次最多接收约 256 KB 的文字（QQ 里也发不了这么长的一条）。请分几次发。", true);
      return;
    }
    const body = { speaker: speaker(), text, at: isGroup() ? [...ats] : [], reply: quoting };
    const sent = { scope: chat };
    const to = [...body.at.map((id) => "@" + nameOf(id)), quoting ? "回复 " + nameOf(quoting.speaker) : ""];
    line("user", body.speaker, text, null, [], to.filter(Boolean).join(" "));
    $("text").value = "";
    ats.clear();
    clearQuote();
    fillAts();
    countChars();
    const waiting = el("li", { class: "msg bot pending", text: setup.bot_name + " 正在回答…" });
    $("log").append(waiting);
    scrollDown();
    pending += 1;
    try {
      const answer = await api("POST", "/try/" + encodeURIComponent(sent.scope) + "/messages", body);
      // Another chat is shown by now: its own history has the answer.
      if (sent.scope === chat) show(answer);
      notice("", false);
    } catch (error) {
      const lost = error instanceof TypeError;
      const text = lost ? "连接中断，没有收到回答：机器人可能正在重启。收到的消息保存在会话里，重启后下一条消息会一起回答（QQ 里也一样）；刷新页面可以看到聊天记录。"
        : error.message;
      note(text, true);
      notice(text, true);
    } finally {
      waiting.remove();
      pending -= 1;
      document.body.dataset.pending = String(pending);
    }
  }

  async function loadHistory() {
    $("log").replaceChildren();
    const rows = await api("GET", "/try/" + encodeURIComponent(chat) + "/history");
    for (const row of rows) {
      line(row.role === "assistant" ? "bot" : "user", row.speaker_id, row.text, row.created_at);
    }
    empty("log", rows.length ? null : "none");
  }

  function memoryItem(m) {
    return el("li", { class: "memory", "data-id": m.id },
      el("div", { class: "content", text: m.content }),
      el("div", { class: "hint" }, "#" + m.id + " · ", time(m.created_at)));
  }

  async function loadList(scope, list, count) {
    const memories = await api("GET", "/chats/" + encodeURIComponent(scope) + "/memories");
    $(list).replaceChildren(...memories.map(memoryItem));
    $(count).textContent = "（" + memories.length + "）";
    empty(list, memories.length ? null : "none");
  }

  async function loadMemories() {
    try {
      await loadList(chat, "memories", "memory-count");
      await loadList("u:" + speaker(), "personal", "personal-count");
    } catch (error) {
      $("memories-card").dataset.error = error.message;
    }
  }

  function countChars() {
    const n = $("text").value.length;
    const over = n > setup.max_message_chars;
    $("count").textContent = n ? n + " 字" + (over ? "（超过 " + setup.max_message_chars + " 字的部分不会交给模型）" : "") : "";
    $("count").classList.toggle("bad", over);
  }

  async function switchChat() {
    chat = $("chat").value;
    history.replaceState(null, "", "#" + encodeURIComponent(chat));
    fillSpeakers();
    clearQuote();
    await Promise.all([loadHistory(), loadMemories()]);
  }

  async function clearChat() {
    const name = $("chat").selectedOptions[0].textContent;
    if (!confirm("清空“" + name + "”？它的对话、聊天记录、记忆和说话人的个人记忆都会删掉（用量保留）。")) return;
    try {
      const cleared = await api("POST", "/try/" + encodeURIComponent(chat) + "/clear");
      notice("已清空：" + cleared.memories + " 条记忆、" + cleared.chat_log_rows + " 条聊天记录。", false);
      await Promise.all([loadHistory(), loadMemories()]);
    } catch (error) {
      notice(error.message, true);
    }
  }

  async function load() {
    try {
      setup = await api("GET", "/try");
    } catch (error) {
      notice(error.message, true);
      return;
    }
    $("composer").querySelector(".composer-foot").prepend(el("span", { class: "hint", id: "tokens" }));
    if (!setup.configured) notice("还没有配置模型（AIMEMORY_API_KEY 等）：机器人会回复和 QQ 里一样的提示。", true);
    fillControls();
    await Promise.all([loadHistory().catch((e) => notice(e.message, true)), loadMemories()]);
    document.body.dataset.loaded = "1";
  }

  $("chat").addEventListener("change", switchChat);
  $("speaker").addEventListener("change", () => { fillAts(); loadMemories(); });
  $("composer").addEventListener("submit", send);
  $("text").addEventListener("input", countChars);
  $("text").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("quoting-cancel").addEventListener("click", clearQuote);
  $("clear").addEventListener("click", clearChat);
  load();
})();
