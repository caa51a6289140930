/* Live session page glue for htmx's ws extension. Small on purpose; the server does the work.
 *
 * - Every (re)connect carries the page's resume point: ws://.../?last_seq=N, where N is
 *   #ws-seq[data-seq], kept current by the header element each server frame swaps in.
 * - Frames already applied (an events frame ending at or before N) are dropped; a frame that
 *   starts beyond N+1 means something was missed, so the page asks to resume from N.
 * - A frame too large for one websocket message comes in parts ("<!--ws-part I/N-->" and a slice
 *   of it, back to back; see sessions_app/frames.py). They are joined here and the whole frame is
 *   handed to the ws extension as one message, so everything below sees only whole frames. A new
 *   socket forgets half-received parts: its resume sends the frame again.
 * - Appends apply only at the offset the page holds for that message (data-len, code points),
 *   so a replayed append never duplicates text.
 * - The socket reconnects after any drop that the extension itself would not retry
 *   (it only retries 1006/1011/1012/1013), when the tab becomes visible and when the network
 *   comes back. 4401 (not signed in) goes to the login page; 4410 (the login ended: logout,
 *   deactivation, a new password, a revoked session) says so, then goes to the login page, and
 *   nothing reconnects; 4429 (too many sockets of this person) shows the server's reason and
 *   retries only when the tab comes back into view or the network returns, never on a timer;
 *   4404 (no such session) stops. See sessions_app/socket_login.py.
 * - The retry banner counts down here, not on the server: each countdown element carries the
 *   retry time and the server's clock when it was rendered (data-retry-at-ms,
 *   data-server-now-ms). The offset between that and this device's clock is taken once, when the
 *   element first appears, so a phone with a wrong clock shows the same time left as a desktop.
 *   Same rule as templatetags/notices.py: whole seconds rounded up, "Retrying now…" at zero.
 * - Approval cards (sessions_app/frames.py) are rows of the transcript like messages; their times
 *   are clock times ("at 12:03") shown on this device's clock.
 * - A frame costs what it holds, not what the page holds: the swaps of a frame note the elements
 *   they put in (htmx:oobBeforeSwap) and, once the frame is applied, only those get their times
 *   rendered and their countdowns picked up; the latest prompt and answer are looked for only
 *   when a frame moved transcript rows, walking back from the end to the latest prompt.
 */
(function () {
  "use strict";

  var live = { socket: null, closing: false, ended: false, reconnectTimer: null, parts: null };
  window.kandevLive = live;

  function seqEl() { return document.getElementById("ws-seq"); }
  function currentSeq() {
    var el = seqEl();
    return el ? parseInt(el.getAttribute("data-seq") || "0", 10) : 0;
  }
  function codePoints(text) { return Array.from(text || "").length; }
  function send(frame) {
    if (live.socket && live.socket.readyState === WebSocket.OPEN) {
      live.socket.send(JSON.stringify(frame));
    }
  }
  live.send = send;

  htmx.createWebSocket = function (url) {
    var target = new URL(url, window.location.href);
    target.searchParams.set("last_seq", String(currentSeq()));
    // Two retry paths (the extension's and ours) may race; only the newest socket may live.
    var previous = live.socket;
    live.parts = null;
    live.socket = new WebSocket(target.toString());
    if (previous && previous.readyState <= WebSocket.OPEN) previous.close();
    return live.socket;
  };

  // Errors (409 while running, 422 for an empty prompt) carry the message to show: swap them.
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "4..", swap: true, error: false },
    { code: "...", swap: false, error: true },
  ];

  var HEADER = /^<span id="ws-seq" data-kind="(\w+)" data-from="(\d+)" data-seq="(\d+)"/;
  var PART = /^<!--ws-part (\d+)\/(\d+)-->/;
  var stickToBottom = true;

  // Collects one frame's parts; with the last one, replays the whole frame on the socket as if it
  // had come in one message (synchronously, so it keeps its place before the next frame).
  function takePart(part, message) {
    var index = parseInt(part[1], 10), count = parseInt(part[2], 10);
    if (index === 1) live.parts = [];
    if (!live.parts || live.parts.length !== index - 1) { live.parts = null; return; }
    live.parts.push(message.slice(part[0].length));
    if (index < count) return;
    var whole = live.parts.join("");
    live.parts = null;
    live.socket.dispatchEvent(new MessageEvent("message", { data: whole }));
  }

  document.addEventListener("htmx:wsBeforeMessage", function (evt) {
    var part = PART.exec(evt.detail.message);
    if (part) { evt.preventDefault(); takePart(part, evt.detail.message); return; }
    var head = HEADER.exec(evt.detail.message);
    if (!head || head[1] !== "events") return;
    var first = parseInt(head[2], 10), last = parseInt(head[3], 10), have = currentSeq();
    if (last <= have) { evt.preventDefault(); return; }
    if (first > have + 1) { evt.preventDefault(); send({ type: "resume", last_seq: have }); }
  });

  document.addEventListener("htmx:oobBeforeSwap", function (evt) {
    var fragment = evt.detail.fragment, target = evt.detail.target;
    if (!fragment) return;
    // An element for beforeend / innerHTML swaps, a DocumentFragment holding it for outerHTML.
    var created = fragment.getAttribute && fragment.getAttribute("data-created");
    if (created && document.getElementById(created)) { evt.detail.shouldSwap = false; return; }
    var offset = fragment.getAttribute ? fragment.getAttribute("data-offset") : null;
    if (offset === null) { noteSwap(target, fragment); return; }
    // An append: text into a row already there, so nothing below needs to look at it.
    var start = parseInt(offset, 10), end = parseInt(fragment.getAttribute("data-end"), 10);
    var have = parseInt(target.getAttribute("data-len") || String(codePoints(target.textContent)), 10);
    if (start === have) { target.setAttribute("data-len", String(end)); return; }
    evt.detail.shouldSwap = false;
    if (end > have) send({ type: "snapshot" }); // a gap or an overlap: start over from the truth
  });

  // What the current frame's swaps put in the page, for afterFrame. htmx moves the fragment's
  // children into the page, so they are the inserted elements once the swap is done.
  var inserted = [], rowsMoved = false;
  function noteSwap(target, fragment) {
    if (target.id === "transcript" || target.parentElement && target.parentElement.id === "transcript") rowsMoved = true;
    for (var child = fragment.firstElementChild; child; child = child.nextElementSibling) inserted.push(child);
  }
  function afterFrame() {
    var nodes = inserted;
    inserted = [];
    nodes.forEach(function (node) {
      if (!node.isConnected) return;
      renderTimesIn(node);
      watchCountdownsIn(node);
      openToolBlocksIn(node);
    });
    if (rowsMoved) { rowsMoved = false; markLatest(); }
    tickCountdowns();
  }

  function nearBottom() {
    var el = document.scrollingElement || document.documentElement;
    var box = document.getElementById("live");
    var scroller = box && box.scrollHeight > box.clientHeight ? box : el;
    return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80;
  }
  function scrollToBottom() {
    var box = document.getElementById("live");
    if (box) box.scrollTop = box.scrollHeight;
  }

  // Whether to follow new text is decided when the reader scrolls, and the scroll to the bottom
  // happens once per painted frame: measuring the page on every websocket frame forced a layout
  // of the whole transcript each time, which a multi-megabyte answer turned into seconds.
  // Only the reader stops the following: a scroll event also comes when the page moves by
  // itself (the reconnect notice showing or going clamps the scroll position), and it may be
  // handled after the next frame made the page taller, which once read as "scrolled up" and
  // left a phone behind its replayed rows. So a scroll away from the bottom counts only just
  // after the reader's own wheel, touch, key or press on the scroller; coming back near the
  // bottom always resumes the following.
  var scrollPending = false, readerMovedAt = -Infinity;
  var SCROLL_KEYS = ["PageUp", "PageDown", "ArrowUp", "ArrowDown", "Home", "End", " "];
  function readerMoved() { readerMovedAt = performance.now(); }
  document.addEventListener("wheel", readerMoved, { capture: true, passive: true });
  document.addEventListener("touchmove", readerMoved, { capture: true, passive: true });
  document.addEventListener("keydown", function (evt) {
    var typing = evt.target.closest && evt.target.closest("textarea, input, select, [contenteditable]");
    if (!typing && SCROLL_KEYS.indexOf(evt.key) >= 0) readerMoved();
  }, true);
  document.addEventListener("pointerdown", function (evt) {
    // A press on the scroller itself is its scrollbar being dragged.
    if (evt.target === document.getElementById("live") || evt.target === document.documentElement) readerMoved();
  }, true);
  document.addEventListener("scroll", function () {
    if (nearBottom()) stickToBottom = true;
    else if (performance.now() - readerMovedAt < 1000) stickToBottom = false;
  }, true);
  document.addEventListener("htmx:wsAfterMessage", function () {
    if (!stickToBottom || scrollPending) return;
    scrollPending = true;
    requestAnimationFrame(function () { scrollPending = false; if (stickToBottom) scrollToBottom(); });
  });

  function showConnection(visible, text) {
    var el = document.getElementById("connection");
    if (!el) return;
    el.textContent = text || "Reconnecting\u2026";
    el.hidden = !visible;
  }
  // The page names the login URL (base.html renders it from the URLconf), so it is never guessed.
  function goToLogin() {
    var login = document.body.getAttribute("data-login-url");
    window.location.assign(login + "?next=" + encodeURIComponent(location.pathname));
  }
  // The server's own words (its too_many_sockets error frame came just before the close).
  function tooManySocketsText() {
    var error = document.getElementById("ws-error");
    if (error && error.getAttribute("data-code") === "too_many_sockets" && error.textContent) return error.textContent;
    return "Too many live pages are open. Close some tabs or windows, then reload this page.";
  }

  var wrapper = null;
  document.addEventListener("htmx:wsOpen", function (evt) {
    wrapper = evt.detail.socketWrapper;
    showConnection(false);
  });

  function scheduleReconnect(delay) {
    if (live.reconnectTimer || !wrapper || live.ended) return;
    live.reconnectTimer = setTimeout(function () {
      live.reconnectTimer = null;
      if (!live.socket || live.socket.readyState === WebSocket.CLOSED) wrapper.reconnect();
    }, delay);
  }

  document.addEventListener("htmx:wsClose", function (evt) {
    var code = evt.detail.event.code;
    if (live.closing || evt.detail.event.target !== live.socket) return; // a replaced socket
    if (code === 4401) { live.ended = true; goToLogin(); return; }
    if (code === 4410) {
      live.ended = true;
      showConnection(true, "You have been signed out. Taking you to the sign-in page\u2026");
      setTimeout(goToLogin, 1500);
      return;
    }
    if (code === 4429) { showConnection(true, tooManySocketsText()); return; }
    if (code === 4404) { showConnection(false); return; }
    showConnection(true);
    // The extension retries these itself; everything else (a clean close by a proxy, a socket
    // closed on purpose) is ours to retry.
    if ([1006, 1011, 1012, 1013].indexOf(code) < 0) scheduleReconnect(300 + Math.random() * 700);
  });

  window.addEventListener("beforeunload", function () { live.closing = true; });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible" && live.socket && live.socket.readyState === WebSocket.CLOSED) scheduleReconnect(0);
  });
  window.addEventListener("online", function () {
    if (live.socket && live.socket.readyState === WebSocket.CLOSED) scheduleReconnect(0);
  });

  // The composer: clear it once the server took the prompt; Enter (or Ctrl/Cmd+Enter) sends,
  // Shift+Enter is a new line, Esc stops a running turn (or cancels a waiting retry: the same
  // thing). Focus comes back to the box after Send, Resume, Start fresh, Regenerate, an edit and
  // a target switch. In the edit form Ctrl/Cmd+Enter sends and Esc closes it.
  var touchOnly = window.matchMedia("(hover: none) and (pointer: coarse)");
  function composerText() { return document.getElementById("composer-text"); }
  function focusComposer() {
    var box = composerText();
    if (box && document.activeElement !== box) box.focus({ preventScroll: true });
  }
  live.focusComposer = focusComposer;
  document.addEventListener("htmx:afterRequest", function (evt) {
    var elt = evt.detail.elt;
    if (!elt) return;
    if (elt.id === "composer" && evt.detail.successful && evt.detail.xhr.status === 200) elt.reset();
    if (elt.id === "composer") focusComposer();
  });
  // Resume, Start fresh and Stop are swapped away by the websocket, often before their own
  // response (whose events then fire on a detached button and never reach the document), so
  // focus moves to the composer as soon as one is pressed.
  document.addEventListener("click", function (evt) {
    if (evt.target.closest && evt.target.closest(".recovery-actions .btn, #composer-actions .btn--stop, .turn-action.regenerate")) {
      setTimeout(focusComposer, 0);
    }
  });
  document.addEventListener("submit", function (evt) {
    if (evt.target.closest && evt.target.closest(".edit-form, .recovery-switch")) setTimeout(focusComposer, 0);
  });
  document.addEventListener("keydown", function (evt) {
    var box = composerText();
    var editing = evt.target.closest && evt.target.closest(".edit-form");
    if (editing) {
      if (evt.key === "Escape") { evt.preventDefault(); closeEdit(editing); return; }
      if (evt.key === "Enter" && (evt.ctrlKey || evt.metaKey) && !evt.isComposing) { evt.preventDefault(); editing.requestSubmit(); }
      return;
    }
    if (evt.key === "Escape" && box) {
      var stop = document.querySelector("#composer-actions .btn--stop");
      if (stop && !evt.defaultPrevented) { evt.preventDefault(); stopTurn(stop); }
      return;
    }
    if (evt.target !== box || evt.key !== "Enter" || evt.isComposing || evt.keyCode === 229) return;
    if (evt.shiftKey || evt.altKey) return; // a new line
    // On touch screens (no hardware keyboard to speak of) Enter is a new line; Send sends.
    if (!(evt.ctrlKey || evt.metaKey) && touchOnly.matches) return;
    evt.preventDefault();
    var sendButton = document.querySelector("#composer-actions .btn--send");
    if (sendButton) sendButton.click(); else box.form.requestSubmit();
  });
  // Esc posts the stop itself rather than clicking Stop: htmx remembers a clicked submit button
  // on its form until focus leaves it, and a click without focus (Stop is then swapped away)
  // left the form remembering Stop, so the next Enter posted the stop URL instead of the
  // prompt. Enter likewise sends through Send, so the form's submitter is always the right one.
  function stopTurn(stop) {
    htmx.ajax("POST", stop.getAttribute("hx-post"), { source: stop, swap: "none" });
    setTimeout(focusComposer, 0);
  }

  // Regenerate and Edit belong to the latest prompt and its answer only: marked whenever a frame
  // moved transcript rows (they arrive and get replaced live), so the buttons show on the right
  // rows everywhere. The latest answer is the last finished one after the latest prompt, so the
  // walk back from the end stops at that prompt: it costs the last turn, not the transcript.
  var marked = [];
  function markLatest() {
    var transcript = document.getElementById("transcript");
    var latestPrompt = null, latestAnswer = null;
    for (var row = transcript && transcript.lastElementChild; row; row = row.previousElementSibling) {
      if (!row.classList.contains("msg") || row.classList.contains("msg--replaced") || row.hidden) continue;
      var role = row.getAttribute("data-role");
      if (role === "user") { latestPrompt = row; break; }
      if (!latestAnswer && role === "assistant" && row.getAttribute("data-status") !== "streaming") latestAnswer = row;
    }
    var latest = [latestPrompt, latestAnswer].filter(Boolean);
    marked.forEach(function (old) { if (latest.indexOf(old) < 0) old.removeAttribute("data-latest"); });
    latest.forEach(function (row) { row.setAttribute("data-latest", ""); });
    marked = latest;
  }
  live.markLatest = markLatest;
  document.addEventListener("DOMContentLoaded", markLatest);

  // Edit opens a small form under the prompt; Save and send posts it over htmx, and the
  // websocket then replaces the old prompt (form included) for every viewer.
  function closeEdit(form) {
    var row = form.closest(".msg");
    form.remove();
    var button = row && row.querySelector(".edit-prompt");
    if (button) { button.hidden = false; button.focus(); }
  }
  document.addEventListener("click", function (evt) {
    var cancel = evt.target.closest && evt.target.closest(".edit-form .edit-cancel");
    if (cancel) { closeEdit(cancel.closest(".edit-form")); return; }
    var button = evt.target.closest && evt.target.closest("button.edit-prompt");
    if (!button) return;
    var row = button.closest(".msg");
    if (row.querySelector(".edit-form")) return;
    // The form's markup is the page's own (<template id="edit-form-template"> in session.html).
    var form = document.getElementById("edit-form-template").content.firstElementChild.cloneNode(true);
    form.setAttribute("hx-post", button.getAttribute("data-edit-url"));
    var area = form.querySelector("textarea");
    area.id = row.id + "-edit";
    form.querySelector("label").htmlFor = area.id;
    area.value = row.querySelector(".text").innerText.replace(/\n$/, "");
    row.appendChild(form);
    button.hidden = true;
    htmx.process(form);
    area.focus();
    area.setSelectionRange(area.value.length, area.value.length);
  });

  // Copy buttons: a message as it was written (an answer's markdown, kept in its
  // <template class="msg-source">, not the rendered text with its buttons' labels), or one code
  // block's source.
  function sourceText(el) { return el ? el.innerText.replace(/\n$/, "") : null; }
  function messageSource(row) {
    var source = row && row.querySelector("template.msg-source");
    if (source) return source.content.textContent;
    return sourceText(row && row.querySelector(".text"));
  }
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    var area = document.createElement("textarea");
    area.value = text; area.setAttribute("readonly", ""); area.style.position = "fixed"; area.style.opacity = "0";
    document.body.appendChild(area); area.select();
    try { document.execCommand("copy"); } finally { area.remove(); }
    return Promise.resolve();
  }
  document.addEventListener("click", function (evt) {
    var button = evt.target.closest && evt.target.closest("button[data-copy]");
    if (!button) return;
    var text = button.getAttribute("data-copy") === "code"
      ? sourceText(button.closest(".code-block").querySelector("pre"))
      : messageSource(button.closest(".msg"));
    if (text === null) return;
    copyText(text).then(function () {
      button.setAttribute("data-copied", "");
      button.textContent = "Copied";
      setTimeout(function () { button.removeAttribute("data-copied"); button.textContent = "Copy"; }, 1500);
    });
  });

  // Timestamps: relative text, the absolute local time as the title; a tap shows it in place.
  function relativeTime(then, now) {
    var seconds = Math.round((now - then) / 1000);
    if (seconds < 45) return "just now";
    var minutes = Math.round(seconds / 60);
    if (minutes < 60) return minutes + " min ago";
    var hours = Math.round(minutes / 60);
    if (hours < 24) return hours + (hours === 1 ? " hour ago" : " hours ago");
    return dayFormat.format(then);
  }
  // One formatter each for every timestamp: building one per call (toLocaleString) was most of
  // the cost of rendering a timestamp.
  var absoluteFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  var dayFormat = new Intl.DateTimeFormat(undefined, { day: "numeric", month: "short", year: "numeric" });
  var TIMES = "time.msg-time[datetime]";
  function renderTime(el, now) {
    var then = Date.parse(el.getAttribute("datetime"));
    if (isNaN(then)) return;
    var absolute = absoluteFormat.format(then);
    if (el.title !== absolute) el.title = absolute;
    var text = el.hasAttribute("data-absolute") ? absolute : relativeTime(then, now);
    if (el.textContent !== text) el.textContent = text;
  }
  // An approval's times ("by bob at 12:03", "if nobody does by 12:33") are clock times: the
  // server writes them in UTC, this shows them on the reader's clock (with the day when not today).
  var CLOCKS = "time.clock-time[datetime]";
  var clockFormat = new Intl.DateTimeFormat(undefined, { timeStyle: "short" });
  var dayClockFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  function renderClock(el, now) {
    var then = Date.parse(el.getAttribute("datetime"));
    if (isNaN(then)) return;
    var sameDay = new Date(then).toDateString() === new Date(now).toDateString();
    var text = (sameDay ? clockFormat : dayClockFormat).format(then);
    if (el.textContent !== text) el.textContent = text;
    var absolute = absoluteFormat.format(then);
    if (el.title !== absolute) el.title = absolute;
  }
  function renderTimesIn(root) {
    var now = Date.now();
    if (root.matches(TIMES)) renderTime(root, now);
    root.querySelectorAll(TIMES).forEach(function (el) { renderTime(el, now); });
    if (root.matches(CLOCKS)) renderClock(root, now);
    root.querySelectorAll(CLOCKS).forEach(function (el) { renderClock(el, now); });
  }
  // An approval card's note (the answer to this reader's own press) comes over htmx, not a frame.
  document.addEventListener("htmx:afterSwap", function (evt) {
    if (evt.detail.target && evt.detail.target.querySelectorAll) renderTimesIn(evt.detail.target);
  });
  // Every timestamp, on load and when "5 min ago" may have become "6 min ago"; frames render
  // only the ones they bring (afterFrame).
  function renderTimes() { renderTimesIn(document.documentElement); }
  live.renderTimes = renderTimes;
  document.addEventListener("click", function (evt) {
    var el = evt.target.closest && evt.target.closest("time.msg-time");
    if (!el) return;
    el.toggleAttribute("data-absolute");
    renderTime(el, Date.now());
  });
  document.addEventListener("DOMContentLoaded", renderTimes);
  setInterval(renderTimes, 30000);
  document.addEventListener("DOMContentLoaded", scrollToBottom);

  var offsets = new WeakMap(); // countdown element -> server clock minus this clock, in ms
  // verb: "Sending" for a turn held by the target's shared health (data-countdown-verb).
  function countdownText(remainingMs, verb) {
    verb = verb || "Retrying";
    if (remainingMs <= 0) return verb + " now\u2026";
    var seconds = Math.ceil(remainingMs / 1000);
    var rest = seconds % 60;
    return verb + " in " + Math.floor(seconds / 60) + ":" + (rest < 10 ? "0" : "") + rest;
  }
  var tickTimer = null;
  // The countdowns on the page: found once on load, then in what each frame inserts (afterFrame),
  // and forgotten when a swap takes them out.
  var countdowns = new Set();
  var COUNTDOWNS = "[data-retry-at-ms]";
  function watchCountdownsIn(root) {
    if (root.matches(COUNTDOWNS)) countdowns.add(root);
    root.querySelectorAll(COUNTDOWNS).forEach(function (el) { countdowns.add(el); });
  }
  // Redraws every countdown, then sleeps until the next moment one of them changes its text, so
  // "0:01" turns into "Retrying now…" when the server's retry time comes, not up to a second late.
  function tickCountdowns() {
    var now = Date.now(), next = null;
    countdowns.forEach(function (el) {
      if (!el.isConnected) { countdowns.delete(el); return; }
      if (!offsets.has(el)) offsets.set(el, parseInt(el.getAttribute("data-server-now-ms"), 10) - now || 0);
      var remaining = parseInt(el.getAttribute("data-retry-at-ms"), 10) - (now + offsets.get(el));
      var text = countdownText(remaining, el.getAttribute("data-countdown-verb"));
      if (el.textContent !== text) el.textContent = text;
      if (remaining > 0) {
        var change = ((remaining - 1) % 1000) + 1;
        next = next === null ? change : Math.min(next, change);
      }
    });
    clearTimeout(tickTimer);
    tickTimer = next === null ? null : setTimeout(tickCountdowns, next + 5);
  }
  live.countdownText = countdownText;
  // Tool blocks (templatetags/tools.py): a short one opens on a wide screen, a phone keeps every
  // block closed, by the block's length now (a running command's output that grows long closes,
  // as a reload would show it). A block the reader opened or closed stays so through every live
  // update of its tool call: the choice is kept by the block's id for the life of the page.
  var WIDE = window.matchMedia("(min-width: 50rem)");
  var blockChoices = new Map();
  document.addEventListener("click", function (evt) {
    var summary = evt.target.closest && evt.target.closest("details.tool-block > summary");
    if (summary) blockChoices.set(summary.parentElement.id, !summary.parentElement.open);
  }, true);
  function openToolBlocksIn(root) {
    var blocks = root.matches && root.matches("details.tool-block") ? [root] : root.querySelectorAll("details.tool-block");
    Array.prototype.forEach.call(blocks, function (el) {
      el.open = blockChoices.has(el.id) ? blockChoices.get(el.id) : WIDE.matches && el.hasAttribute("data-open-wide");
    });
  }
  document.addEventListener("DOMContentLoaded", function () { openToolBlocksIn(document.documentElement); });
  document.addEventListener("htmx:wsAfterMessage", afterFrame);
  watchCountdownsIn(document.documentElement);
  tickCountdowns();
})();
