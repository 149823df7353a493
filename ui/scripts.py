"""The page's own JavaScript, run in the visitor's browser: keys, links, the lesson's outline, downloads, PNGs.

Each is a string Gradio runs as an event's `js` (or the page's, for ON_LOAD); none reaches the server.
"""

from __future__ import annotations

import json

from visuals.export import contrast_css, page_css, png_js
from visuals.lesson import LESSON

KEYBOARD = """
() => {
  const keys = {ArrowLeft: "ll-back", ArrowRight: "ll-forward", " ": "ll-play"};
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || !(event.key in keys)) return;
    // a focused control or scroll region keeps its own keys (space presses a button, arrows scroll)
    const own = "input, textarea, select, button, a, [contenteditable], [role=region], [role=tab], [role=slider]";
    if (event.target.closest && event.target.closest(own)) return;
    const button = document.getElementById(keys[event.key]);
    if (button) { event.preventDefault(); button.click(); }
  });
}
"""

# A step press (◀ Step, Step ▶, their arrow keys, a tap) moves the step slider by one, within its ends, in the browser
# at once, and fires the slider's input event, which draws that step (player.scrub, trigger_mode "always_last": a
# press while a step is being drawn is drawn after it, the slider's latest value). So a press never waits on the one
# before it and none is dropped. When the server stepped from the index the page sent, Gradio skipped a press made
# while the previous one was in flight (trigger_mode "once"), without a word: a second press within a round trip,
# or one made as the caption changed but before Gradio cleared its request, did nothing.
STEP_BY = """
() => {
  const range = document.querySelector("#ll-step input[type=range]");
  if (!range) return;
  const to = Math.min(Math.max(Number(range.value) + %d, Number(range.min)), Number(range.max));
  if (String(to) === range.value) return;
  range.value = String(to);
  range.dispatchEvent(new Event("input", { bubbles: true }));
}
"""

# For a screen reader: the step's caption is announced when it changes (an aria-live region on the caption's
# block, which Gradio keeps while it swaps the caption inside), each of the lesson's step buttons, which
# Gradio draws as a bare number or tick, is named by its step, each slider's reset button by its slider, and the
# footer's icons are not read twice.
# The high-contrast view's CSS is added to the page unscoped (Gradio scopes the app's own CSS to its
# container; this one is rooted at <html>).
ACCESSIBLE = f"""
() => {{
  const titles = {json.dumps([item.title for item in LESSON])};
  const style = document.createElement("style");
  style.id = "ll-contrast-css";
  style.textContent = {json.dumps(contrast_css())};
  document.head.append(style);
  const label = () => {{
    const caption = document.getElementById("ll-caption");
    if (caption && !caption.hasAttribute("aria-live")) {{
      caption.setAttribute("aria-live", "polite");
      caption.setAttribute("aria-atomic", "true");
    }}
    // Gradio's toast header is a role=button (it expands grouped messages) that holds the toast's Close button:
    // a control inside a control (axe: nested-interactive). A refusal's toast holds one message, so the header is
    // made plain text; Close stays a button, and the refusal's words stay under Run once it is closed
    document.querySelectorAll(".toast-header[role=button]").forEach((header) => {{
      header.removeAttribute("role");
      header.removeAttribute("tabindex");
    }});
    // Gradio's footer gives the icon of a button or a link that has words an alt text of its own, read before the
    // words ("Runs Runs", "logo Use via API"): the icon is decoration there
    document.querySelectorAll("footer button img[alt], footer a img[alt]").forEach((image) => {{
      if (image.alt && image.closest("button, a").innerText.trim()) image.alt = "";
    }});
    // Gradio names every slider's reset button alike ("Reset to default value"): each is named by its slider
    document.querySelectorAll("button[aria-label='Reset to default value']").forEach((button) => {{
      const block = button.closest(".block");
      const label = block && block.querySelector("label");
      const field = label && label.innerText.trim();
      if (field) button.setAttribute("aria-label", `Reset ${{field}} to its default`);
    }});
    document.querySelectorAll("#ll-lesson button[role=tab]").forEach((button) => {{
      const index = Number(button.dataset.tabId);
      const name = `Lesson step ${{index + 1}}: ${{titles[index]}}`;
      if (titles[index] === undefined || button.getAttribute("aria-label") === name) return;
      button.setAttribute("aria-label", name);
    }});
  }};
  new MutationObserver(label).observe(document.body, {{ childList: true, subtree: true }});
  label();
}}
"""
# Tab out of a dropdown whose list is open: Gradio's list follows the box in the page's order and takes the Tab, then
# is removed, so the focus fell to the page's body and the list stayed drawn over the next field. Here the list is
# closed (an Escape, as a reader would press it) and the focus moves on by one, past the list, or back with Shift.
DROPDOWN_TAB = """
() => {
  document.addEventListener("keydown", (event) => {
    const box = event.target;
    if (event.key !== "Tab" || !box.matches || !box.matches("input[role=combobox][aria-expanded=true]")) return;
    event.preventDefault();
    event.stopPropagation();  // Gradio's own handler would reopen the list a tick later: every key but Escape opens it
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    const list = document.getElementById(box.getAttribute("aria-controls"));
    const tabbable = [...document.querySelectorAll("a[href], button, input, select, textarea, [tabindex]")].filter(
      (element) => element === box || (element.tabIndex >= 0 && !element.disabled && element.offsetParent !== null
        && !(list && list.contains(element)))
    );
    const next = tabbable[tabbable.indexOf(box) + (event.shiftKey ? -1 : 1)];
    if (next) next.focus();  // at once, as a Tab moves it: a later move raced the next key and a click
  }, true);
}
"""
# A focus that falls to the page's body because Gradio disabled or redrew the focused control (Run while it runs, a
# preset chosen with Enter) goes back to it once it can take it (the same id or name), or meanwhile to another button
# of its row (Run's Stop, and back): a keyboard user is not sent to the top of the page. A click elsewhere is left be,
# as is a focus that leaves a control still usable with no key pressed since the last click.
# A key pressed within HANDED_MS of the focus being handed to another button was meant for the one switched off (Enter
# on Stop as the Run ends would start another Run; a second Enter on Run as it starts would stop it): it does nothing,
# and a status line under the row (there before any words, for a screen reader) says so and to press again.
FOCUS_KEPT = """
() => {
  const HANDED_MS = 800;
  let handed = { at: 0, from: null, to: null, note: null };
  let swallowed = null;
  const named = (button) => (button.getAttribute("aria-label") || button.innerText || "").trim();
  const statusUnder = (row) => {
    let note = row.nextElementSibling;
    if (!note || !note.classList.contains("ll-handed-note")) {
      note = Object.assign(document.createElement("p"), { className: "ll-note ll-handed-note" });
      note.setAttribute("role", "status");
      row.after(note);
    }
    return note;
  };
  const hand = (from, to) => {
    const row = to.closest(".row");
    handed = { at: Date.now(), from, to, note: row ? statusUnder(row) : null };
    if (handed.note) handed.note.textContent = "";  // an earlier key's words are not this handing's
  };
  document.addEventListener("keydown", (event) => {
    if ((event.key !== "Enter" && event.key !== " ") || event.target !== handed.to) return;
    if (Date.now() - handed.at > HANDED_MS) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    swallowed = event.key;
    handed.at = 0;
    if (handed.note) {
      const [from, to] = [named(handed.from), named(handed.to)];
      handed.note.textContent = `“${from}” was switched off just before that key, which reached “${to}” and did ` +
        `nothing: press it again to use “${to}”.`;
    }
  }, true);
  document.addEventListener("keyup", (event) => {  // Space presses a button as it is released
    if (event.key === " " && swallowed === " ") event.preventDefault();
    swallowed = null;
  }, true);
  let pointed = { at: 0, on: null };
  let keyed = 0;  // the latest key pressed
  let focused = 0;  // the latest focus an element took
  document.addEventListener("focusin", () => { focused = Date.now(); }, true);
  let moved = 0;  // the latest click, key or wheel: what the visitor did after a loss ends its wait
  document.addEventListener("pointerdown", (event) => { pointed = { at: Date.now(), on: event.target }; }, true);
  document.addEventListener("keydown", () => { keyed = Date.now(); }, true);
  ["pointerdown", "keydown", "wheel"].forEach((kind) =>
    document.addEventListener(kind, () => { moved = Date.now(); }, { capture: true, passive: true }));
  const usable = (element) => element && !element.disabled && element.offsetParent !== null;
  document.addEventListener("focusout", (event) => {
    const lost = event.target;
    if (event.relatedTarget || !(lost instanceof HTMLElement)) return;
    if (Date.now() - pointed.at < 100 && !lost.contains(pointed.on)) return;  // a click elsewhere took it
    // a control still there and usable, left after a click or with no key pressed (a click on the page's background
    // answered late, a script's blur): the focus goes where the visitor sent it (given back, it kept a text box focused
    // that drank the arrow keys meant for the steps: 2026-12-07). Left after a key (a preset chosen with Enter, which
    // Gradio's list then blurs), or switched off, hidden or redrawn, it is handed on.
    if (usable(lost) && keyed <= pointed.at) return;
    const name = lost.getAttribute("aria-label");
    const row = lost.closest(".row");
    // a Run waiting in line enables its Stop when its work starts, which on a busy lab can be minutes away (the line
    // holds 48 requests): it is looked for every 200 ms for 10 minutes, or until the visitor moves (30 s before)
    let tries = 3000;
    const since = Date.now();
    const restore = () => {
      if (moved > since) return;  // the visitor went on (scrolled, clicked, typed): the page is theirs
      // a control took the focus since (a later loss's own hand-off, the page's, a script's): this one is stale (a
      // wait that ran late on a busy machine could otherwise take the focus back from where it has gone since)
      if (focused > since) return;
      const now = document.activeElement;  // the disabled control itself until the browser's focus fix-up runs
      if (now && now !== document.body && !(now === lost && !usable(lost))) return;  // it went somewhere
      const again = lost.isConnected ? lost : (lost.id && document.getElementById(lost.id))
        || (name && document.querySelector(`[aria-label="${CSS.escape(name)}"]`));
      const other = row && [...row.querySelectorAll("button")].find((button) => button !== lost && usable(button));
      const target = usable(again) ? again : other;
      if (!target) {
        if (tries-- > 0) setTimeout(restore, 200);
        return;
      }
      target.focus({ preventScroll: true });
      if (target !== again) hand(lost, target);
    };
    setTimeout(restore, 0);
  }, true);
}
"""
# A number typed into a slider's box outside its range: Gradio moves it to the nearest end without a word (when the
# box loses the focus), so the page says so under the slider. Each slider gets an empty status region at once (a
# screen reader announces a change to a region already there, not one that appears with its words), named by the
# box's aria-describedby (those on the page at load; a slider drawn later gets one as its box takes the focus, before
# anything is typed); the box's typed value is read before Gradio's handler (the capture phase), written as text, and
# the box set to the nearest end at once. Moving the slider or its reset button clears the note.
SLIDER_LIMITS = """
() => {
  let notes = 0;
  const prepare = (within) => {
    within.querySelectorAll(".block:has(input[type=range]):not(:has(.ll-slider-note))").forEach((block) => {
      const box = block.querySelector("input[type=number]");
      if (!box) return;
      const note = document.createElement("p");
      note.className = "ll-slider-note";
      note.id = `ll-slider-note-${(notes += 1)}`;
      note.setAttribute("role", "status");
      block.append(note);
      box.setAttribute("aria-describedby", note.id);
    });
  };
  const noteOf = (target) => {
    const block = target.closest && target.closest(".block");
    return block && block.querySelector(".ll-slider-note");
  };
  document.addEventListener("change", (event) => {
    const box = event.target, note = noteOf(box);
    if (!note) return;
    if (!(box instanceof HTMLInputElement) || box.type !== "number") {
      note.textContent = "";
      return;
    }
    const low = Number(box.min), high = Number(box.max), typed = box.value, number = Number(typed);
    const label = box.closest(".block").querySelector("label");
    const name = label ? label.innerText.trim() : "This setting";
    if (typed === "" || Number.isNaN(number)) {
      note.textContent = `${name} takes a number from ${low} to ${high}: it was set to ${low}.`;
      box.value = String(low);
    } else if (number < low || number > high) {
      note.textContent = `${name} goes from ${low} to ${high}: ${typed} was set to ${number < low ? low : high}.`;
      box.value = String(number < low ? low : high);  // the box shows it at once (Gradio's, when it lost the focus)
    } else {
      note.textContent = "";
    }
  }, true);
  const clear = (event) => {
    const note = noteOf(event.target);
    if (note && (event.type === "click" || event.target.type === "range")) note.textContent = "";
  };
  document.addEventListener("input", clear, true);
  document.addEventListener("click", (event) => { if (event.target.closest("button")) clear(event); }, true);
  // every slider drawn by now, and one drawn later (in an accordion opened) as its box takes the focus: no observer
  // of every change to the page, which playback makes at every step
  document.addEventListener("focusin", (event) => {
    const block = event.target.closest && event.target.closest(".block");
    if (block && block.parentElement) prepare(block.parentElement);
  }, true);
  prepare(document);
}
"""
# What the page runs once loaded: the keys, the slider notes, then the names and the live caption
ON_LOAD = (
    f"() => {{ ({KEYBOARD.strip()})(); ({DROPDOWN_TAB.strip()})(); ({FOCUS_KEPT.strip()})(); "
    f"({SLIDER_LIMITS.strip()})(); ({ACCESSIBLE.strip()})(); }}"
)

# The high-contrast view on or off (the toggle, or ?contrast=high through the page's opening), kept in its address
CONTRAST = """
(on) => {
  document.documentElement.classList.toggle("ll-contrast-high", on === true);
  const link = new URL(location.href);
  if (on === true) link.searchParams.set("contrast", "high");
  else link.searchParams.delete("contrast");
  history.replaceState(null, "", link.href);
}
"""

# The page's address becomes a link to this run or preset and step (and is copied where the browser allows).
COPY_LINK = """
(preset, step, run) => {
  if (!preset && !run) {
    alert("A link opens a preset, or a run recorded here, at a step: press Run to record your prompt first.");
    return;
  }
  const link = new URL(location.pathname, location.origin);
  link.searchParams.set(run ? "run" : "preset", run || preset);
  link.searchParams.set("step", String(step));
  if (document.documentElement.classList.contains("ll-contrast-high")) link.searchParams.set("contrast", "high");
  history.replaceState(null, "", link.href);
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(link.href).catch(() => {});
}
"""

# A class (ui.classroom): a driving page presses its hidden Publish button after each change of what it shows (other
# pages send nothing); a following page that moves its own replay (ui.page.wire_classroom) presses Stop following (shown
# only while it follows); the class's two links, sent as queries, made whole here, where the page's own address is
# known.
PUBLISH = """
() => {
  if (document.querySelector("#ll-class-status [data-drives]")) document.getElementById("ll-class-publish")?.click();
}
"""
STEP_AWAY = """
() => {
  const stop = document.getElementById("ll-class-stop");
  if (stop && stop.offsetParent !== null) stop.click();
}
"""
# A driving link's key leaves the address bar once the page has read it: a projected address shows the students' link
DROP_KEY = """
() => {
  const link = new URL(location.href);
  if (!link.searchParams.has("key")) return;
  link.searchParams.delete("key");
  history.replaceState(null, "", link.href);
}
"""
CLASS_LINKS = """
(share, drive) => {
  const page = new URL(location.pathname, location.origin).href;
  return [page + share, page + drive];
}
"""

# The page's opening event has filled this session's run (what the exports read): until then the panels show the
# default preset's step 0 drawn at build time, and an export would find no run. Marked on the body for what waits on it.
OPENED = """
() => { document.body.dataset.llOpened = "yes"; }
"""

# The lesson's panel: outlined and scrolled to the middle of the screen (on a phone, or a card taller than the screen,
# to the top: on a phone above the lesson's sheet, assets/style.css), smoothly unless the reader's system asks for
# reduced motion (then at once, as assets/style.css keeps transitions off); a lost focus goes to the step's Next
HIGHLIGHT = """
(name) => {
  document.querySelectorAll(".ll-lit").forEach((element) => element.classList.remove("ll-lit"));
  const target = name && document.getElementById("ll-" + name);
  if (!target) return;
  const card = target.closest(".ll-card") || target;
  card.classList.add("ll-lit");
  const phone = window.matchMedia("(max-width: 760px)").matches;
  // a card taller than the screen is placed from its top too: centred, its heading was above the screen
  const fromTop = () => phone || card.getBoundingClientRect().height > window.innerHeight - 16;
  const place = (behavior) =>
    fromTop()
      ? window.scrollTo({ top: window.scrollY + card.getBoundingClientRect().top - 8, behavior })
      : card.scrollIntoView({ behavior, block: "center" });
  place(window.matchMedia("(prefers-reduced-motion: reduce)").matches ? "instant" : "smooth");
  // The new step's panels, drawn meanwhile (late, on a busy machine or server), move the card: for 4 s it is placed
  // again whenever it drifts out of the screen (on a phone, where the lesson covers the lower half, from the top),
  // unless the reader scrolls or presses a key first
  let checks = 40;
  let reader = false;
  const kinds = ["wheel", "touchmove", "keydown", "pointerdown"];  // a scrollbar dragged, too
  const stop = () => { reader = true; };
  kinds.forEach((kind) => window.addEventListener(kind, stop, { passive: true }));
  const hold = () => {
    // the reader took over, another step is outlined, or the time is up
    if (reader || !card.classList.contains("ll-lit") || checks-- <= 0) {
      kinds.forEach((kind) => window.removeEventListener(kind, stop));
      return;
    }
    const box = card.getBoundingClientRect();
    const drifted = fromTop() ? Math.abs(box.top - 8) > 4 : box.top < 0 || box.bottom > window.innerHeight;
    if (drifted) place("auto");
    setTimeout(hold, 100);
  };
  setTimeout(hold, 400);
  // Next or Back hides the step that held the focus: it goes to the new step's Next (Back on the last step) once
  // drawn, so a keyboard user walks the lesson with Enter alone. A focus elsewhere on the page stays there.
  const held = document.activeElement;
  if (held && held !== document.body && !held.closest("#ll-lesson")) return;
  let tries = 40;
  const settle = () => {
    const moves = "#ll-lesson button[id^=ll-next-], #ll-lesson button[id^=ll-back-]";
    const shown = [...document.querySelectorAll(moves)].filter((button) => button.offsetParent);
    const target = shown.find((button) => button.id.startsWith("ll-next-")) || shown[0];
    if (target && target !== held) target.focus({ preventScroll: true });
    // no Next drawn yet, or one that took no focus (a lesson still opening: closed, its buttons take none): again
    if ((!target || (target !== held && document.activeElement !== target)) && tries-- > 0) setTimeout(settle, 50);
  };
  settle();
}
"""
# A download button, hidden, clicked once the server has written its file (Gradio's download needs a file first)
CLICK_DOWNLOAD = """
(file) => { if (file) document.querySelector("#%s")?.click(); }
"""
# The slide's HTML, drawn into a PNG in the browser by assets/png.js with the export's own CSS
DRAW_PNG = f"""
async (html, step) => {{
  if (!html) return;
  {png_js()}
  await slidePng(html, {json.dumps(page_css())}, `lookahead-step-${{step}}.png`);
}}
"""
