// The overview: every chat with its context ring, and the people with personal memories.
"use strict";

(() => {
  const { base, api, el, when, number, ring } = Panel;
  let chats = [];

  function chatLink(scope) {
    return base + "/chats/" + encodeURIComponent(scope);
  }

  function chatItem(chat) {
    const title = chat.name ? chat.name : chat.scope;
    return el("li", { class: "chat", "data-scope": chat.scope },
      el("a", { href: chatLink(chat.scope), class: "chat-link" },
        ring(chat.context_tokens, chat.budget_tokens, chat.context_estimated),
        el("div", { class: "chat-main" },
          el("div", { class: "chat-title" },
            el("span", { class: "name", text: title }),
            chat.persona ? el("span", { class: "badge", text: chat.persona }) : null),
          el("div", { class: "chat-scope", text: chat.scope }),
          el("div", { class: "chat-facts" },
            el("span", { text: "消息 " + chat.messages }),
            el("span", { text: "压缩 " + chat.compressions }),
            el("span", { text: "今日 " + number(chat.tokens_today) + " tokens" }),
            el("span", { text: "活跃 " + when(chat.last_active) })))));
  }

  function render() {
    const filter = document.getElementById("chat-filter").value.trim().toLowerCase();
    const shown = chats.filter((c) => !filter ||
      c.scope.toLowerCase().includes(filter) || (c.name || "").toLowerCase().includes(filter));
    document.getElementById("chats").replaceChildren(...shown.map(chatItem));
    document.getElementById("chat-count").textContent = "（" + chats.length + "）";
    document.getElementById("chats-status").textContent = chats.length ? "" : "还没有会话。";
  }

  async function load() {
    try {
      chats = await api("GET", "/chats");
      render();
    } catch (error) {
      document.getElementById("chats-status").textContent = error.message;
    }
    try {
      const people = await api("GET", "/people");
      document.getElementById("people").replaceChildren(...people.map((p) =>
        el("li", {}, el("a", { href: chatLink(p.scope), text: (p.name ? p.name + " · " : "") + p.scope }),
          el("span", { class: "hint", text: " " + p.memories + " 条" }))));
    } catch (error) { /* the chats' message already says what is wrong */ }
  }

  document.getElementById("chat-filter").addEventListener("input", render);
  document.getElementById("person-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const qq = document.getElementById("person-qq").value.trim();
    if (/^[1-9][0-9]*$/.test(qq)) location.href = base + "/people/" + encodeURIComponent(qq);
  });
  load();
  // Sizes of windows not in memory are measured in the background: look again shortly.
  setTimeout(() => { if (chats.some((c) => c.context_tokens === null)) load(); }, 3000);
})();
