// The overview: every chat with its context ring, the try page's test chats apart, and the
// people with personal memories.
"use strict";

(() => {
  const { base, api, el, time, empty, again, number, ring, accountLabel } = Panel;
  let chats = [];

  function chatLink(scope) {
    return base + "/chats/" + encodeURIComponent(scope);
  }

  // Several accounts in one chat: a row each (its window, usage and persona), labelled.
  function chatItem(chat) {
    const account = chat.several_accounts ? accountLabel(chat) : null;
    return el("li", { class: "chat", "data-scope": chat.scope, "data-account": chat.account || undefined },
      el("a", { href: chatLink(chat.scope), class: "chat-link" },
        ring(chat.context_tokens, chat.budget_tokens, chat.context_estimated),
        el("div", { class: "chat-main" },
          el("div", { class: "chat-title" },
            el("span", { class: "name", text: chat.name || chat.scope }),
            chat.persona ? el("span", { class: "badge", text: chat.persona }) : null,
            chat.test ? el("span", { class: "badge test", text: "测试" }) : null,
            account ? el("span", { class: "badge account", text: account }) : null),
          chat.name ? el("div", { class: "chat-scope", text: chat.scope }) : null,
          el("div", { class: "chat-facts" },
            el("span", { text: "消息 " + chat.messages }),
            el("span", { text: "压缩 " + chat.compressions }),
            el("span", { text: "今日 " + number(chat.tokens_today) + " tokens" }),
            el("span", {}, "活跃 ", time(chat.last_active))))));
  }

  function render() {
    const filter = document.getElementById("chat-filter").value.trim().toLowerCase();
    const real = chats.filter((c) => !c.test);
    const tests = chats.filter((c) => c.test);
    const shown = real.filter((c) => !filter || c.scope.toLowerCase().includes(filter) ||
      (c.name || "").toLowerCase().includes(filter) || (c.several_accounts && (c.account || "").includes(filter)));
    document.getElementById("chats").replaceChildren(...shown.map(chatItem));
    document.getElementById("chat-count").textContent = "（" + real.length + "）";
    document.getElementById("test-chats").replaceChildren(...tests.map(chatItem));
    document.getElementById("test-count").textContent = "（" + tests.length + "）";
    document.getElementById("test-card").hidden = !tests.length;
    document.getElementById("chats-status").textContent = "";
    empty("chats", !real.length ? "none" : (!shown.length ? "filter" : null));
  }

  async function loadChats() {
    chats = await api("GET", "/chats");
    render();
  }

  async function loadPeople() {
    const people = await api("GET", "/people");
    // With several accounts, whose the memories are: one account's, or shared by them all.
    const owner = (p) => !p.several_accounts ? "" : (p.account ? " · 账号 " + p.account : " · 各账号共用");
    document.getElementById("people").replaceChildren(...people.map((p) =>
      el("li", { class: "person", "data-scope": p.scope },
        el("a", { href: chatLink(p.scope), text: (p.name ? p.name + " · " : "") + p.scope }),
        p.test ? el("span", { class: "badge test", text: "测试" }) : null,
        el("span", { class: "hint", text: " " + p.memories + " 条" + owner(p) }))));
    document.getElementById("people-count").textContent = "（" + people.length + "）";
    empty("people", people.length ? null : "none");
  }

  async function load() {
    try {
      await loadChats();
    } catch (error) {
      document.getElementById("chats-status").textContent = error.message;
      return;
    }
    try {
      await loadPeople();
    } catch (error) { /* the chats' message already says what is wrong */ }
    document.body.dataset.loaded = "1";
    // Names and the sizes of windows not in memory are looked up in the background: look
    // again shortly while some are missing.
    const missing = () => chats.some((c) => c.context_tokens === null || !c.name);
    again(missing, () => Promise.all([loadChats(), loadPeople()]), [1500, 5000]);
  }

  document.getElementById("chat-filter").addEventListener("input", render);
  document.getElementById("person-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const qq = document.getElementById("person-qq").value.trim();
    if (/^[1-9][0-9]*$/.test(qq)) location.href = base + "/people/" + encodeURIComponent(qq);
  });
  load();
})();
