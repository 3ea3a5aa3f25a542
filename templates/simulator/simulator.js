// The workspace simulator's page: #demo as Slack shows it, polled from /simulator/api/channel, and
// people acting through /simulator/api/{messages,reactions,actions}. Plain JavaScript, no build step.
"use strict";

(function () {
  const WAIT_SECONDS = 20;  // a long poll: the answer comes when what this person sees changes
  const EMOJI = {
    "+1": "👍", thumbsup: "👍", "-1": "👎", thumbsdown: "👎", eyes: "👀", white_check_mark: "✅",
    heavy_check_mark: "✔️", x: "❌", tada: "🎉", rocket: "🚀", fire: "🔥", warning: "⚠️", rotating_light: "🚨",
    hourglass_flowing_sand: "⏳", hourglass: "⌛", robot_face: "🤖", heart: "❤️", thinking_face: "🤔",
    wave: "👋", no_entry: "⛔", question: "❓", bulb: "💡", clap: "👏", ok_hand: "👌", memo: "📝",
  };
  const PICKER = ["+1", "eyes", "white_check_mark", "tada"];

  const state = {
    world: null,
    person: null,
    channel: null,
    thread: null,          // the ts of the open thread
    messages: [],
    version: "",
    controls: {},          // message ts -> action_id -> value, as the person left the message's controls
    rendered: new Map(),   // "list:ts" -> {signature, node}
    names: {},             // user id -> name
    groups: {},            // group id -> handle
  };

  const $ = (id) => document.getElementById(id);

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  async function call(name, body, signal) {
    const init = body === undefined ? {signal} : {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-CSRFToken": csrfToken()},
      body: JSON.stringify(body),
    };
    const response = await fetch(`/simulator/api/${name}`, init);
    let answer;
    try { answer = await response.json(); } catch (e) { answer = {ok: false, message: `The simulator answered ${response.status}.`}; }
    if (!response.ok || !answer.ok) {
      const error = new Error(answer.message || answer.error || `HTTP ${response.status}`);
      error.code = answer.error;
      throw error;
    }
    return answer;
  }

  function showActionError(message) {
    const box = $("action-error");
    box.textContent = message;
    box.hidden = false;
    clearTimeout(showActionError.timer);
    showActionError.timer = setTimeout(() => { box.hidden = true; }, 6000);
  }

  // Text: Slack's mrkdwn, escaped first, then its few marks.

  function escapeHtml(text) {
    return text.replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
  }

  function mrkdwn(text) {
    let html = escapeHtml(text || "");
    html = html.replace(/```([\s\S]*?)```/g, (m, code) => `<pre>${code}</pre>`);
    html = html.replace(/`([^`\n]+)`/g, (m, code) => `<code>${code}</code>`);
    html = html.replace(/&lt;@([UW][A-Z0-9]+)(?:\|[^&]*)?&gt;/g, (m, id) =>
      `<span class="mention${id === state.person ? " me" : ""}">@${escapeHtml(state.names[id] || id)}</span>`);
    html = html.replace(/&lt;!subteam\^([A-Z0-9]+)(?:\|([^&]*))?&gt;/g, (m, id, label) =>
      `<span class="mention">${escapeHtml(label || "@" + (state.groups[id] || id))}</span>`);
    html = html.replace(/&lt;!(here|channel|everyone)&gt;/g, '<span class="mention">@$1</span>');
    html = html.replace(/&lt;(https?:\/\/[^|&]+)\|([^&]+)&gt;/g, '<a href="$1" target="_blank" rel="noopener">$2</a>');
    html = html.replace(/&lt;(https?:\/\/[^&]+)&gt;/g, '<a href="$1" target="_blank" rel="noopener">$1</a>');
    html = html.replace(/(^|[\s(])\*([^*\n]+)\*(?=[\s).,!?:;]|$)/g, "$1<b>$2</b>");
    html = html.replace(/(^|[\s(])_([^_\n]+)_(?=[\s).,!?:;]|$)/g, "$1<i>$2</i>");
    html = html.replace(/(^|[\s(])~([^~\n]+)~(?=[\s).,!?:;]|$)/g, "$1<s>$2</s>");
    return html.replace(/:([a-z0-9_+-]+):/g, (m, name) => EMOJI[name] || m);
  }

  function textObject(object) {
    if (!object) return "";
    return object.type === "mrkdwn" ? mrkdwn(object.text) : escapeHtml(object.text || "");
  }

  function el(tag, attributes, html) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value === true ? "" : value);
    }
    if (html !== undefined) node.innerHTML = html;
    return node;
  }

  function time(ts) {
    const date = new Date(parseFloat(ts) * 1000);
    return date.toLocaleTimeString([], {hour: "2-digit", minute: "2-digit"});
  }

  // Block Kit: what a person sees and uses.

  function controlsOf(ts) {
    state.controls[ts] = state.controls[ts] || {};
    return state.controls[ts];
  }

  async function act(message, block, element, value) {
    const body = {
      as: state.person,
      channel: state.channel,
      ts: message.ts,
      action_id: element.action_id,
      block_id: block.block_id,
      values: Object.assign({}, controlsOf(message.ts)),
    };
    if (value !== undefined) body.value = value;
    try {
      await call("actions", body);
      poll();
    } catch (error) {
      showActionError(error.message);
    }
  }

  function optionText(option) {
    return textObject(option.text);
  }

  function renderElement(message, block, element, sendsAtOnce) {
    const controls = controlsOf(message.ts);
    const id = `${message.ts}-${block.block_id || ""}-${element.action_id || ""}`.replace(/[^\w-]/g, "_");
    const kept = controls[element.action_id];
    switch (element.type) {
      case "button": {
        const button = el("button", {type: "button", class: `sk ${element.style || ""}`, "data-action-id": element.action_id},
          textObject(element.text));
        button.addEventListener("click", () => act(message, block, element));
        return button;
      }
      case "radio_buttons":
      case "checkboxes": {
        const multiple = element.type === "checkboxes";
        const wrapper = el("div", {class: "choices", role: multiple ? "group" : "radiogroup"});
        const chosen = kept !== undefined ? kept : (multiple
          ? (element.initial_options || []).map((o) => o.value)
          : (element.initial_option || {}).value);
        (element.options || []).forEach((option, index) => {
          const input = el("input", {
            type: multiple ? "checkbox" : "radio",
            name: id,
            id: `${id}-${index}`,
            value: option.value,
          });
          input.checked = multiple ? (chosen || []).includes(option.value) : chosen === option.value;
          input.addEventListener("change", () => {
            const value = multiple
              ? Array.from(wrapper.querySelectorAll("input:checked")).map((i) => i.value)
              : option.value;
            controls[element.action_id] = value;
            if (sendsAtOnce) act(message, block, element, value);
          });
          const label = el("label", {class: "option", for: `${id}-${index}`});
          label.appendChild(input);
          label.appendChild(el("span", {}, " " + optionText(option)));
          wrapper.appendChild(label);
        });
        return wrapper;
      }
      case "static_select":
      case "multi_static_select": {
        const multiple = element.type === "multi_static_select";
        const select = el("select", {id, multiple: multiple || undefined, "aria-label": (element.placeholder || {}).text || "Choose"});
        if (!multiple) select.appendChild(el("option", {value: ""}, escapeHtml((element.placeholder || {}).text || "Choose…")));
        const groups = element.option_groups || [{options: element.options || []}];
        const chosen = kept !== undefined ? kept : (multiple
          ? (element.initial_options || []).map((o) => o.value) : (element.initial_option || {}).value);
        for (const group of groups) {
          for (const option of group.options || []) {
            const node = el("option", {value: option.value}, optionText(option));
            node.selected = multiple ? (chosen || []).includes(option.value) : chosen === option.value;
            select.appendChild(node);
          }
        }
        select.addEventListener("change", () => {
          const value = multiple ? Array.from(select.selectedOptions).map((o) => o.value) : select.value;
          controls[element.action_id] = value;
          if (sendsAtOnce && value !== "") act(message, block, element, value);
        });
        return select;
      }
      case "plain_text_input": {
        const input = element.multiline
          ? el("textarea", {id, rows: 3, placeholder: (element.placeholder || {}).text})
          : el("input", {type: "text", id, placeholder: (element.placeholder || {}).text});
        input.value = kept !== undefined ? kept : (element.initial_value || "");
        input.addEventListener("input", () => { controls[element.action_id] = input.value; });
        return input;
      }
      case "overflow": {
        const select = el("select", {id, "aria-label": "More actions"});
        select.appendChild(el("option", {value: ""}, "⋯"));
        for (const option of element.options || []) select.appendChild(el("option", {value: option.value}, optionText(option)));
        select.addEventListener("change", () => { if (select.value) act(message, block, element, select.value); });
        return select;
      }
      case "image":
        return el("img", {src: element.image_url, alt: element.alt_text || "", width: 20, height: 20});
      default:
        if (element.text !== undefined) return el("span", {}, typeof element.text === "string" ? mrkdwn(element.text) : textObject(element));
        return el("span", {class: "unsupported"}, escapeHtml(`[${element.type}]`));
    }
  }

  function renderBlock(message, block) {
    const node = el("div", {class: `block ${block.type}`, "data-block-id": block.block_id});
    switch (block.type) {
      case "section": {
        if (block.text) node.appendChild(el("div", {class: "text"}, textObject(block.text)));
        if (block.fields) {
          const fields = el("div", {class: "fields"});
          block.fields.forEach((field) => fields.appendChild(el("div", {}, textObject(field))));
          node.appendChild(fields);
        }
        if (block.accessory) node.appendChild(renderElement(message, block, block.accessory, true));
        return node;
      }
      case "context":
        (block.elements || []).forEach((element) =>
          node.appendChild(element.type === "image" ? renderElement(message, block, element, false) : el("span", {}, textObject(element) + " ")));
        return node;
      case "actions": {
        const elements = el("div", {class: "elements"});
        (block.elements || []).forEach((element) => elements.appendChild(renderElement(message, block, element, true)));
        node.appendChild(elements);
        return node;
      }
      case "input": {
        const group = el("fieldset", {});
        group.appendChild(el("legend", {class: "input-label"}, textObject(block.label)));
        if (block.hint) group.appendChild(el("div", {class: "context"}, textObject(block.hint)));
        group.appendChild(renderElement(message, block, block.element || {}, Boolean(block.dispatch_action)));
        node.appendChild(group);
        return node;
      }
      case "header":
        node.innerHTML = textObject(block.text);
        return node;
      case "divider":
        node.appendChild(el("hr"));
        return node;
      case "image":
        node.appendChild(el("img", {src: block.image_url, alt: block.alt_text || "", style: "max-width: 360px"}));
        return node;
      default:
        return null;  // rich_text repeats the text; task cards and plans are shown as cards
    }
  }

  function hasShownBlocks(message) {
    return (message.blocks || []).some((block) => !["rich_text", "task_card", "plan"].includes(block.type));
  }

  function renderCards(message) {
    const list = el("ul", {class: "cards", "aria-label": "Task cards"});
    for (const card of message.cards) {
      const item = el("li", {class: `card status-${card.status}`, "data-card-id": card.id, "data-status": card.status});
      item.appendChild(el("span", {class: "icon", "aria-label": card.status}));
      item.appendChild(el("span", {class: "title"}, escapeHtml(card.title)));
      if (card.details) item.appendChild(el("div", {class: "details"}, mrkdwn(card.details)));
      if (card.output) item.appendChild(el("div", {class: "output"}, mrkdwn(card.output)));
      list.appendChild(item);
    }
    return list;
  }

  function renderReactions(message) {
    const bar = el("div", {class: "reactions"});
    const myName = state.names[state.person];
    for (const reaction of message.reactions) {
      const mine = reaction.people.includes(myName);
      const chip = el("button", {
        type: "button", class: `reaction${mine ? " mine" : ""}`, title: reaction.people.join(", "),
        "data-reaction": reaction.name,
      }, `${EMOJI[reaction.name] || ":" + escapeHtml(reaction.name) + ":"} ${reaction.count}`);
      if (!mine) chip.addEventListener("click", () => react(message, reaction.name));
      bar.appendChild(chip);
    }
    return bar;
  }

  async function stopSession(root) {
    try {
      await call("session-stops", {as: state.person, channel: state.channel, thread_ts: root.ts});
      poll();
    } catch (error) {
      showActionError(error.message);
    }
  }

  async function stopStream(message) {
    try {
      await call("stream-stops", {as: state.person, channel: state.channel, ts: message.ts});
      poll();
    } catch (error) {
      showActionError(error.message);
    }
  }

  async function react(message, name) {
    try {
      await call("reactions", {as: state.person, channel: state.channel, ts: message.ts, name});
      poll();
    } catch (error) {
      showActionError(error.message);
    }
  }

  // A legacy attachment (another app's alert) as Slack draws it: a coloured bar, title, text, fields.
  function renderAttachment(attachment) {
    const colors = {danger: "#e01e5a", warning: "#ecb22e", good: "#2eb67d"};
    const node = el("div", {class: "attachment", style: `border-left: 4px solid ${colors[attachment.color] || "#ddd"}; padding-left: 8px; margin: 4px 0`});
    if (attachment.title) node.appendChild(el("div", {class: "attachment-title"}, `<b>${escapeHtml(attachment.title)}</b>`));
    if (attachment.text) node.appendChild(el("div", {class: "text"}, mrkdwn(attachment.text)));
    for (const field of attachment.fields) {
      node.appendChild(el("div", {class: "attachment-field"}, `<b>${escapeHtml(field.title)}</b> ${escapeHtml(field.value)}`));
    }
    return node;
  }

  // A shared file as Slack shows it: an image inline, any other file as its name and size.
  function renderFile(file) {
    const node = el("div", {class: "file"});
    if (file.image) {
      node.appendChild(el("img", {src: file.image, alt: file.title || file.name, class: "file-image"}));
    }
    const size = file.size >= 1000 ? `${Math.round(file.size / 1000)} KB` : `${file.size} B`;
    node.appendChild(el("div", {class: "file-name"}, `<b>${escapeHtml(file.name)}</b> <span class="time">${escapeHtml(file.mimetype)} · ${size}</span>`));
    return node;
  }

  function readAsBase64(file) {
    return new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(String(reader.result).split(",", 2)[1] || "");
      reader.onerror = () => reject(new Error(`${file.name} could not be read.`));
      reader.readAsDataURL(file);
    });
  }

  async function attachedFiles(input) {
    const files = [];
    for (const file of (input && input.files) || []) {
      files.push({name: file.name, type: file.type || "application/octet-stream", content: await readAsBase64(file)});
    }
    return files;
  }

  function renderMessage(message, inThread) {
    const node = el("div", {
      class: `message${message.only_visible_to_you ? " ephemeral" : ""}${message.author.is_bot ? " bot" : ""}`,
      "data-ts": message.ts,
    });
    if (message.only_visible_to_you) node.appendChild(el("div", {class: "only-you"}, "👁 Only visible to you"));
    const head = el("div", {class: "head"});
    head.appendChild(el("span", {class: "author"}, escapeHtml(message.author.name)));
    if (message.author.is_bot) head.appendChild(el("span", {class: "app-badge"}, "APP"));
    head.appendChild(el("span", {class: "time"}, time(message.ts)));
    node.appendChild(head);
    if (message.plan_title) node.appendChild(el("div", {class: "plan-title"}, escapeHtml(message.plan_title)));
    if (message.cards.length) node.appendChild(renderCards(message));
    if (message.text) node.appendChild(el("div", {class: "text"}, mrkdwn(message.text) + (message.edited ? ' <span class="time">(edited)</span>' : "")));
    for (const attachment of message.attachments || []) node.appendChild(renderAttachment(attachment));
    for (const file of message.files || []) node.appendChild(renderFile(file));
    if (hasShownBlocks(message)) {
      const blocks = el("div", {class: "blocks"});
      for (const block of message.blocks) {
        const shown = renderBlock(message, block);
        if (shown) blocks.appendChild(shown);
      }
      node.appendChild(blocks);
    }
    if (message.streaming) {
      const streaming = el("div", {class: "streaming"}, "streaming… ");
      // Slack's own stop on a streamed reply: the app's next append is told the person stopped it.
      const stop = el("button", {type: "button", class: "stream-stop"}, "Stop");
      stop.addEventListener("click", () => stopStream(message));
      streaming.appendChild(stop);
      node.appendChild(streaming);
    }
    if (message.reactions.length) node.appendChild(renderReactions(message));
    if (!inThread && message.replies && message.replies.length) {
      const count = message.replies.filter((r) => !r.only_visible_to_you || true).length;
      const link = el("button", {type: "button", class: "replies-link"}, `${count} ${count === 1 ? "reply" : "replies"}`);
      link.addEventListener("click", () => openThread(message.ts));
      node.appendChild(link);
    }
    if (!message.deleted && !message.only_visible_to_you) {
      const bar = el("div", {class: "actions-bar"});
      for (const name of PICKER) {
        const button = el("button", {type: "button", "aria-label": `React with ${name}`, "data-react": name}, EMOJI[name]);
        button.addEventListener("click", () => react(message, name));
        bar.appendChild(button);
      }
      // The message's menu: the app's shortcut (Slack lists it under "More actions").
      const ask = el("button", {type: "button", "aria-label": "Ask Agent Kourier about this message", title: "Ask Agent Kourier about this message"}, "⚡");
      ask.addEventListener("click", () => useShortcut(message));
      bar.appendChild(ask);
      if (!inThread) {
        const reply = el("button", {type: "button", "aria-label": "Reply in thread"}, "💬");
        reply.addEventListener("click", () => openThread(message.ts));
        bar.appendChild(reply);
      }
      node.appendChild(bar);
    }
    return node;
  }

  // Keyed rendering: a message is drawn again only when it changed, so a control being filled in
  // keeps its focus and what was typed while the channel is polled.
  function renderList(container, key, messages, inThread) {
    const wanted = [];
    const atBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 40;
    for (const message of messages) {
      const id = `${key}:${message.ts}`;
      const signature = JSON.stringify([message, state.person, inThread ? null : (message.replies || []).length]);
      let entry = state.rendered.get(id);
      if (!entry || entry.signature !== signature) {
        const node = renderMessage(message, inThread);
        if (entry && entry.node.parentNode === container) container.replaceChild(node, entry.node);
        entry = {signature, node};
        state.rendered.set(id, entry);
      }
      wanted.push(entry.node);
    }
    wanted.forEach((node, index) => {
      if (container.children[index] !== node) container.insertBefore(node, container.children[index] || null);
    });
    while (container.children.length > wanted.length) container.removeChild(container.lastChild);
    if (atBottom) container.scrollTop = container.scrollHeight;
  }

  function render() {
    renderList($("messages"), "channel", state.messages, false);
    const root = state.messages.find((m) => m.ts === state.thread);
    const pane = $("thread");
    if (!root) {
      pane.hidden = true;
      return;
    }
    pane.hidden = false;
    renderList($("thread-messages"), "thread", [root, ...root.replies], true);
    const status = $("thread-status");
    status.textContent = root.status ? `${state.world.bot.name} ${root.status}` : "";
    // Slack's agent session: while the app says it is processing, the thread offers Slack's own stop.
    if (root.session === "processing") {
      const stop = el("button", {type: "button", class: "session-stop"}, "Stop");
      stop.addEventListener("click", () => stopSession(root));
      status.appendChild(el("span", {class: "session-processing"}, `${state.world.bot.name} is processing… `));
      status.appendChild(stop);
    }
  }

  function openThread(ts) {
    state.thread = ts;
    render();
    $("reply").focus();
  }

  // One request at a time, each answered when the channel changes for this person (or after
  // WAIT_SECONDS). poll() after an action asks at once, without waiting.
  let generation = 0;
  async function poll() {
    if (!state.person) return;
    const mine = ++generation;
    const params = new URLSearchParams({as: state.person, channel: state.channel});
    try {
      const answer = await call(`channel?${params}`);
      if (mine !== generation) return;
      state.messages = answer.messages;
      state.version = answer.version;
      render();
    } catch (error) {
      showActionError(error.message);
    }
  }

  async function watch() {
    for (;;) {
      const person = state.person;
      const params = new URLSearchParams({as: person, channel: state.channel, since: state.version, wait: WAIT_SECONDS});
      state.watching = new AbortController();
      try {
        const answer = await call(`channel?${params}`, undefined, state.watching.signal);
        if (person === state.person) {
          state.messages = answer.messages;
          state.version = answer.version;
          render();
        }
      } catch (error) {
        // Aborted (another person picked): ask again at once; else the service may be restarting.
        if (error.name !== "AbortError") await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
  }

  async function useShortcut(message) {
    try {
      await call("shortcuts", {as: state.person, channel: state.channel, ts: message.ts});
      state.thread = message.ts;  // the turn it starts answers in the message's thread: open it
      await poll();
    } catch (error) {
      showActionError(error.message);
    }
  }

  // The Home tab: the view the app published for the person, its buttons pressed as in Slack.
  function renderHome(view) {
    const pane = $("home-view");
    pane.innerHTML = "";
    if (!view) {
      pane.appendChild(el("p", {class: "home-empty"}, "The app published no Home tab for you."));
      return;
    }
    for (const block of view.blocks) {
      if (block.type === "header") pane.appendChild(el("h3", {}, escapeHtml(textObject(block.text))));
      else if (block.type === "divider") pane.appendChild(el("hr", {}));
      else if (block.type === "section") pane.appendChild(el("div", {class: "text"}, mrkdwn(block.text.text)));
      else if (block.type === "actions") {
        const row = el("div", {class: "home-actions"});
        for (const element of block.elements) {
          if (element.type !== "button") continue;
          const button = el("button", {type: "button", class: element.style || ""}, escapeHtml(textObject(element.text)));
          button.addEventListener("click", () => pressHome(block, element));
          row.appendChild(button);
        }
        pane.appendChild(row);
      }
    }
  }

  async function openHome() {
    $("home").hidden = false;
    try {
      const answer = await call("home", {as: state.person});
      renderHome(answer.view);
    } catch (error) {
      showActionError(error.message);
    }
  }

  async function pressHome(block, element) {
    try {
      await call("home-actions", {as: state.person, action_id: element.action_id, block_id: block.block_id});
      await openHome();
      await poll();
    } catch (error) {
      showActionError(error.message);
    }
  }

  async function send(textarea, errorBox, threadTs, fileInput) {
    const text = textarea.value;
    errorBox.textContent = "";
    if (!threadTs && text.startsWith("/")) {  // a slash command, typed in the message box as in Slack
      try {
        await call("commands", {as: state.person, channel: state.channel, text: text.trim()});
        textarea.value = "";
        await poll();
      } catch (error) {
        errorBox.textContent = error.message;
      }
      return;
    }
    try {
      const files = await attachedFiles(fileInput);
      const body = {as: state.person, channel: state.channel, text, thread_ts: threadTs || null};
      if (files.length) body.files = files;
      const answer = await call("messages", body);
      textarea.value = "";
      if (fileInput) fileInput.value = "";
      // The thread of a message that mentions the bot is where its answer streams in: open it.
      if (!threadTs && answer.text.includes(`<@${state.world.bot.id}>`)) state.thread = answer.ts;
      await poll();
    } catch (error) {
      errorBox.textContent = error.message;
    }
  }

  function submitOnEnter(textarea, form) {
    textarea.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
  }

  async function start() {
    state.world = await call("world");
    $("workspace").textContent = state.world.team;
    state.bot = state.world.bot;
    state.names[state.world.bot.id] = state.world.bot.name;
    for (const group of state.world.groups) state.groups[group.id] = group.handle;
    const picker = $("person");
    const directory = $("directory");
    for (const person of state.world.people) {
      state.names[person.id] = person.name;
      const groups = person.groups.length ? ` (${person.groups.map((g) => "@" + g).join(", ")})` : "";
      picker.appendChild(el("option", {value: person.id}, escapeHtml(person.name + groups)));
      directory.appendChild(el("li", {}, escapeHtml(`${person.name} @${person.handle}${groups}`)));
    }
    directory.appendChild(el("li", {}, escapeHtml(`${state.world.bot.name} (app)`)));
    const remembered = sessionStorage.getItem("simulator-person");
    state.person = state.world.people.some((p) => p.id === remembered) ? remembered : state.world.people[0].id;
    picker.value = state.person;
    picker.addEventListener("change", () => {
      state.person = picker.value;
      sessionStorage.setItem("simulator-person", state.person);
      state.rendered.clear();
      $("messages").innerHTML = "";
      $("thread-messages").innerHTML = "";
      state.version = "";
      if (state.watching) state.watching.abort();
      poll();
    });
    const channels = $("channels");
    state.world.channels.forEach((channel, index) => {
      channels.appendChild(el("li", {class: index === 0 ? "active" : ""}, escapeHtml("# " + channel.name)));
    });
    state.channel = state.world.channels[0].id;
    $("channel-name").textContent = "#" + state.world.channels[0].name;
    $("composer").addEventListener("submit", (event) => { event.preventDefault(); send($("message"), $("message-error"), null, $("message-file")); });
    $("reply-composer").addEventListener("submit", (event) => { event.preventDefault(); send($("reply"), $("reply-error"), state.thread, $("reply-file")); });
    submitOnEnter($("message"), $("composer"));
    submitOnEnter($("reply"), $("reply-composer"));
    $("close-thread").addEventListener("click", () => { state.thread = null; render(); });
    if (state.world.alerts_app) {
      const postAlert = $("post-alert");
      postAlert.textContent = `Post an alert as ${state.world.alerts_app.name}`;
      postAlert.hidden = false;
      postAlert.addEventListener("click", async () => {
        try {
          const answer = await call("alerts", {channel: state.channel});
          state.thread = answer.ts;  // its thread opens: reply there, then mention the agent
          await poll();
        } catch (error) {
          showActionError(error.message);
        }
      });
    }
    $("open-home").addEventListener("click", () => openHome());
    $("close-home").addEventListener("click", () => { $("home").hidden = true; });
    // The admin links a turn or an alert to its thread here (#thread=TS): open it.
    const linked = new URLSearchParams(location.hash.slice(1)).get("thread");
    if (linked) state.thread = linked;
    await poll();
    // The boxes take input only once sending works (a person never types into a dead page).
    $("message").disabled = false;
    $("reply").disabled = false;
    document.body.dataset.ready = "true";
    watch();
  }

  start().catch((error) => showActionError(error.message));
})();
