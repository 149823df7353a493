"""The page's own JavaScript, run in the visitor's browser: keys, links, the lesson's outline, downloads, PNGs.

Each is a string Gradio runs as an event's `js` (or the page's, for KEYBOARD); none reaches the server.
"""

from __future__ import annotations

import json

from visuals.export import page_css, png_js

KEYBOARD = """
() => {
  const keys = {ArrowLeft: "ll-back", ArrowRight: "ll-forward", " ": "ll-play"};
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || !(event.key in keys)) return;
    if (event.target.closest && event.target.closest("input, textarea, select, [contenteditable]")) return;
    const button = document.getElementById(keys[event.key]);
    if (button) { event.preventDefault(); button.click(); }
  });
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
  history.replaceState(null, "", link.href);
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(link.href).catch(() => {});
}
"""

# The lesson's panel: outlined, and scrolled to the middle of the screen
HIGHLIGHT = """
(name) => {
  document.querySelectorAll(".ll-lit").forEach((element) => element.classList.remove("ll-lit"));
  const target = name && document.getElementById("ll-" + name);
  if (!target) return;
  const card = target.closest(".ll-card") || target;
  card.classList.add("ll-lit");
  card.scrollIntoView({ behavior: "smooth", block: "center" });
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
